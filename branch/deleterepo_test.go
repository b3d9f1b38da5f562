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
// uploads, checkpoints, trash), not only some of them.
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
	id, err := s.Commit(ctx, "gone", "main", branch.CommitOptions{Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCheckpoint(ctx, "gone", "main", "cp"); err != nil {
		t.Fatal(err)
	}
	if err := s.Trash(ctx, "gone", "main", id, []branch.Object{{Key: "k", Entry: e}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "gone", "main", "k", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRepo(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, sp := range keyspace.All {
		owned[sp.Prefix] = sp.Owner == "branch"
	}
	err = db.View(ctx, func(r kv.Reader) error {
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
