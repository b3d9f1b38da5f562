package branch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentnas/nas/branch"
)

func mergeSetup(t *testing.T) (*branch.Service, context.Context) {
	t.Helper()
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "merge", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, s, "merge", "main", k, "base-"+k)
	}
	if _, err := s.Commit(ctx, "merge", "main", branch.CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "merge", "run", "main"); err != nil {
		t.Fatal(err)
	}
	return s, ctx
}

func etag(t *testing.T, s *branch.Service, br, key string) string {
	t.Helper()
	e, err := s.Get(context.Background(), "merge", br, key)
	if errors.Is(err, branch.ErrNoSuchKey) {
		return "-"
	}
	if err != nil {
		t.Fatal(err)
	}
	return e.ETag
}

func TestMergeClean(t *testing.T) {
	s, ctx := mergeSetup(t)
	put(t, s, "merge", "run", "a", "run-a")     // modified on the run
	put(t, s, "merge", "run", "new", "run-new") // added
	s.Delete(ctx, "merge", "run", "b", branch.Condition{})
	if _, err := s.Commit(ctx, "merge", "run", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "merge", "main", "c", "main-c") // main moved on elsewhere
	if _, err := s.Commit(ctx, "merge", "main", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{CommitOptions: branch.CommitOptions{Message: "merge run", Run: "run_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.IsZero() || res.Applied != 3 || len(res.Deleted) != 1 || res.Deleted[0].Key != "b" {
		t.Fatalf("merge result: %+v", res)
	}
	got := strings.Join([]string{etag(t, s, "main", "a"), etag(t, s, "main", "b"), etag(t, s, "main", "c"), etag(t, s, "main", "new")}, " ")
	if got != "run-a - main-c run-new" {
		t.Fatalf("main after merge: %s", got)
	}
	c, _ := s.Manifest().GetCommit(ctx, res.Commit)
	if len(c.Parents) != 2 || c.Run != "run_1" {
		t.Fatalf("merge commit: %+v", c)
	}
	// Merging again is a no-op.
	again, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{})
	if err != nil || !again.UpToDate {
		t.Fatalf("second merge: %+v %v", again, err)
	}
	// Versions written on the run are now seen by main.
	e, _ := s.Get(ctx, "merge", "main", "new")
	if _, _, err := s.GetVersion(ctx, "merge", "main", "new", e.VersionID); err != nil {
		t.Fatalf("merged version not visible on main: %v", err)
	}
}

func TestMergeConflicts(t *testing.T) {
	s, ctx := mergeSetup(t)
	put(t, s, "merge", "run", "a", "run-a")
	put(t, s, "merge", "run", "b", "run-b")
	put(t, s, "merge", "run", "d", "same")
	s.Commit(ctx, "merge", "run", branch.CommitOptions{})
	put(t, s, "merge", "main", "a", "main-a") // both modified
	s.Delete(ctx, "merge", "main", "b", branch.Condition{})
	put(t, s, "merge", "main", "d", "same") // both to the same content: fine
	s.Commit(ctx, "merge", "main", branch.CommitOptions{})
	headBefore, _ := s.ResolveRef(ctx, "merge", "main")
	res, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{})
	if !errors.Is(err, branch.ErrMergeConflict) {
		t.Fatalf("conflicting merge: %v", err)
	}
	keys := []string{}
	for _, c := range res.Conflicts {
		keys = append(keys, c.Key)
	}
	if strings.Join(keys, ",") != "a,b" || res.Conflicts[0].Ours.ETag != "main-a" || res.Conflicts[0].Theirs.ETag != "run-a" || res.Conflicts[1].Ours != nil {
		t.Fatalf("conflicts: %+v", res.Conflicts)
	}
	if head, _ := s.ResolveRef(ctx, "merge", "main"); head != headBefore {
		t.Fatal("a conflicting merge changed the target")
	}
	// Resolve per pattern.
	_, err = s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{Ours: []string{"a"}, Theirs: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := etag(t, s, "main", "a") + " " + etag(t, s, "main", "b"); got != "main-a run-b" {
		t.Fatalf("resolved: %s", got)
	}
}

func TestMergeGuards(t *testing.T) {
	s, ctx := mergeSetup(t)
	put(t, s, "merge", "run", "x", "1")
	s.Commit(ctx, "merge", "run", branch.CommitOptions{})
	s.SetProtected(ctx, "merge", "main", true)
	if _, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{}); !errors.Is(err, branch.ErrProtected) {
		t.Fatalf("merge into protected without approval: %v", err)
	}
	source, _ := s.ResolveRef(ctx, "merge", "run")
	target, _ := s.ResolveRef(ctx, "merge", "main")
	// An approval bound to heads that moved is void.
	put(t, s, "merge", "run", "y", "2")
	s.Commit(ctx, "merge", "run", branch.CommitOptions{})
	if _, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{AllowProtected: true, ExpectSource: source, ExpectTarget: target}); !errors.Is(err, branch.ErrConflict) {
		t.Fatalf("merge bound to an old head: %v", err)
	}
	// Staged changes on the target block a merge.
	s.SetProtected(ctx, "merge", "main", false)
	put(t, s, "merge", "main", "z", "3")
	if _, err := s.Merge(ctx, "merge", "run", "main", branch.MergeOptions{}); !errors.Is(err, branch.ErrConflict) {
		t.Fatalf("merge onto staged changes: %v", err)
	}
}

// TestConcurrentMerges: two merges into one branch at once both land (one
// after the other), or one reports the other moved the target; neither
// loses the other's changes.
func TestConcurrentMerges(t *testing.T) {
	s, ctx := mergeSetup(t)
	if _, err := s.CreateBranch(ctx, "merge", "run2", "main"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "merge", "run", "r1", "1")
	put(t, s, "merge", "run2", "r2", "2")
	s.Commit(ctx, "merge", "run", branch.CommitOptions{})
	s.Commit(ctx, "merge", "run2", branch.CommitOptions{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, from := range []string{"run", "run2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Merge(ctx, "merge", from, "main", branch.MergeOptions{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if etag(t, s, "main", "r1") != "1" || etag(t, s, "main", "r2") != "2" {
		t.Fatal("a concurrent merge lost the other's changes")
	}
}
