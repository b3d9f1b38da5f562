package tree

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentnas/nas/chunk"
)

func TestEmpty(t *testing.T) {
	ctx := context.Background()
	tr, _, _ := newTestTree(DefaultLevelBits, nil)
	root := build(t, tr, model{})
	if !root.IsZero() {
		t.Fatalf("empty build = %s", root)
	}
	if _, ok, err := tr.Get(ctx, root, []byte("x")); ok || err != nil {
		t.Fatalf("get on empty: %v %v", ok, err)
	}
	root = apply(t, tr, root, []Edit{{Key: []byte("x"), Delete: true}})
	if !root.IsZero() {
		t.Fatalf("delete on empty = %s", root)
	}
	root = apply(t, tr, root, []Edit{{Key: []byte("x"), Value: []byte("1")}})
	checkTree(t, tr, root, model{"x": "1"})
	root = apply(t, tr, root, []Edit{{Key: []byte("x"), Delete: true}})
	if !root.IsZero() {
		t.Fatalf("delete last = %s", root)
	}
	if err := tr.Diff(ctx, root, root, func(Change) error { return errors.New("called") }); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyKeyAndValue(t *testing.T) {
	tr, _, _ := newTestTree(1, nil)
	m := model{"": "", "a": "", "b": "x"}
	root := build(t, tr, m)
	checkTree(t, tr, root, m)
	v, ok, err := tr.Get(context.Background(), root, []byte(""))
	if err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("get empty key = %v %v %v", v, ok, err)
	}
}

// TestApplyMatchesBuild is the history-independence property: after random
// edit batches the root equals a fresh build of the same set.
func TestApplyMatchesBuild(t *testing.T) {
	for _, bits := range []int{1, 2, 5} {
		for _, salt := range [][]byte{nil, []byte("secret")} {
			r := rand.New(rand.NewPCG(uint64(bits), uint64(len(salt))))
			tr, _, _ := newTestTree(bits, salt)
			n := 600
			if bits == 5 {
				n = 3000
			}
			keys := keyspace(r, n)
			m := model{}
			root := chunk.Hash{}
			rounds := 40
			if testing.Short() {
				rounds = 15
			}
			for round := 0; round < rounds; round++ {
				size := 1 + r.IntN(n/10)
				switch round % 7 {
				case 3:
					size = 1
				case 5:
					size = n // most of the keyspace
				}
				edits := randomEdits(r, keys, size)
				root = apply(t, tr, root, edits)
				m.apply(edits)
				if want := build(t, tr, m); root != want {
					t.Fatalf("bits %d round %d: apply root %s, build root %s", bits, round, root, want)
				}
				if round%5 == 0 {
					checkTree(t, tr, root, m)
				} else if err := tr.Check(context.Background(), root); err != nil {
					t.Fatal(err)
				}
			}
			// Delete everything.
			var dels []Edit
			for _, e := range m.entries() {
				dels = append(dels, Edit{Key: e.Key, Delete: true})
			}
			if root = apply(t, tr, root, dels); !root.IsZero() {
				t.Fatalf("deleting everything left %s", root)
			}
		}
	}
}

// TestBatchSplits applies one edit list whole, in random splits and one by
// one in random order, and gets one root.
func TestBatchSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, bits := range []int{1, 3, 5} {
		tr, _, _ := newTestTree(bits, nil)
		keys := keyspace(r, 800)
		m := model{}
		base := randomEdits(r, keys, 400)
		m.apply(base)
		start := build(t, tr, m)
		edits := randomEdits(r, keys, 300)
		m.apply(edits)
		want := build(t, tr, m)

		if got := apply(t, tr, start, edits); got != want {
			t.Fatalf("bits %d: whole batch %s, want %s", bits, got, want)
		}
		for trial := 0; trial < 5; trial++ {
			root := start
			for rest := edits; len(rest) > 0; {
				n := 1 + r.IntN(len(rest))
				root = apply(t, tr, root, rest[:n])
				rest = rest[n:]
			}
			if root != want {
				t.Fatalf("bits %d: split batches %s, want %s", bits, root, want)
			}
		}
		root := start
		for _, i := range r.Perm(len(edits)) {
			root = apply(t, tr, root, edits[i:i+1])
		}
		if root != want {
			t.Fatalf("bits %d: one by one %s, want %s", bits, root, want)
		}
	}
}

// TestBoundaryEdits deletes and re-inserts exactly the keys that end nodes,
// and edits before the first and after the last key.
func TestBoundaryEdits(t *testing.T) {
	for _, bits := range []int{1, 2, 5} {
		tr, _, _ := newTestTree(bits, nil)
		keys := seqKeys(2000)
		m := model{}
		for _, k := range keys {
			m[k] = "v" + k
		}
		root := build(t, tr, m)
		var scratch []byte
		var boundaries []Edit
		for _, k := range keys {
			if tr.level([]byte(k), &scratch) > 0 {
				boundaries = append(boundaries, Edit{Key: []byte(k), Delete: true})
			}
		}
		if len(boundaries) == 0 {
			t.Fatal("no boundary keys")
		}
		step := max(2, len(boundaries)/50)
		for i, e := range boundaries {
			if i%step == 0 {
				root = apply(t, tr, root, []Edit{e})
				m.apply([]Edit{e})
			}
		}
		if want := build(t, tr, m); root != want {
			t.Fatalf("bits %d: after deleting boundaries %s, want %s", bits, root, want)
		}
		root = apply(t, tr, root, boundaries)
		m.apply(boundaries)
		checkTree(t, tr, root, m)
		if want := build(t, tr, m); root != want {
			t.Fatalf("bits %d: after deleting all boundaries", bits)
		}
		edge := []Edit{{Key: []byte("a"), Value: []byte("first")}, {Key: []byte("k"), Value: []byte("k")}, {Key: []byte("z"), Value: []byte("last")}}
		root = apply(t, tr, root, edge)
		m.apply(edge)
		checkTree(t, tr, root, m)
		if want := build(t, tr, m); root != want {
			t.Fatalf("bits %d: after edge inserts", bits)
		}
		// Append a run beyond the last key, as time-ordered keys do.
		var tail []Edit
		for _, k := range seqKeys(300) {
			tail = append(tail, Edit{Key: []byte("z" + k), Value: []byte("t")})
		}
		root = apply(t, tr, root, tail)
		m.apply(tail)
		if want := build(t, tr, m); root != want {
			t.Fatalf("bits %d: after appending", bits)
		}
	}
}

func TestUnsortedAndLimits(t *testing.T) {
	ctx := context.Background()
	tr, _, _ := newTestTree(DefaultLevelBits, nil)
	_, err := tr.Apply(ctx, chunk.Hash{}, SliceEdits([]Edit{{Key: []byte("b")}, {Key: []byte("a")}}))
	if !errors.Is(err, ErrUnsorted) {
		t.Fatalf("unsorted apply: %v", err)
	}
	_, err = tr.Apply(ctx, chunk.Hash{}, SliceEdits([]Edit{{Key: []byte("a")}, {Key: []byte("a")}}))
	if !errors.Is(err, ErrUnsorted) {
		t.Fatalf("duplicate apply: %v", err)
	}
	_, err = tr.Build(ctx, SliceEntries([]Entry{{Key: []byte("b")}, {Key: []byte("a")}}))
	if !errors.Is(err, ErrUnsorted) {
		t.Fatalf("unsorted build: %v", err)
	}
	_, err = tr.Build(ctx, SliceEntries([]Entry{{Key: make([]byte, MaxKeySize+1)}}))
	if !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("long key: %v", err)
	}
	big := bytes.Repeat([]byte{'x'}, MaxKeySize)
	root, err := tr.Build(ctx, SliceEntries([]Entry{{Key: big[:MaxKeySize-1], Value: []byte("1")}, {Key: big, Value: []byte("2")}}))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := tr.Get(ctx, root, big); !ok || string(v) != "2" {
		t.Fatalf("get longest key = %q %v", v, ok)
	}
	errSeq := func(yield func(Edit, error) bool) {
		if yield(Edit{Key: []byte("a")}, nil) {
			yield(Edit{}, errors.New("source failed"))
		}
	}
	if _, err := tr.Apply(ctx, root, errSeq); err == nil || err.Error() != "apply: source failed" {
		t.Fatalf("source error: %v", err)
	}
}

func TestIteratorSeekAndBounds(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	for _, bits := range []int{1, 5} {
		tr, _, _ := newTestTree(bits, nil)
		keys := keyspace(r, 3000)
		m := model{}
		for _, k := range keys[:2000] {
			m[k] = k
		}
		root := build(t, tr, m)
		sorted := m.entries()
		lowerIdx := func(k string) int {
			i, _ := slices.BinarySearchFunc(sorted, []byte(k), func(e Entry, t []byte) int { return bytes.Compare(e.Key, t) })
			return i
		}
		it := tr.NewIterator(root, nil, nil)
		for trial := 0; trial < 2000; trial++ {
			target := keys[r.IntN(len(keys))]
			if trial%3 == 0 {
				target += "\x00"
			}
			ok := it.Seek(ctx, []byte(target))
			i := lowerIdx(target)
			if ok != (i < len(sorted)) || ok && !bytes.Equal(it.Key(), sorted[i].Key) {
				t.Fatalf("seek %q: %v %q, want index %d", target, ok, it.Key(), i)
			}
			for j := 0; j < r.IntN(5) && ok; j++ {
				ok = it.Next(ctx)
				i++
				if ok != (i < len(sorted)) || ok && !bytes.Equal(it.Key(), sorted[i].Key) {
					t.Fatalf("next after seek %q: %v %q", target, ok, it.Key())
				}
			}
		}
		if it.Seek(ctx, []byte("\xff\xff\xff\xff\xff\xff")) || it.Next(ctx) {
			t.Fatal("seek past the end found something")
		}
		if !it.Seek(ctx, nil) || !bytes.Equal(it.Key(), sorted[0].Key) {
			t.Fatal("seek back to start failed")
		}
		// Bounds.
		for trial := 0; trial < 50; trial++ {
			lo, hi := keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
			if lo > hi {
				lo, hi = hi, lo
			}
			var got []string
			it := tr.NewIterator(root, []byte(lo), []byte(hi))
			for ok := it.Next(ctx); ok; ok = it.Next(ctx) {
				got = append(got, string(it.Key()))
			}
			var want []string
			for _, e := range sorted[lowerIdx(lo):lowerIdx(hi)] {
				want = append(want, string(e.Key))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("range [%q,%q): %d keys, want %d", lo, hi, len(got), len(want))
			}
		}
	}
}

// TestDelimiterListing lists "directories" the way s3api does: Next, and
// Seek past each common prefix.
func TestDelimiterListing(t *testing.T) {
	ctx := context.Background()
	tr, cs, _ := newTestTree(DefaultLevelBits, nil)
	m := model{}
	names := seqKeys(500)
	for d := 0; d < 20; d++ {
		for _, f := range names {
			m[string(rune('a'+d))+"/"+f] = "x"
		}
		m[string(rune('a'+d))+".txt"] = "y"
	}
	root := build(t, tr, m)
	cs.reset()
	it := tr.NewIterator(root, nil, nil)
	var prefixes, files []string
	for ok := it.Next(ctx); ok; {
		k := it.Key()
		if i := bytes.IndexByte(k, '/'); i >= 0 {
			p := string(k[:i+1])
			prefixes = append(prefixes, p)
			next := []byte(p)
			next[len(next)-1]++
			ok = it.Seek(ctx, next)
			continue
		}
		files = append(files, string(k))
		ok = it.Next(ctx)
	}
	if it.Err() != nil || len(prefixes) != 20 || len(files) != 20 {
		t.Fatalf("listing: %d prefixes, %d files, %v", len(prefixes), len(files), it.Err())
	}
	// 10020 entries, ~330 leaves: a delimiter listing must not read them all.
	if g := cs.gets.Load(); g > 20*4+10 {
		t.Fatalf("delimiter listing read %d nodes", g)
	}
}

func TestDiffAgainstModel(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 12))
	for _, bits := range []int{1, 2, 5} {
		tr, _, _ := newTestTree(bits, nil)
		keys := keyspace(r, 1500)
		ma := model{}
		ma.apply(randomEdits(r, keys, 900))
		a := build(t, tr, ma)
		for round := 0; round < 20; round++ {
			mb := model{}
			for k, v := range ma {
				mb[k] = v
			}
			edits := randomEdits(r, keys, 1+r.IntN(200))
			if round == 0 {
				edits = nil
			}
			mb.apply(edits)
			b := apply(t, tr, a, edits)
			lo, hi := "", ""
			if round%3 == 1 {
				lo, hi = keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
				if lo > hi {
					lo, hi = hi, lo
				}
			}
			for _, pair := range [][2]chunk.Hash{{a, b}, {b, a}, {{}, b}, {a, {}}} {
				from, to := ma, mb
				if pair[0] == b {
					from, to = mb, ma
				}
				if pair[0].IsZero() {
					from = model{}
				}
				if pair[1].IsZero() {
					to = model{}
				}
				var got []Change
				err := tr.DiffRange(ctx, pair[0], pair[1], []byte(lo), []byte(hi), func(c Change) error {
					got = append(got, c)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				want := naiveDiff(from, to, lo, hi)
				if len(got) != len(want) {
					t.Fatalf("bits %d round %d: %d changes, want %d", bits, round, len(got), len(want))
				}
				for i := range got {
					if !sameChange(got[i], want[i]) {
						t.Fatalf("change %d: got %q %q %q want %q %q %q", i, got[i].Key, got[i].Old, got[i].New, want[i].Key, want[i].Old, want[i].New)
					}
				}
			}
		}
	}
}

func sameChange(a, b Change) bool {
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return bytes.Equal(a.Key, b.Key) && eq(a.Old, b.Old) && eq(a.New, b.New)
}

func naiveDiff(from, to model, lo, hi string) []Change {
	keys := map[string]bool{}
	for k := range from {
		keys[k] = true
	}
	for k := range to {
		keys[k] = true
	}
	var out []Change
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		if k < lo || (hi != "" && k >= hi) {
			continue
		}
		fv, fok := from[k]
		tv, tok := to[k]
		c := Change{Key: []byte(k)}
		if fok {
			c.Old = []byte(fv)
		}
		if tok {
			c.New = []byte(tv)
		}
		if fok && tok && fv == tv {
			continue
		}
		out = append(out, c)
	}
	return out
}

func TestDiffStopsOnError(t *testing.T) {
	tr, _, _ := newTestTree(DefaultLevelBits, nil)
	root := build(t, tr, model{"a": "1", "b": "2"})
	stop := errors.New("stop")
	n := 0
	err := tr.Diff(context.Background(), chunk.Hash{}, root, func(Change) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("diff error: %v after %d", err, n)
	}
}

func TestWalk(t *testing.T) {
	ctx := context.Background()
	tr, _, mem := newTestTree(2, nil)
	m := model{}
	for _, k := range seqKeys(3000) {
		m[k] = "v"
	}
	a := build(t, tr, m)
	m2 := model{}
	for k, v := range m {
		m2[k] = v
	}
	m2["k0001500x"] = "new"
	b := apply(t, tr, a, []Edit{{Key: []byte("k0001500x"), Value: []byte("new")}})

	seen := map[chunk.Hash]bool{}
	entries := 0
	mark := func(v *NodeView) error {
		if seen[v.Hash()] {
			return SkipSubtree
		}
		seen[v.Hash()] = true
		if v.Size() < 3 || v.Len() == 0 {
			return errors.New("empty node")
		}
		for i := 0; i < v.Len(); i++ {
			if v.Level() == 0 {
				entries++
				if string(m2[string(v.Key(i))]) != string(v.Value(i)) {
					return errors.New("walk value differs")
				}
			} else if v.Child(i).IsZero() {
				return errors.New("zero child")
			}
		}
		return nil
	}
	if err := tr.Walk(ctx, a, mark); err != nil {
		t.Fatal(err)
	}
	if entries != 3000 {
		t.Fatalf("walk saw %d entries", entries)
	}
	nodesA := len(seen)
	if err := tr.Walk(ctx, b, mark); err != nil {
		t.Fatal(err)
	}
	// Every stored node is reachable from a or b.
	if len(seen) != mem.Len() {
		t.Fatalf("walk marked %d nodes, store holds %d", len(seen), mem.Len())
	}
	if added := len(seen) - nodesA; added > 3*20 {
		t.Fatalf("second walk visited %d new nodes", added)
	}
	stop := errors.New("stop")
	if err := tr.Walk(ctx, a, func(*NodeView) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("walk error: %v", err)
	}
}

func TestCorruptAndMissing(t *testing.T) {
	ctx := context.Background()
	tr, _, mem := newTestTree(2, nil)
	m := model{}
	for _, k := range seqKeys(500) {
		m[k] = "v"
	}
	root := build(t, tr, m)
	data, _ := mem.GetNode(ctx, root)
	bad := append([]byte(nil), data...)
	bad[len(bad)-1] ^= 1
	mem.Corrupt(root, bad)
	if _, _, err := tr.Get(ctx, root, []byte("k0000001")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}
	mem.Corrupt(root, data)

	var victim chunk.Hash
	for _, h := range mem.Hashes() {
		if h != root {
			victim = h
			break
		}
	}
	mem.Delete(victim)
	err := tr.Check(ctx, root)
	if !errors.Is(err, ErrNodeNotFound) {
		t.Fatalf("check with a missing node: %v", err)
	}
	if err := tr.Walk(ctx, root, func(*NodeView) error { return nil }); !errors.Is(err, ErrNodeNotFound) {
		t.Fatalf("walk with a missing node: %v", err)
	}
}

func TestCancel(t *testing.T) {
	tr, _, _ := newTestTree(DefaultLevelBits, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var entries []Entry
	for _, k := range seqKeys(2000) {
		entries = append(entries, Entry{Key: []byte(k), Value: []byte("v")})
	}
	if _, err := tr.Build(ctx, SliceEntries(entries)); !errors.Is(err, context.Canceled) {
		t.Fatalf("build: %v", err)
	}
	root := build(t, tr, model{"a": "1"})
	if _, _, err := tr.Get(ctx, root, []byte("a")); !errors.Is(err, context.Canceled) {
		t.Fatalf("get: %v", err)
	}
}

// TestRangeDeletes deletes contiguous ranges, so that what is left can be a
// single old subtree (kept whole, then collapsed to the true root) or
// pieces of both ends.
func TestRangeDeletes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, bits := range []int{1, 2, 3} {
		tr, _, _ := newTestTree(bits, nil)
		keys := seqKeys(1500)
		full := model{}
		for _, k := range keys {
			full[k] = "v"
		}
		root := build(t, tr, full)
		// Ranges that are exactly one subtree: each child of the root, and
		// each child of the root's first and last child.
		var spans [][2]int
		rn, _ := tr.load(context.Background(), root)
		for _, n := range []*node{rn, mustLoad(t, tr, rn.kids[0]), mustLoad(t, tr, rn.kids[len(rn.kids)-1])} {
			lo := 0
			if n != rn {
				lo = -1
			}
			for c := range n.kids {
				hi := slices.Index(keys, string(n.keys[c])) + 1
				if c > 0 {
					lo = slices.Index(keys, string(n.keys[c-1])) + 1
				} else if lo < 0 {
					lo = hi - int(n.counts[0])
				}
				spans = append(spans, [2]int{lo, hi})
			}
		}
		for trial := 0; trial < 15+len(spans); trial++ {
			i, j := r.IntN(len(keys)), r.IntN(len(keys))
			if i > j {
				i, j = j, i
			}
			if trial >= 15 {
				i, j = spans[trial-15][0], spans[trial-15][1]
			}
			var del, keep []Edit
			for x, k := range keys {
				if x >= i && x < j {
					del = append(del, Edit{Key: []byte(k), Delete: true})
				} else {
					keep = append(keep, Edit{Key: []byte(k), Delete: true})
				}
			}
			for _, edits := range [][]Edit{del, keep} {
				m := model{}
				for k, v := range full {
					m[k] = v
				}
				m.apply(edits)
				got := apply(t, tr, root, edits)
				if want := build(t, tr, m); got != want {
					t.Fatalf("bits %d: deleting %d keys of [%d,%d): %s, want %s", bits, len(edits), i, j, got, want)
				}
			}
		}
	}
}

func mustLoad(tb testing.TB, tr *Tree, h chunk.Hash) *node {
	tb.Helper()
	n, err := tr.load(context.Background(), h)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestConcurrent runs applies, reads, iterations and diffs at once over one
// Tree and Cache, for the race detector.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	base, _, _ := newTestTree(3, []byte("salt"))
	tr := base.withStore(NewCache(base.store, 64<<10))
	m := model{}
	for _, k := range seqKeys(3000) {
		m[k] = "v"
	}
	root := build(t, tr, m)
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			keys := seqKeys(3000)
			for i := 0; i < 20; i++ {
				switch g % 4 {
				case 0:
					edits := randomEdits(r, keys, 20)
					if _, err := tr.Apply(ctx, root, SliceEdits(edits)); err != nil {
						errs <- err
						return
					}
				case 1:
					if _, ok, err := tr.Get(ctx, root, []byte(keys[r.IntN(len(keys))])); !ok || err != nil {
						errs <- errors.Join(err, errors.New("get failed"))
						return
					}
				case 2:
					it := tr.NewIterator(root, []byte(keys[r.IntN(len(keys))]), nil)
					for j := 0; j < 100 && it.Next(ctx); j++ {
					}
					if it.Err() != nil {
						errs <- it.Err()
						return
					}
				case 3:
					other, err := tr.Apply(ctx, root, SliceEdits(randomEdits(r, keys, 5)))
					if err == nil {
						err = tr.Diff(ctx, root, other, func(Change) error { return nil })
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
