package branch_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// TestDeleteRepoLeavesNothing: deleting a repository removes every record
// it held under its ID (branches, staging and its writers, versions,
// uploads, checkpoints, trash, configuration documents), not only some
// of them.
func TestDeleteRepoLeavesNothing(t *testing.T) {
	ctx := context.Background()
	chunks, db, _ := castest.Open(t)
	s := branch.New(db, chunks, nil)
	if _, err := s.CreateRepo(ctx, "gone", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &manifest.Entry{Size: 1, ETag: "e"}
	if _, err := s.Put(ctx, "gone", "main", "k", e, branch.Condition{By: branch.Writer{Lease: "l1", Run: "r1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, "gone", "main", branch.CommitOptions{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCheckpoint(ctx, "gone", "main", "cp", ""); err != nil {
		t.Fatal(err)
	}
	// A merge into protected main that deletes k leaves a trash entry.
	if _, err := s.CreateBranch(ctx, "gone", "run", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "gone", "run", "k", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, "gone", "run", branch.CommitOptions{Message: "delete"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProtected(ctx, "gone", "main", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Merge(ctx, "gone", "run", "main", branch.MergeOptions{AllowProtected: true}); err != nil {
		t.Fatal(err)
	}
	if tr, err := s.ListTrash(ctx, "gone", ""); err != nil || len(tr) != 1 {
		t.Fatalf("trash: %v, %v", tr, err)
	}
	if err := s.SetRepoConfig(ctx, "gone", "tagging", []byte("<Tagging/>")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRepo(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, sp := range keyspace.All {
		owned[sp.Prefix] = sp.Owner == "branch"
	}
	err := db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Range{}, func(k, _ []byte) error {
			for p, mine := range owned {
				if mine && bytes.HasPrefix(k, []byte(p)) {
					t.Errorf("after DeleteRepo, key %q remains", k)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
