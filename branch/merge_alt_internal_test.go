package branch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// TestMergeAltGivesTheSameTree: whatever both sides changed (puts, deletes,
// the same object on both, scratch files, conflicts resolved either way, a
// reviewed merge), applying alt to theirs gives the tree that applying the
// edits to ours gives, so Merge may take the cheaper.
func TestMergeAltGivesTheSameTree(t *testing.T) {
	ctx := context.Background()
	chunks, db, _ := castest.Open(t)
	s := New(db, chunks, nil)
	if _, err := s.CreateRepo(ctx, "mrg", CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	entry := func(i int, retention string) *manifest.Entry {
		return &manifest.Entry{Size: int64(i), ETag: fmt.Sprintf("%032x", i), Retention: retention}
	}
	for i := range 400 {
		if _, err := s.Put(ctx, "mrg", "main", fmt.Sprintf("k%03d", i), entry(i, ""), Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	base, err := s.Commit(ctx, "mrg", "main", CommitOptions{Message: "base"})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		run := fmt.Sprintf("run%d", round)
		if _, err := s.CreateBranch(ctx, "mrg", run, "main"); err != nil {
			t.Fatal(err)
		}
		change := func(br string, n int) {
			for range n {
				k := fmt.Sprintf("k%03d", rng.IntN(450)) // some new keys too
				var err error
				switch rng.IntN(5) {
				case 0:
					_, err = s.Delete(ctx, "mrg", br, k, Condition{})
				case 1:
					_, err = s.Put(ctx, "mrg", br, k, entry(7, ""), Condition{}) // the same object on both sides, often
				case 2:
					_, err = s.Put(ctx, "mrg", br, k, entry(rng.IntN(1000), manifest.RetentionScratch), Condition{})
				default:
					_, err = s.Put(ctx, "mrg", br, k, entry(rng.IntN(1000), ""), Condition{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		change("main", 10+rng.IntN(60))
		change(run, 10+rng.IntN(200))
		ours, err := s.Commit(ctx, "mrg", "main", CommitOptions{Message: "ours", AllowEmpty: true})
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := s.Commit(ctx, "mrg", run, CommitOptions{Message: "theirs", AllowEmpty: true})
		if err != nil {
			t.Fatal(err)
		}
		var tr *tree.Tree
		if err := s.db.View(ctx, func(r kv.Reader) error {
			rr, err := s.repo(r, "mrg")
			tr = s.treeFor(rr)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var roots [3]manifest.CommitID
		roots[0], roots[1], roots[2] = base, ours, theirs
		var h [3]chunk.Hash
		for i, id := range roots {
			if h[i], err = s.root(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range []MergeOptions{{Ours: []string{"**"}}, {Theirs: []string{"**"}}, {Theirs: []string{"**"}, Review: true}} {
			res := &MergeResult{}
			edits, alt, err := s.threeWay(ctx, tr, h[0], h[1], h[2], o, res)
			if err != nil || len(res.Conflicts) > 0 {
				t.Fatalf("round %d %+v: %v, %d conflicts", round, o, err, len(res.Conflicts))
			}
			want, err := tr.Apply(ctx, h[1], tree.SliceEdits(edits))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.Apply(ctx, h[2], tree.SliceEdits(alt))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("round %d %+v: alt (%d edits to theirs) gives %s, the edits (%d to ours) %s", round, o, len(alt), got, len(edits), want)
			}
		}
		base = ours // the next round forks main as it is now
	}
}
