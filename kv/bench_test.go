package kv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkSmallPut is the kv side of a 4 KiB PUT: one transaction writing
// an inline chunk, a staging record, a version record and an index entry.
func BenchmarkSmallPut(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			db := open(b)
			ctx := context.Background()
			chunk := make([]byte, 4096)
			meta := make([]byte, 280)
			var n atomic.Int64
			b.SetParallelism(conc)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					err := db.Update(ctx, func(txn Txn) error {
						k := fmt.Sprintf("%016d", i)
						txn.Set([]byte("c/"+k), chunk)
						txn.Set([]byte("S/"+k), meta)
						txn.Set([]byte("V/"+k), meta)
						return txn.Set([]byte("K/"+k), meta[:24])
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
