package cas_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
)

// TestSweepScrubsDeadChunksOfLiveSegments: a swept chunk's bytes leave
// the disk even when its segment stays for a live chunk beside it.
func TestSweepScrubsDeadChunksOfLiveSegments(t *testing.T) {
	s, db, dir := castest.Open(t)
	ctx := context.Background()
	data := randBytes(11, 9<<20)
	refs, _ := ingest(t, s, db, data)
	if len(refs) < 3 {
		t.Fatalf("want several chunks in one segment, got %d", len(refs))
	}
	keep := refs[0].Hash
	c := s.BeginCycle()
	st, err := c.Sweep(ctx, func(h chunk.Hash) bool { return h == keep })
	c.End()
	if err != nil {
		t.Fatal(err)
	}
	if st.Segments != 0 || st.ScrubbedBytes == 0 || st.Chunks != len(refs)-1 {
		t.Fatalf("want the segment kept and %d chunks scrubbed: %+v", len(refs)-1, st)
	}
	if got := readAll(t, s, refs[:1]); !bytes.Equal(got, data[:refs[0].Size]) {
		t.Fatal("the live chunk beside scrubbed ones no longer reads")
	}
	off := int64(refs[0].Size)
	for _, r := range refs[1:] {
		probe := data[off+int64(r.Size)/2 : off+int64(r.Size)/2+64]
		if p := castest.FindOnDisk(t, dir, probe); p != "" {
			t.Fatalf("bytes of a swept chunk are still in %s", p)
		}
		off += int64(r.Size)
	}
	if _, err := s.Check(ctx, func(p cas.Problem) { t.Error(p) }); err != nil {
		t.Fatal(err)
	}
}
