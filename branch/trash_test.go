package branch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// mergeDeleting sets up a protected main holding n keys and merges into it
// a branch that deleted them all.
func mergeDeleting(t *testing.T, s *branch.Service, repo string, n int) *branch.MergeResult {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateRepo(ctx, repo, branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	var ies []branch.ImportEntry
	for i := range n {
		ies = append(ies, branch.ImportEntry{Key: fmt.Sprintf("k/%05d", i), Entry: &manifest.Entry{Size: 1, ETag: fmt.Sprint(i)}})
	}
	if err := branch.StageBulk(ctx, s, repo, "main", ies); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, repo, "main", branch.CommitOptions{Message: "fill"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, repo, "run", "main"); err != nil {
		t.Fatal(err)
	}
	for i := range ies {
		ies[i].Entry, ies[i].Delete = nil, true
	}
	if err := branch.StageBulk(ctx, s, repo, "run", ies); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, repo, "run", branch.CommitOptions{Message: "delete all"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProtected(ctx, repo, "main", true); err != nil {
		t.Fatal(err)
	}
	res, err := s.Merge(ctx, repo, "run", "main", branch.MergeOptions{AllowProtected: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkTrash(t *testing.T, s *branch.Service, repo string, n int, commit manifest.CommitID) []branch.TrashEntry {
	t.Helper()
	got, err := s.ListTrash(context.Background(), repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("trash holds %d entries, want %d", len(got), n)
	}
	for _, te := range got {
		if te.Commit != commit.String() || te.Branch != "main" {
			t.Fatalf("trash entry %+v: want commit %s on main", te, commit)
		}
	}
	return got
}

// TestMergeWritesTrash: a merge into a protected branch leaves the trash
// of what it deleted as it returns, small or large (past what one
// transaction holds).
func TestMergeWritesTrash(t *testing.T) {
	for _, n := range []int{3, branch.TrashInline*2 + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newService(t)
			res := mergeDeleting(t, s, "trash", n)
			if len(res.Deleted) != n {
				t.Fatalf("merge deleted %d, want %d", len(res.Deleted), n)
			}
			checkTrash(t, s, "trash", n, res.Commit)
		})
	}
}

// TestSettleTrash: after a crash between a large merge's head swap and its
// trash entries, SettleTrash (and so the next collection) writes the same
// entries from the merge commit.
func TestSettleTrash(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	n := branch.TrashInline + 10
	res := mergeDeleting(t, s, "crash", n)
	before := checkTrash(t, s, "crash", n, res.Commit)
	if err := branch.OweTrash(ctx, s, "crash", "main", res.Commit, before[0].DeletedAt); err != nil {
		t.Fatal(err)
	}
	checkTrash(t, s, "crash", 0, res.Commit)
	if _, err := s.Collect(ctx, branch.GCOptions{}); err != nil {
		t.Fatal(err)
	}
	after := checkTrash(t, s, "crash", n, res.Commit)
	for i := range before {
		if before[i].Key != after[i].Key || !before[i].DeletedAt.Equal(after[i].DeletedAt) || string(before[i].EntryB) != string(after[i].EntryB) {
			t.Fatalf("settled entry %d = %+v, want %+v", i, after[i], before[i])
		}
	}
	if err := s.SettleTrash(ctx); err != nil { // nothing left to do
		t.Fatal(err)
	}
	checkTrash(t, s, "crash", n, res.Commit)
}

// TestTrashExpires: a collection keeps the trash for TrashRetention and
// drops what is older.
func TestTrashExpires(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	res := mergeDeleting(t, s, "expiry", 3)
	st, err := s.Collect(ctx, branch.GCOptions{})
	if err != nil || st.Trash != 0 {
		t.Fatalf("collection now: %+v %v", st, err)
	}
	checkTrash(t, s, "expiry", 3, res.Commit)
	later := func() time.Time { return time.Now().Add(branch.TrashRetention + time.Hour) }
	if st, err = s.Collect(ctx, branch.GCOptions{Now: later}); err != nil || st.Trash != 3 {
		t.Fatalf("collection after the retention: %+v %v", st, err)
	}
	checkTrash(t, s, "expiry", 0, res.Commit)
}
