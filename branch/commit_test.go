package branch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
)

// TestCommitDoesNotBlockWriters holds a commit between sealing its staging
// generation and folding it, and meanwhile writes, reads and deletes on the
// same branch: all of it completes, and after the commit the writes made
// during it are still staged (not lost, not folded into the commit).
func TestCommitDoesNotBlockWriters(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "busy", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		put(t, s, "busy", "main", fmt.Sprintf("before/%02d", i), "b")
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	branch.SetFoldHook(s, func() { close(paused); <-resume })
	done := make(chan error, 1)
	go func() {
		_, err := s.Commit(ctx, "busy", "main", branch.CommitOptions{Message: "slow"})
		done <- err
	}()
	<-paused
	// The commit is in the middle of its work: writers go on.
	for i := 0; i < 20; i++ {
		put(t, s, "busy", "main", fmt.Sprintf("during/%02d", i), "d")
	}
	if _, err := s.Delete(ctx, "busy", "main", "before/00", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, "busy", "main", "before/01"); err != nil || e.ETag != "b" {
		t.Fatalf("read of sealed staging during commit: %v", err)
	}
	if got := len(keys(t, s, "busy", "main")); got != 69 {
		t.Fatalf("listing during commit sees %d keys, want 69", got)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := len(keys(t, s, "busy", "main")); got != 69 {
		t.Fatalf("after the commit %d keys, want 69", got)
	}
	var staged []string
	s.Changes(ctx, "busy", "main", "", func(c branch.Change) error { staged = append(staged, c.Key); return nil })
	// The commit holds "before/*"; the writes made during it are staged on
	// top, so a fork of the new head has 50 keys and no "during/".
	if _, err := s.CreateBranch(ctx, "busy", "fork", "main"); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, "busy", "fork"); len(got) != 50 || got[0] != "before/00" {
		t.Fatalf("the commit folded writes made during it: %d keys", len(got))
	}
}
