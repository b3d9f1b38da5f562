package cas

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/agentnas/nas/chunk"
)

// storedChunk stores 3 MiB of random bytes and returns the store and its
// first chunk with its record.
func storedChunk(t *testing.T) (*Store, chunk.Ref, record) {
	t.Helper()
	s, db := testStore(t, Options{})
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	ctx := context.Background()
	u := s.NewUpload()
	defer u.Close()
	refs, _, err := u.Ingest(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, u.Record); err != nil {
		t.Fatal(err)
	}
	rec, err := s.lookup(ctx, refs[0].Hash)
	if err != nil || rec.kind != kindSegment {
		t.Fatalf("first chunk: %+v, %v", rec, err)
	}
	return s, refs[0], rec
}

func readWhole(s *Store, ref chunk.Ref) error {
	return s.ReadRefs(context.Background(), &bytes.Buffer{}, []chunk.Ref{ref}, 0, int64(ref.Size))
}

// TestVerifiedSpareAndItsLimits reads a chunk (hashed, remembered), then
// corrupts it through the file system: the next read hashes it again,
// because the file's change time moved, and fails. A remembered
// verification of the corrupt version (what an eviction and a read-back
// from a rotten disk would leave) is trusted while fresh, which shows the
// spared path is taken, and no longer once it is older than verifiedFor.
func TestVerifiedSpareAndItsLimits(t *testing.T) {
	s, ref, rec := storedChunk(t)
	if err := readWhole(s, ref); err != nil {
		t.Fatal(err)
	}
	seg := s.segPath(rec.seg)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctime, ok := changeTime(f)
	if !ok {
		t.Skip("no change time here: nothing is spared")
	}
	if !s.verified.fresh(ref.Hash, rec, ctime, time.Now()) {
		t.Fatal("a verified read was not remembered")
	}
	time.Sleep(10 * time.Millisecond) // a change time with a coarse clock still moves
	if _, err := f.WriteAt([]byte{0xff ^ readByte(t, f, rec.off+100)}, rec.off+100); err != nil {
		t.Fatal(err)
	}
	if err := readWhole(s, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupted through the file system after a verification: got %v, want ErrCorrupt", err)
	}
	ctime, _ = changeTime(f)
	if readCached(f, make([]byte, rec.size), rec.off) != int(rec.size) {
		t.Skip("the page cache does not answer RWF_NOWAIT reads here: nothing is spared")
	}
	s.verified.add(ref.Hash, rec, ctime, time.Now())
	if err := readWhole(s, ref); err != nil {
		t.Fatalf("a fresh verification of the cached pages should spare the hash: %v", err)
	}
	s.verified.add(ref.Hash, rec, ctime, time.Now().Add(-verifiedFor))
	if err := readWhole(s, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("an old verification spared the hash: got %v, want ErrCorrupt", err)
	}
}

func readByte(t *testing.T, f *os.File, off int64) byte {
	t.Helper()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b[0]
}

func TestVerifiedSetPlaceAndBound(t *testing.T) {
	v := newVerifiedSet()
	now := time.Now()
	h := chunk.Hash{1}
	rec := record{seg: 7, off: 4096}
	v.add(h, rec, 42, now)
	for _, tc := range []struct {
		name  string
		rec   record
		ctime int64
		at    time.Time
		want  bool
	}{
		{"same place, same file, now", rec, 42, now, true},
		{"moved to another segment", record{seg: 8, off: 4096}, 42, now, false},
		{"moved within the segment", record{seg: 7, off: 0}, 42, now, false},
		{"file changed", rec, 43, now, false},
		{"too old", rec, 42, now.Add(verifiedFor), false},
	} {
		if got := v.fresh(h, tc.rec, tc.ctime, tc.at); got != tc.want {
			t.Errorf("%s: fresh %v, want %v", tc.name, got, tc.want)
		}
	}
	for i := range verifiedMax + 10 {
		v.add(chunk.Hash{byte(i), byte(i >> 8), 9}, rec, 42, now)
	}
	if len(v.m) > verifiedMax {
		t.Fatalf("%d entries, bound %d", len(v.m), verifiedMax)
	}
}
