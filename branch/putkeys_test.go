package branch_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// countingRecorder counts the transactions that wrote it.
type countingRecorder struct{ n int }

func (c *countingRecorder) Record(kv.Txn) error { c.n++; return nil }

// TestPutKeys: one call stages many keys as Put does each; an item
// refused on its own (a bad key, a failed precondition, the quota) leaves
// the others staged, each with its own version; a call in which every
// item fails writes nothing, not even the records it shares.
func TestPutKeys(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "pks", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	three := int64(3)
	if _, err := s.SetLimits(ctx, "pks", "main", branch.LimitsUpdate{QuotaObjects: &three}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "pks", "main", "taken", "e-taken")
	item := func(key string, cond branch.Condition) branch.PutItem {
		return branch.PutItem{Key: key, Entry: &manifest.Entry{Size: 1, ETag: "e-" + key}, Cond: cond}
	}
	shared := &countingRecorder{}
	rs := s.PutKeys(ctx, "pks", "main", []branch.PutItem{
		item("a", branch.Condition{}),
		item("", branch.Condition{}),
		item("taken", branch.Condition{IfNoneMatch: "*"}),
		item("b", branch.Condition{}),
		item("c", branch.Condition{}), // the fourth object: over the quota
	}, shared)
	if rs[0].Err != nil || rs[3].Err != nil || rs[0].Entry.VersionID == rs[3].Entry.VersionID {
		t.Fatalf("a and b: %+v, %+v; want each staged with its own version", rs[0], rs[3])
	}
	if !errors.Is(rs[1].Err, branch.ErrInvalid) || !errors.Is(rs[2].Err, branch.ErrPrecondition) {
		t.Errorf("the empty key: %v, want ErrInvalid; If-None-Match on a taken key: %v, want ErrPreconditionFailed", rs[1].Err, rs[2].Err)
	}
	if !errors.Is(rs[4].Err, branch.ErrQuotaExceeded) {
		t.Errorf("past the quota: %v, want ErrQuotaExceeded", rs[4].Err)
	}
	if got, want := keys(t, s, "pks", "main"), []string{"a", "b", "taken"}; !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	if shared.n != 1 {
		t.Fatalf("the shared record was written %d times, want once", shared.n)
	}
	none := &countingRecorder{}
	rs = s.PutKeys(ctx, "pks", "main", []branch.PutItem{item("taken", branch.Condition{IfNoneMatch: "*"})}, none)
	if !errors.Is(rs[0].Err, branch.ErrPrecondition) || none.n != 0 {
		t.Fatalf("all refused: %v, shared record written %d times; want the refusal and none", rs[0].Err, none.n)
	}
	if err := s.SetProtected(ctx, "pks", "main", true); err != nil {
		t.Fatal(err)
	}
	if rs := s.PutKeys(ctx, "pks", "main", []branch.PutItem{item("d", branch.Condition{})}); !errors.Is(rs[0].Err, branch.ErrProtected) {
		t.Fatalf("PutKeys on a protected branch: %v, want ErrProtected", rs[0].Err)
	}
}
