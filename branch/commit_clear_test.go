package branch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// TestCommitClearsLargeStaging commits more staged changes than one
// clearing batch holds (1,000) and checks that every staging record is gone
// and every change is in the commit: clearing resumes after each batch's
// last key, and must neither skip nor leave any.
func TestCommitClearsLargeStaging(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "big", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 3500
	var entries []branch.ImportEntry
	for i := 0; i < n; i++ {
		entries = append(entries, branch.ImportEntry{Key: fmt.Sprintf("k/%05d", i), Entry: &manifest.Entry{Size: 1, ETag: fmt.Sprintf("%032x", i)}})
	}
	if err := branch.StageBulk(ctx, s, "big", "main", entries); err != nil {
		t.Fatal(err)
	}
	if got, err := branch.StagedKeys(ctx, s, "big", "main"); err != nil || got != n {
		t.Fatalf("staged %d records (%v), want %d", got, err, n)
	}
	from, err := s.ResolveRef(ctx, "big", "main")
	if err != nil {
		t.Fatal(err)
	}
	to, err := s.Commit(ctx, "big", "main", branch.CommitOptions{Message: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := branch.StagedKeys(ctx, s, "big", "main"); err != nil || got != 0 {
		t.Fatalf("%d staging records left after the commit (%v)", got, err)
	}
	seen := 0
	if err := s.Diff(ctx, "big", from.String(), to.String(), "", nil, func(c branch.Change) error {
		if want := fmt.Sprintf("k/%05d", seen); c.Key != want {
			return fmt.Errorf("change %d is %s, want %s", seen, c.Key, want)
		}
		seen++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("the commit holds %d changes, want %d", seen, n)
	}
}
