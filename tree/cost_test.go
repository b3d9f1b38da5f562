package tree

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentnas/nas/chunk"
)

// height returns the number of levels of root.
func height(tb testing.TB, tr *Tree, root chunk.Hash) int {
	n, err := tr.load(context.Background(), root)
	if err != nil {
		tb.Fatal(err)
	}
	return n.level + 1
}

func bigTree(tb testing.TB, n int) (*Tree, *countingStore, chunk.Hash, []string) {
	tr, cs, _ := newTestTree(DefaultLevelBits, nil)
	keys := seqKeys(n)
	entries := make([]Entry, n)
	for i, k := range keys {
		entries[i] = Entry{Key: []byte("data/2024/" + k), Value: []byte(fmt.Sprintf("value-%d-%0100d", i, i))}
		keys[i] = string(entries[i].Key)
	}
	cs.reset()
	root, err := tr.Build(context.Background(), SliceEntries(entries))
	if err != nil {
		tb.Fatal(err)
	}
	return tr, cs, root, keys
}

// TestApplyCost shows that one edit of a 100,000-entry tree reads and writes
// O(log n) nodes, in one PutNodes call, whatever kind of edit it is.
func TestApplyCost(t *testing.T) {
	const n = 100_000
	tr, cs, root, keys := bigTree(t, n)
	written := cs.putNodes.Load()
	if calls := cs.puts.Load(); calls > written/batchNodes+1 {
		t.Fatalf("build wrote %d nodes in %d PutNodes calls", written, calls)
	}
	h := height(t, tr, root)
	var payload int
	it := tr.NewIterator(root, nil, nil)
	for ok := it.Next(context.Background()); ok; ok = it.Next(context.Background()) {
		payload += len(it.Key()) + len(it.Value())
	}
	stored := cs.NodeStore.(*MemStore).Bytes()
	t.Logf("n=%d: %d nodes, height %d, %.1f bytes/entry stored for %.1f of key and value", n, written, h,
		float64(stored)/n, float64(payload)/n)
	var scratch []byte
	var boundary, plain string
	for _, k := range keys[n/2:] {
		if l := tr.level([]byte(k), &scratch); l >= 2 && boundary == "" {
			boundary = k
		} else if l == 0 && plain == "" {
			plain = k
		}
	}
	cases := []struct {
		name string
		edit Edit
	}{
		{"update", Edit{Key: []byte(plain), Value: []byte("new")}},
		{"insert", Edit{Key: []byte(plain + "x"), Value: []byte("new")}},
		{"delete", Edit{Key: []byte(plain), Delete: true}},
		{"delete boundary", Edit{Key: []byte(boundary), Delete: true}},
		{"update boundary", Edit{Key: []byte(boundary), Value: []byte("b")}},
		{"delete missing", Edit{Key: []byte(plain + "y"), Delete: true}},
		{"before first", Edit{Key: []byte("a"), Value: []byte("first")}},
		{"after last", Edit{Key: []byte("z"), Value: []byte("last")}},
		{"delete first", Edit{Key: []byte(keys[0]), Delete: true}},
		{"delete last", Edit{Key: []byte(keys[n-1]), Delete: true}},
	}
	for _, c := range cases {
		cs.reset()
		out := apply(t, tr, root, []Edit{c.edit})
		reads, writes, calls := cs.gets.Load(), cs.putNodes.Load(), cs.puts.Load()
		t.Logf("%-16s reads %d writes %d in %d calls", c.name, reads, writes, calls)
		// One path down, plus the neighbours a merged boundary pulls in;
		// one new node per level at most.
		if reads > int64(2*h+2) || writes > int64(h+1) || calls > 1 {
			t.Errorf("%s: %d reads, %d writes, %d calls for height %d", c.name, reads, writes, calls, h)
		}
		if c.name == "delete missing" && (out != root || writes != 0) {
			t.Errorf("deleting a missing key changed the tree or wrote %d nodes", writes)
		}
	}
}

// TestDiffCost shows that diffing two 100,000-entry trees that differ in 10
// keys reads O(10 log n) nodes.
func TestDiffCost(t *testing.T) {
	const n = 100_000
	tr, cs, a, keys := bigTree(t, n)
	h := height(t, tr, a)
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 5; trial++ {
		m := map[string]Edit{}
		for len(m) < 10 {
			k := keys[r.IntN(n)]
			switch r.IntN(3) {
			case 0:
				m[k] = Edit{Key: []byte(k), Delete: true}
			case 1:
				m[k] = Edit{Key: []byte(k), Value: []byte("changed")}
			default:
				m[k+"+"] = Edit{Key: []byte(k + "+"), Value: []byte("added")}
			}
		}
		var edits []Edit
		for _, k := range sortedKeys(m) {
			edits = append(edits, m[k])
		}
		b := apply(t, tr, a, edits)
		for _, dir := range [][2]chunk.Hash{{a, b}, {b, a}} {
			cs.reset()
			changes := 0
			if err := tr.Diff(context.Background(), dir[0], dir[1], func(Change) error { changes++; return nil }); err != nil {
				t.Fatal(err)
			}
			reads := cs.gets.Load()
			if changes != 10 {
				t.Fatalf("diff found %d changes", changes)
			}
			// Two paths per change, plus a neighbour per level where a
			// change moved a boundary.
			if bound := int64(10 * 2 * (h + 1)); reads > bound {
				t.Errorf("diff of 10 changes read %d nodes, bound %d", reads, bound)
			}
			if trial == 0 {
				t.Logf("diff of 10 changes in %d entries (height %d): %d reads", n, h, reads)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
