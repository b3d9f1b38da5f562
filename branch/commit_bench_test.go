package branch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv/kvtest"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// BenchmarkCommitTreeSize commits 100 changes spread evenly over trees of
// 1,000 to 1,000,000 objects (issue 21 asks for at most 2x from 1,000 to
// 1,000,000). Besides the time it reports what each commit wrote, which
// no load on the machine changes: kv commits (each one fsync), tree nodes
// and their bytes.
func BenchmarkCommitTreeSize(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ctx := context.Background()
			chunks, raw, _ := castest.Open(b)
			var counting atomic.Bool
			var syncs, nodes, nodeBytes atomic.Int64
			db := kvtest.Observe(raw, func(ws []kvtest.Write) {
				if !counting.Load() {
					return
				}
				syncs.Add(1)
				for _, w := range ws {
					if bytes.HasPrefix(w.Key, []byte(keyspace.Node)) && !w.Delete {
						nodes.Add(1)
						nodeBytes.Add(int64(len(w.Value)))
					}
				}
			})
			s := branch.New(db, chunks, nil)
			if _, err := s.CreateRepo(ctx, "cts", branch.CreateRepoOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Import(ctx, "cts", "main", mergeEntries(n), branch.CommitOptions{Message: "import"}); err != nil {
				b.Fatal(err)
			}
			const changes = 100
			cache := s.Nodes().(*tree.Cache)
			if d := os.Getenv("NAS_BENCH_SETTLE"); d != "" {
				// Let Badger's compactions of the import finish first.
				t, _ := time.ParseDuration(d)
				time.Sleep(t)
			}
			b.ResetTimer()
			before := cache.Stats().Misses
			for r := 0; r < b.N; r++ {
				b.StopTimer()
				es := make([]branch.ImportEntry, changes)
				for k := range es {
					es[k] = branch.ImportEntry{Key: fmt.Sprintf("data/part-%09d.parquet", k*(n/changes)+r%(n/changes)), Entry: &manifest.Entry{Size: 1, ETag: fmt.Sprintf("%016x%016x", r+1, k)}}
				}
				if err := branch.StageBulk(ctx, s, "cts", "main", es); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				counting.Store(true)
				if _, err := s.Commit(ctx, "cts", "main", branch.CommitOptions{Message: "run"}); err != nil {
					b.Fatal(err)
				}
				counting.Store(false)
			}
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "syncs/op")
			b.ReportMetric(float64(cache.Stats().Misses-before)/float64(b.N), "nodeLoads/op")
			b.ReportMetric(float64(nodes.Load())/float64(b.N), "nodes/op")
			b.ReportMetric(float64(nodeBytes.Load())/float64(b.N)/1024, "nodeKiB/op")
		})
	}
}
