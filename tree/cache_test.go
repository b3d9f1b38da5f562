package tree

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestCacheBoundedAndShared(t *testing.T) {
	ctx := context.Background()
	base, cs, _ := newTestTree(DefaultLevelBits, nil)
	m := model{}
	for _, k := range seqKeys(20000) {
		m[k] = "some value of moderate length, like an encoded object entry"
	}
	root := build(t, base, m)
	const budget = 256 << 10
	cache := NewCache(cs, budget)
	tr := base.withStore(cache)
	keys := m.entries()
	cs.reset()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(keys); i += 7 {
				v, ok, err := tr.Get(ctx, root, keys[i].Key)
				if err != nil || !ok || string(v) != string(keys[i].Value) {
					t.Errorf("get %q: %v %v", keys[i].Key, ok, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	st := cache.Stats()
	if st.Bytes > budget {
		t.Fatalf("cache holds %d bytes, budget %d", st.Bytes, budget)
	}
	if st.Hits < 10*st.Misses {
		t.Fatalf("cache hits %d, misses %d", st.Hits, st.Misses)
	}
	if st.Misses != cs.gets.Load() {
		t.Fatalf("misses %d, store reads %d", st.Misses, cs.gets.Load())
	}
	t.Logf("%+v", st)
}

// TestSeekReusesPath checks that seeking forward within the current leaf
// reads nothing and that a full scan reads every node once.
func TestSeekReusesPath(t *testing.T) {
	ctx := context.Background()
	tr, cs, mem := newTestTree(DefaultLevelBits, nil)
	m := model{}
	for _, k := range seqKeys(5000) {
		m[k] = "v"
	}
	root := build(t, tr, m)
	cs.reset()
	it := tr.NewIterator(root, nil, nil)
	n := 0
	for ok := it.Next(ctx); ok; ok = it.Next(ctx) {
		n++
	}
	if n != 5000 || cs.gets.Load() != int64(mem.Len()) {
		t.Fatalf("scan of %d entries read %d of %d nodes", n, cs.gets.Load(), mem.Len())
	}
	cs.reset()
	it = tr.NewIterator(root, nil, nil)
	it.Seek(ctx, []byte("k0002000"))
	first := cs.gets.Load()
	for i := 2001; i < 2010; i++ {
		it.Seek(ctx, fmt.Appendf(nil, "k%07d", i))
	}
	if first > int64(height(t, tr, root)) || cs.gets.Load() > first+2 {
		t.Fatalf("first seek read %d nodes, nine short seeks %d more", first, cs.gets.Load()-first)
	}
}

// TestCacheKeepsWrittenNodes checks that a tree built through a Cache is
// read back without reaching the store: what a commit writes, the next diff
// of its head reads.
func TestCacheKeepsWrittenNodes(t *testing.T) {
	ctx := context.Background()
	base, cs, _ := newTestTree(DefaultLevelBits, nil)
	cache := NewCache(cs, 0)
	tr := base.withStore(cache)
	m := model{}
	for _, k := range seqKeys(5000) {
		m[k] = "value"
	}
	root := build(t, tr, m)
	cs.reset()
	for _, e := range m.entries() {
		v, ok, err := tr.Get(ctx, root, e.Key)
		if err != nil || !ok || string(v) != string(e.Value) {
			t.Fatalf("get %q: %q %v %v", e.Key, v, ok, err)
		}
	}
	if n := cs.gets.Load(); n != 0 {
		t.Fatalf("reading the tree just written reached the store %d times", n)
	}
	if st := cache.Stats(); st.Misses != 0 || st.Nodes == 0 {
		t.Fatalf("cache stats after reading what it wrote: %+v", st)
	}
}
