package pgkv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/kv"
)

// engine returns the opener of an engine for the benchmarks under b:
// Badger on disk (synchronous commits) or PostgreSQL on a pgtest cluster
// of b's. Note that pgtest runs the server with fsync off, so its commits
// cost no disk flush: the numbers compare round trips and server work, not
// durability.
func engine(b *testing.B, name string) func(b *testing.B) kv.DB {
	if name == "badger" {
		return func(b *testing.B) kv.DB {
			db, err := kv.OpenBadger(b.TempDir(), kv.BadgerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}
	}
	dsn := pgtest.StartCluster(b).DSN
	return func(b *testing.B) kv.DB {
		db, err := Open(context.Background(), dsn, Options{Schema: freshSchema(), MaxConns: 32})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
}

// BenchmarkUpdate is kv's BenchmarkSmallPut on each engine: one
// transaction writing an inline chunk and three records, from 1 and 16
// goroutines.
func BenchmarkUpdate(b *testing.B) {
	for _, name := range []string{"badger", "postgres"} {
		open := engine(b, name)
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("engine=%s/conc=%d", name, conc), func(b *testing.B) {
				db := open(b)
				ctx := context.Background()
				chunk, meta := make([]byte, 4096), make([]byte, 280)
				var n atomic.Int64
				b.SetParallelism(conc)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := fmt.Sprintf("%016d", n.Add(1))
						err := db.Update(ctx, func(txn kv.Txn) error {
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
}

// BenchmarkGet reads one of 1,000 keys of 280 bytes in a View.
func BenchmarkGet(b *testing.B) {
	for _, name := range []string{"badger", "postgres"} {
		open := engine(b, name)
		b.Run("engine="+name, func(b *testing.B) {
			db := open(b)
			ctx := context.Background()
			w := db.Batch(ctx)
			for i := range 1000 {
				w.Set(fmt.Appendf(nil, "k/%04d", i), make([]byte, 280))
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Appendf(nil, "k/%04d", n.Add(1)%1000)
					err := db.View(ctx, func(r kv.Reader) error { _, err := r.Get(key); return err })
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
