package branch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentnas/nas/branch"
)

// TestListAt: a listing At a commit shows that commit's tree without
// staged changes; a commit outside the branch's history is NoSuchVersion.
func TestListAt(t *testing.T) {
	s, ctx := mergeSetup(t)
	old, err := s.ResolveRef(ctx, "merge", "run")
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "merge", "run", "e", "run-e")
	commitRun(t, s, "run")
	put(t, s, "merge", "run", "f", "staged")
	res, err := s.List(ctx, "merge", "run", branch.ListOptions{MaxKeys: 100, At: old})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range res.Objects {
		got = append(got, o.Key)
	}
	if len(got) != 4 || got[3] != "d" {
		t.Errorf("listing at the fork point: %v", got)
	}
	put(t, s, "merge", "main", "m", "main only")
	mainHead := commitRun(t, s, "main")
	if _, err := s.List(context.Background(), "merge", "run", branch.ListOptions{MaxKeys: 1, At: mainHead}); !errors.Is(err, branch.ErrNoSuchVersion) {
		t.Errorf("listing at a commit the branch never saw: %v", err)
	}
}
