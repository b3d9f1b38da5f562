package branch_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
)

// TestRestoreDeletedBranch: a deleted branch is listed, survives a
// collection that keeps no history (its head is pinned), and comes back
// at its head with its bytes; a second restore, and a restore over a live
// name, are refused; --as restores under another name.
func TestRestoreDeletedBranch(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "rdel", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "rdel", "exp", "main"); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("only on exp "), 50000)
	putData(t, s, "rdel", "exp", "big", data)
	head, err := s.Commit(ctx, "rdel", "exp", branch.CommitOptions{Message: "exp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBranchBy(ctx, "rdel", "exp", "owner-key"); err != nil {
		t.Fatal(err)
	}
	ds, err := s.ListDeleted(ctx, "rdel")
	if err != nil || len(ds) != 1 || ds[0].Name != "exp" || ds[0].Head != head || ds[0].DeletedBy != "owner-key" {
		t.Fatalf("ListDeleted: %+v %v", ds, err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Collect(ctx, branch.GCOptions{Retention: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	fsck(t, s) // the deleted branch's history is checked, and whole
	if _, err := s.CreateBranch(ctx, "rdel", "exp", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RestoreBranch(ctx, "rdel", "exp", ""); !errors.Is(err, branch.ErrBranchExists) {
		t.Fatalf("restore over a live branch: %v", err)
	}
	b, err := s.RestoreBranch(ctx, "rdel", "exp", "exp-back")
	if err != nil || b.Head != head {
		t.Fatalf("restore --as: %+v %v", b, err)
	}
	e, err := s.Get(ctx, "rdel", "exp-back", "big")
	if err != nil {
		t.Fatal(err)
	}
	if got := readData(t, s, e); !bytes.Equal(got, data) {
		t.Fatal("restored bytes differ")
	}
	fsck(t, s)
	if _, err := s.RestoreBranch(ctx, "rdel", "exp", "again"); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Errorf("restoring twice: %v", err)
	}
}

// TestDeletedBranchExpires: after the retention window a deleted branch
// is neither listed nor restorable, and a collection drops its record.
func TestDeletedBranchExpires(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	s.SetDeletedRetention(20 * time.Millisecond)
	if _, err := s.CreateRepo(ctx, "rdel", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "rdel", "gone", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBranch(ctx, "rdel", "gone"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if ds, _ := s.ListDeleted(ctx, "rdel"); len(ds) != 0 {
		t.Errorf("expired record listed: %+v", ds)
	}
	if _, err := s.RestoreBranch(ctx, "rdel", "gone", ""); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Errorf("restore after the window: %v", err)
	}
	st, err := s.Collect(ctx, branch.GCOptions{})
	if err != nil || st.DeletedBranches != 1 {
		t.Errorf("collection dropped %d deleted-branch records (%v), want 1", st.DeletedBranches, err)
	}
}

// TestDiscardBranchKeepsNoRecord: undoing a branch's creation leaves
// nothing to restore.
func TestDiscardBranchKeepsNoRecord(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "rdis", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "rdis", "fork", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardBranch(ctx, "rdis", "fork"); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.ListDeleted(ctx, "rdis"); err != nil || len(ds) != 0 {
		t.Fatalf("ListDeleted after a discard: %+v %v", ds, err)
	}
	if _, err := s.GetBranch(ctx, "rdis", "fork"); !errors.Is(err, branch.ErrNotFound) {
		t.Fatalf("discarded branch: %v", err)
	}
}
