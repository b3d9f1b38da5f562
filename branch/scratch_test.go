package branch_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// TestExpireScratchBatches sweeps more due scratch files than one batch
// holds, beside a record that does not decode and a file rewritten
// since: every due file goes, the bad record is dropped, the rewritten
// file stays, and a second sweep finds nothing.
func TestExpireScratchBatches(t *testing.T) {
	ctx := context.Background()
	chunks, db, _ := castest.Open(t)
	s := branch.New(db, chunks, nil)
	s.SetScratchTTL(time.Nanosecond)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 1100
	for i := range n {
		e := &manifest.Entry{Size: 1, ETag: "e", Retention: manifest.RetentionScratch}
		if _, err := s.Put(ctx, "data", "main", fmt.Sprintf("tmp/%04d", i), e, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, "data", "main", "tmp/0007", "kept") // rewritten as a normal file
	bad := binary.BigEndian.AppendUint64([]byte(keyspace.Scratch), 1)
	if err := db.Update(ctx, func(txn kv.Txn) error { return txn.Set(append(bad, 'x'), []byte{0xff}) }); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	got, err := s.ExpireScratch(ctx, now, nil)
	if err != nil || got != n-1 {
		t.Fatalf("swept %d (%v), want %d", got, err, n-1)
	}
	if left := keys(t, s, "data", "main"); fmt.Sprint(left) != "[tmp/0007]" {
		t.Fatalf("left after the sweep: %v", left)
	}
	if got, err := s.ExpireScratch(ctx, now, nil); err != nil || got != 0 {
		t.Fatalf("second sweep: %d (%v)", got, err)
	}
	err = db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Range{Start: []byte(keyspace.Scratch), End: []byte(keyspace.Scratch + "\xff")}, func(k, _ []byte) error {
			return fmt.Errorf("record %q left", k)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
