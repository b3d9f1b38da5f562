package branch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// commitRun commits the run branch of mergeSetup's repository.
func commitRun(t *testing.T, s *branch.Service, br string) manifest.CommitID {
	t.Helper()
	id, err := s.Commit(context.Background(), "merge", br, branch.CommitOptions{Message: "change on " + br})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRevertAndCherryPick: a revert undoes a commit's adds, modifies and
// deletes; a cherry-pick replays them on another branch; both are
// single-parent commits naming the commit they replay.
func TestRevertAndCherryPick(t *testing.T) {
	s, ctx := mergeSetup(t)
	put(t, s, "merge", "run", "a", "run-a")
	put(t, s, "merge", "run", "new", "run-new")
	s.Delete(ctx, "merge", "run", "b", branch.Condition{})
	picked := commitRun(t, s, "run")
	want := map[string]string{"a": etag(t, s, "run", "a"), "new": etag(t, s, "run", "new"), "b": "-"}

	res, err := s.CherryPick(ctx, "merge", "main", picked.String(), branch.PickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 3 {
		t.Errorf("cherry-pick applied %d, want 3", res.Applied)
	}
	for k, e := range want {
		if got := etag(t, s, "main", k); got != e {
			t.Errorf("after cherry-pick main/%s = %s, want %s", k, got, e)
		}
	}
	c, err := s.Manifest().GetCommit(ctx, res.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Parents) != 1 || len(c.Extra) != 1 || c.Extra[0].Name != branch.PickedFromName || c.Extra[0].Value != picked.String() {
		t.Errorf("cherry-pick commit parents %v extra %v", c.Parents, c.Extra)
	}

	if _, err := s.Revert(ctx, "merge", "run", picked.String(), branch.PickOptions{}); err != nil {
		t.Fatal(err)
	}
	for k, src := range map[string]string{"a": "base-a", "b": "base-b"} {
		if got, want := etag(t, s, "run", k), src; got != want {
			t.Errorf("after revert run/%s = %s, want %s", k, got, want)
		}
	}
	if got := etag(t, s, "run", "new"); got != "-" {
		t.Errorf("after revert run/new = %s, want absent", got)
	}
	if _, err := s.Revert(ctx, "merge", "run", picked.String(), branch.PickOptions{}); !errors.Is(err, branch.ErrNothingToCommit) {
		t.Errorf("reverting twice: %v, want ErrNothingToCommit", err)
	}
}

// TestPickConflictsAndRefusals: a later change to the same key is a
// conflict listing it; a protected branch, staged changes and a refusing
// Allow stop it with nothing changed.
func TestPickConflictsAndRefusals(t *testing.T) {
	s, ctx := mergeSetup(t)
	put(t, s, "merge", "run", "a", "run-a")
	put(t, s, "merge", "run", "d", "run-d")
	picked := commitRun(t, s, "run")
	put(t, s, "merge", "run", "a", "later-a")
	later := commitRun(t, s, "run")

	res, err := s.Revert(ctx, "merge", "run", picked.String(), branch.PickOptions{})
	if !errors.Is(err, branch.ErrMergeConflict) || len(res.Conflicts) != 1 || res.Conflicts[0].Key != "a" {
		t.Fatalf("revert under a later change: %v %+v", err, res)
	}
	if c := res.Conflicts[0]; c.Ours == nil || c.Theirs == nil || c.Ours.ETag != "later-a" || c.Theirs.ETag != "base-a" {
		t.Errorf("conflict sides %+v", c)
	}
	if h, _ := s.GetBranch(ctx, "merge", "run"); h.Head != later {
		t.Error("a conflicting revert moved the branch")
	}

	put(t, s, "merge", "main", "d", "main-d")
	commitRun(t, s, "main")
	if _, err := s.CherryPick(ctx, "merge", "main", picked.String(), branch.PickOptions{}); !errors.Is(err, branch.ErrMergeConflict) {
		t.Errorf("cherry-pick onto a different d: %v", err)
	}

	refuse := errors.New("not yours")
	o := branch.PickOptions{Allow: func(string, bool, []manifest.CommitID) error { return refuse }}
	if _, err := s.Revert(ctx, "merge", "run", later.String(), o); !errors.Is(err, refuse) {
		t.Errorf("Allow refusing: %v", err)
	}
	put(t, s, "merge", "run", "x", "staged")
	if _, err := s.Revert(ctx, "merge", "run", later.String(), branch.PickOptions{}); !errors.Is(err, branch.ErrConflict) {
		t.Errorf("with staged changes: %v", err)
	}
	commitRun(t, s, "run")
	if err := s.SetProtected(ctx, "merge", "run", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revert(ctx, "merge", "run", later.String(), branch.PickOptions{}); !errors.Is(err, branch.ErrProtected) {
		t.Errorf("onto a protected branch: %v", err)
	}
}
