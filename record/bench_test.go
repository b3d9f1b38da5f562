package record

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/kv"
)

// BenchmarkAppend measures durable appends (real Badger, fsync) with
// concurrent callers sharing group commits.
func BenchmarkAppend(b *testing.B) {
	for _, conc := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			r := New(openDB(b), Options{})
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(conc)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := specEvent()
					e.ReadManifest = ""
					e.Subject.Commit = fmt.Sprint(n.Add(1))
					if _, err := r.Append(ctx, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkAppendTxn measures appends in callers' own transactions through
// Recorder.Update (one fsync each, serialized).
func BenchmarkAppendTxn(b *testing.B) {
	r := New(openDB(b), Options{})
	ctx := context.Background()
	e := specEvent()
	e.ReadManifest = ""
	b.ResetTimer()
	for b.Loop() {
		if err := r.Update(ctx, func(txn kv.Txn) error {
			_, err := r.AppendTxn(txn, e)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkManifestAdd measures buffering reads, including the flushes a
// full buffer forces: sequential reads of one file (merged) and scattered
// reads of many files (one entry each).
func BenchmarkManifestAdd(b *testing.B) {
	for _, tc := range []struct {
		name string
		read func(i int64) Read
	}{
		{"sequential", func(i int64) Read {
			// Each run reads its own file front to back.
			return Read{Path: fmt.Sprint("/data/big", i%8), Commit: "c1", Offset: i / 8 * 4096, Length: 4096}
		}},
		{"scattered", func(i int64) Read {
			return Read{Path: fmt.Sprintf("/data/f%06d", i%100000), Commit: "c1", Offset: i * 8192, Length: 4096,
				ETag: `"0123456789abcdef0123456789abcdef"`}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := NewManifests(openDB(b), ManifestOptions{})
			ctx := context.Background()
			var n atomic.Int64
			runs := make([]string, 8)
			for i := range runs {
				runs[i] = fmt.Sprint("run_", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if err := m.Add(ctx, runs[i%8], tc.read(i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if err := m.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}
