package branch_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

func mergeEntries(n int) iter.Seq2[branch.ImportEntry, error] {
	return func(yield func(branch.ImportEntry, error) bool) {
		for i := 0; i < n; i++ {
			if !yield(branch.ImportEntry{Key: fmt.Sprintf("data/part-%09d.parquet", i), Entry: &manifest.Entry{Size: int64(i), ETag: fmt.Sprintf("%032x", i)}}, nil) {
				return
			}
		}
	}
}

// BenchmarkMerge merges a fork with 1,000 changes spread evenly over a
// tree of 100,000 objects into main, which moved by 100 new keys.
func BenchmarkMerge(b *testing.B) {
	ctx := context.Background()
	s := newService(b)
	const n, changes = 100000, 1000
	if _, err := s.CreateRepo(ctx, "mrg", branch.CreateRepoOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Import(ctx, "mrg", "main", mergeEntries(n), branch.CommitOptions{Message: "import"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for r := 0; r < b.N; r++ {
		b.StopTimer()
		run := fmt.Sprintf("run-%d", r)
		if _, err := s.CreateBranch(ctx, "mrg", run, "main"); err != nil {
			b.Fatal(err)
		}
		var es []branch.ImportEntry
		for k := 0; k < changes; k++ {
			es = append(es, branch.ImportEntry{Key: fmt.Sprintf("data/part-%09d.parquet", k*(n/changes)), Entry: &manifest.Entry{Size: 1, ETag: fmt.Sprintf("%016x%016x", r+1, k)}})
		}
		if err := branch.StageBulk(ctx, s, "mrg", run, es); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Commit(ctx, "mrg", run, branch.CommitOptions{Message: "run"}); err != nil {
			b.Fatal(err)
		}
		var mv []branch.ImportEntry
		for k := 0; k < 100; k++ {
			mv = append(mv, branch.ImportEntry{Key: fmt.Sprintf("main/r%d/k%04d", r, k), Entry: &manifest.Entry{Size: 1, ETag: fmt.Sprintf("%032x", k)}})
		}
		if err := branch.StageBulk(ctx, s, "mrg", "main", mv); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Commit(ctx, "mrg", "main", branch.CommitOptions{Message: "moves"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := s.Merge(ctx, "mrg", run, "main", branch.MergeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Applied != changes {
			b.Fatalf("applied %d", res.Applied)
		}
	}
}
