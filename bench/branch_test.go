package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/manifest"
)

func newService(b *testing.B) *branch.Service {
	b.Helper()
	chunks, db, _ := castest.Open(b)
	return branch.New(db, chunks, nil)
}

// repoOf creates a repository whose main holds n committed objects.
func repoOf(b *testing.B, s *branch.Service, n int) string {
	b.Helper()
	ctx := context.Background()
	name := "repo-" + strconv.Itoa(n)
	if _, err := s.CreateRepo(ctx, name, branch.CreateRepoOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Import(ctx, name, "main", synthetic(n), branch.CommitOptions{Message: "import"}); err != nil {
		b.Fatal(err)
	}
	return name
}

// sizes are the tree sizes of the scaling benchmarks; NAS_BENCH_FULL adds
// a million.
func sizes() []int {
	s := []int{10, 1000, 100000}
	if os.Getenv("NAS_BENCH_FULL") != "" {
		s = append(s, 1000000)
	}
	return s
}

// BenchmarkFork forks branches of repositories of 10 to 100,000 (or
// 1,000,000) objects in the same run and reports each size's time per
// fork and its ratio to the 10-object repository: a fork writes one branch
// record, so the ratio stays near 1.
func BenchmarkFork(b *testing.B) {
	s := newService(b)
	ctx := context.Background()
	ns := sizes()
	repos := make([]string, len(ns))
	for i, n := range ns {
		repos[i] = repoOf(b, s, n)
	}
	per := make([]time.Duration, len(ns))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, repo := range repos {
			start := time.Now()
			if _, err := s.CreateBranch(ctx, repo, fmt.Sprintf("fork-%d", i), "main"); err != nil {
				b.Fatal(err)
			}
			per[j] += time.Since(start)
		}
	}
	b.StopTimer()
	for j, n := range ns {
		b.ReportMetric(float64(per[j].Microseconds())/float64(b.N), fmt.Sprintf("us/fork@%d", n))
		if j > 0 {
			b.ReportMetric(float64(per[j])/float64(per[0]), fmt.Sprintf("ratio@%d/10", n))
		}
	}
}

// BenchmarkCommit commits 100 staged changes onto trees of growing size
// and reports the time per commit and the ratio to the smallest tree:
// commit cost follows the number of changes, not the tree.
func BenchmarkCommit(b *testing.B) {
	s := newService(b)
	ctx := context.Background()
	ns := sizes()[1:]
	repos := make([]string, len(ns))
	for i, n := range ns {
		repos[i] = repoOf(b, s, n)
	}
	per := make([]time.Duration, len(ns))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, repo := range repos {
			b.StopTimer()
			for k := 0; k < 100; k++ {
				key := fmt.Sprintf("data/part-%09d.parquet", (k*7919+i*104729)%ns[j])
				if _, err := s.Put(ctx, repo, "main", key, &manifest.Entry{Size: int64(i), ETag: "x"}, branch.Condition{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			start := time.Now()
			if _, err := s.Commit(ctx, repo, "main", branch.CommitOptions{Message: "c"}); err != nil {
				b.Fatal(err)
			}
			per[j] += time.Since(start)
		}
	}
	b.StopTimer()
	for j, n := range ns {
		b.ReportMetric(float64(per[j].Microseconds())/float64(b.N), fmt.Sprintf("us/commit@%d", n))
		if j > 0 {
			b.ReportMetric(float64(per[j])/float64(per[0]), fmt.Sprintf("ratio@%d/%d", n, ns[0]))
		}
	}
}

// BenchmarkDiff diffs two commits that differ in 100 keys on trees of
// growing size.
func BenchmarkDiff(b *testing.B) {
	s := newService(b)
	ctx := context.Background()
	ns := sizes()[1:]
	type pair struct{ repo, from, to string }
	pairs := make([]pair, len(ns))
	for j, n := range ns {
		repo := repoOf(b, s, n)
		from, _ := s.ResolveRef(ctx, repo, "main")
		for k := 0; k < 100; k++ {
			key := fmt.Sprintf("data/part-%09d.parquet", (k*7919)%n)
			if _, err := s.Put(ctx, repo, "main", key, &manifest.Entry{Size: 1, ETag: "changed"}, branch.Condition{}); err != nil {
				b.Fatal(err)
			}
		}
		to, err := s.Commit(ctx, repo, "main", branch.CommitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pairs[j] = pair{repo, from.String(), to.String()}
	}
	per := make([]time.Duration, len(ns))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, p := range pairs {
			start := time.Now()
			count := 0
			err := s.Diff(ctx, p.repo, p.from, p.to, "", nil, func(branch.Change) error { count++; return nil })
			if err != nil {
				b.Fatal(err)
			}
			per[j] += time.Since(start)
			if count == 0 {
				b.Fatal("no changes")
			}
		}
	}
	b.StopTimer()
	for j, n := range ns {
		b.ReportMetric(float64(per[j].Microseconds())/float64(b.N), fmt.Sprintf("us/diff@%d", n))
		if j > 0 {
			b.ReportMetric(float64(per[j])/float64(per[0]), fmt.Sprintf("ratio@%d/%d", n, ns[0]))
		}
	}
}
