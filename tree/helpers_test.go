package tree

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/chunk"
)

// countingStore counts the calls that reach a NodeStore.
type countingStore struct {
	NodeStore
	gets, puts, putNodes atomic.Int64
	discard              bool // drop writes (benchmarks that write a lot)
}

func (s *countingStore) GetNode(ctx context.Context, h chunk.Hash) ([]byte, error) {
	s.gets.Add(1)
	return s.NodeStore.GetNode(ctx, h)
}

func (s *countingStore) PutNodes(ctx context.Context, nodes []Node) error {
	s.puts.Add(1)
	s.putNodes.Add(int64(len(nodes)))
	if s.discard {
		return nil
	}
	return s.NodeStore.PutNodes(ctx, nodes)
}

func (s *countingStore) reset() {
	s.gets.Store(0)
	s.puts.Store(0)
	s.putNodes.Store(0)
}

// newTestTree returns a Tree with level bits b over a counting MemStore.
func newTestTree(b int, salt []byte) (*Tree, *countingStore, *MemStore) {
	mem := NewMemStore()
	cs := &countingStore{NodeStore: mem}
	t := New(cs, Config{Salt: salt})
	t.setLevelBits(b)
	return t, cs, mem
}

// model is the reference map a tree is compared with.
type model map[string]string

func (m model) entries() []Entry {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = Entry{Key: []byte(k), Value: []byte(m[k])}
	}
	return out
}

func (m model) apply(edits []Edit) {
	for _, e := range edits {
		if e.Delete {
			delete(m, string(e.Key))
		} else {
			m[string(e.Key)] = string(e.Value)
		}
	}
}

func build(tb testing.TB, tr *Tree, m model) chunk.Hash {
	tb.Helper()
	root, err := tr.Build(context.Background(), SliceEntries(m.entries()))
	if err != nil {
		tb.Fatalf("build: %v", err)
	}
	return root
}

func apply(tb testing.TB, tr *Tree, root chunk.Hash, edits []Edit) chunk.Hash {
	tb.Helper()
	out, err := tr.Apply(context.Background(), root, SliceEdits(edits))
	if err != nil {
		tb.Fatalf("apply: %v", err)
	}
	return out
}

// checkTree verifies the canonical shape, the count, and every entry of root
// against m through Get and a full iteration.
func checkTree(tb testing.TB, tr *Tree, root chunk.Hash, m model) {
	tb.Helper()
	ctx := context.Background()
	if err := tr.Check(ctx, root); err != nil {
		tb.Fatalf("check: %v", err)
	}
	n, err := tr.Count(ctx, root)
	if err != nil || n != uint64(len(m)) {
		tb.Fatalf("count = %d, %v; want %d", n, err, len(m))
	}
	want := m.entries()
	it := tr.NewIterator(root, nil, nil)
	i := 0
	for ok := it.Next(ctx); ok; ok = it.Next(ctx) {
		if i >= len(want) || string(it.Key()) != string(want[i].Key) || string(it.Value()) != string(want[i].Value) {
			tb.Fatalf("iteration %d: got %q=%q", i, it.Key(), it.Value())
		}
		i++
	}
	if it.Err() != nil || i != len(want) {
		tb.Fatalf("iteration: %d entries, err %v; want %d", i, it.Err(), len(want))
	}
	cached := tr.withStore(NewCache(tr.store, 0))
	for _, e := range want {
		v, ok, err := cached.Get(ctx, root, e.Key)
		if err != nil || !ok || string(v) != string(e.Value) {
			tb.Fatalf("get %q = %q, %v, %v", e.Key, v, ok, err)
		}
	}
}

// keyspace returns n distinct keys with shared prefixes, like object keys.
func keyspace(r *rand.Rand, n int) []string {
	set := make(map[string]bool, n)
	dirs := []string{"", "a/", "a/b/", "data/2024/01/", "data/2024/02/", "z", "\x00", "\xff\xff"}
	for len(set) < n {
		d := dirs[r.IntN(len(dirs))]
		set[fmt.Sprintf("%s%x", d, r.Uint32()>>uint(r.IntN(28)))] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// seqKeys returns n keys in order, "k0000000" and so on.
func seqKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%07d", i)
	}
	return out
}

func value(r *rand.Rand) string {
	n := r.IntN(40)
	if r.IntN(10) == 0 {
		n = 0
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// randomEdits returns sorted edits over keys: sets and deletes, some of
// missing keys.
func randomEdits(r *rand.Rand, keys []string, n int) []Edit {
	pick := make(map[string]bool)
	for len(pick) < n && len(pick) < len(keys) {
		pick[keys[r.IntN(len(keys))]] = true
	}
	var out []Edit
	for _, k := range slices.Sorted(maps.Keys(pick)) {
		if r.IntN(3) == 0 {
			out = append(out, Edit{Key: []byte(k), Delete: true})
		} else {
			out = append(out, Edit{Key: []byte(k), Value: []byte(value(r))})
		}
	}
	return out
}

// withStore returns a Tree like tr over another store.
func (tr *Tree) withStore(s NodeStore) *Tree {
	return &Tree{store: s, salt: tr.salt, levelBits: tr.levelBits, maxLevel: tr.maxLevel}
}
