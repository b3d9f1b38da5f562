package tree

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentnas/nas/chunk"
)

// benchTree builds an n-entry tree with ~150-byte values over a MemStore
// wrapped in a Cache, as the gateway runs it.
func benchTree(b *testing.B, n int) (*Tree, *countingStore, chunk.Hash, []string) {
	b.Helper()
	tr, cs, root, keys := bigTree(b, n)
	cached := tr.withStore(NewCache(tr.store, 0))
	return cached, cs, root, keys
}

func BenchmarkApplySingleEdit(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			tr, cs, root, keys := benchTree(b, n)
			cs.reset()
			cs.discard = true // the store would grow by every op's nodes
			r := rand.New(rand.NewPCG(1, 1))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[r.IntN(n)]
				edits := []Edit{{Key: []byte(k), Value: fmt.Appendf(nil, "v%d", i)}}
				if _, err := tr.Apply(ctx, root, SliceEdits(edits)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cs.putNodes.Load())/float64(b.N), "writes/op")
		})
	}
}

func BenchmarkGet(b *testing.B) {
	tr, _, root, keys := benchTree(b, 100_000)
	r := rand.New(rand.NewPCG(2, 2))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := tr.Get(ctx, root, []byte(keys[r.IntN(len(keys))])); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkIterate(b *testing.B) {
	const n = 100_000
	tr, _, root, _ := benchTree(b, n)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := tr.NewIterator(root, nil, nil)
		c := 0
		for ok := it.Next(ctx); ok; ok = it.Next(ctx) {
			c++
		}
		if c != n || it.Err() != nil {
			b.Fatal(c, it.Err())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

func BenchmarkDiffFewChanges(b *testing.B) {
	const n = 100_000
	tr, _, a, keys := benchTree(b, n)
	r := rand.New(rand.NewPCG(3, 3))
	m := map[string]Edit{}
	for len(m) < 10 {
		k := keys[r.IntN(n)]
		m[k] = Edit{Key: []byte(k), Value: []byte("changed")}
	}
	var edits []Edit
	for _, k := range sortedKeys(m) {
		edits = append(edits, m[k])
	}
	ctx := context.Background()
	to, err := tr.Apply(ctx, a, SliceEdits(edits))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := 0
		if err := tr.Diff(ctx, a, to, func(Change) error { c++; return nil }); err != nil || c != 10 {
			b.Fatal(c, err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	const n = 100_000
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{Key: fmt.Appendf(nil, "data/2024/k%07d", i), Value: fmt.Appendf(nil, "value-%d-%0100d", i, i)}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr := New(NewMemStore(), Config{})
		if _, err := tr.Build(ctx, SliceEntries(entries)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

// BenchmarkDecodeNode decodes every node of a 100,000-entry tree, as a cold
// cache does on each node read.
func BenchmarkDecodeNode(b *testing.B) {
	_, cs, _, _ := bigTree(b, 100_000)
	mem := cs.NodeStore.(*MemStore)
	ctx := context.Background()
	var leaves, inner [][]byte
	for _, h := range mem.Hashes() {
		data, err := mem.GetNode(ctx, h)
		if err != nil {
			b.Fatal(err)
		}
		if data[1] == 0 {
			leaves = append(leaves, data)
		} else {
			inner = append(inner, data)
		}
	}
	for _, c := range []struct {
		name  string
		nodes [][]byte
	}{{"leaf", leaves}, {"internal", inner}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := decodeNode(c.nodes[i%len(c.nodes)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
