package branch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
)

// touched follows the journal from cur and returns the answer.
func touched(t *testing.T, s *branch.Service, br, cur string) *branch.Touched {
	t.Helper()
	out, err := s.TouchedSince(context.Background(), "data", br, cur)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// names is the keys of t.
func names(t *branch.Touched) []string {
	var out []string
	for _, k := range t.Keys {
		out = append(out, k.Key)
	}
	return out
}

func TestTouchedSinceNamesWhatChanged(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	first := touched(t, s, "main", "")
	if !first.All || !first.Coherent {
		t.Fatalf("a first call: %+v, want All and Coherent", first)
	}
	if again := touched(t, s, "main", first.Cursor); again.All || len(again.Keys) != 0 {
		t.Fatalf("nothing happened, yet %+v", again)
	}
	put(t, s, "data", "main", "a", "1")
	put(t, s, "data", "main", "b/c", "2")
	last := put(t, s, "data", "main", "a", "3")
	got := touched(t, s, "main", first.Cursor)
	if got.Keys[0].VersionID != last.VersionID {
		t.Fatalf("a's version %q, want the latest, %q", got.Keys[0].VersionID, last.VersionID)
	}
	if got.All || fmt.Sprint(names(got)) != "[a b/c]" {
		t.Fatalf("after three puts: %+v", got)
	}
	if _, err := s.Delete(ctx, "data", "main", "b/c", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	got = touched(t, s, "main", got.Cursor)
	if got.All || fmt.Sprint(names(got)) != "[b/c]" {
		t.Fatalf("after a delete: %+v", got)
	}
	cur := got.Cursor
	if _, err := s.CreateBranch(ctx, "data", "run", "main"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "data", "run", "elsewhere", "4")
	if other := touched(t, s, "main", cur); other.All || len(other.Keys) != 0 {
		t.Fatalf("another branch's writes reach main's journal: %+v", other)
	}
	if _, err := s.Commit(ctx, "data", "main", branch.CommitOptions{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if c := touched(t, s, "main", cur); c.All || len(c.Keys) != 0 {
		t.Fatalf("a commit shows what staging showed, yet %+v", c)
	}
	if _, err := s.Commit(ctx, "data", "run", branch.CommitOptions{Message: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Merge(ctx, "data", "run", "main", branch.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := touched(t, s, "main", cur); !c.All {
		t.Fatalf("a merge moved the head, yet %+v", c)
	}
	// A cursor of another branch, or one made up, is not followed.
	run := touched(t, s, "run", "")
	for _, bad := range []string{run.Cursor, "garbage", cur[:17] + "00" + cur[19:]} {
		if c := touched(t, s, "main", bad); !c.All {
			t.Fatalf("cursor %q followed: %+v", bad, c)
		}
	}
}

func TestTouchedSinceIsNotCoherentAcrossGateways(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	s.SetLocker(noLocker{})
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := touched(t, s, "main", ""); c.Coherent {
		t.Fatal("with several gateways the journal hears only its own writes, yet says it is coherent")
	}
}

// noLocker is a Locker that never contends (one gateway playing several).
type noLocker struct{}

func (noLocker) Lock(context.Context, string) (func(), error) { return func() {}, nil }
