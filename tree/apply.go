package tree

import (
	"bytes"
	"context"
	"fmt"
	"iter"

	"github.com/agentnas/nas/chunk"
)

// Entry is one key and its value.
type Entry struct {
	Key, Value []byte
}

// Edit sets Key to Value or, when Delete is set, removes Key (deleting a
// missing key is not an error). An empty Value is a value like any other.
type Edit struct {
	Key, Value []byte
	Delete     bool
}

// SliceEdits returns a sequence over edits, for Apply.
func SliceEdits(edits []Edit) iter.Seq2[Edit, error] {
	return func(yield func(Edit, error) bool) {
		for _, e := range edits {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// ctxCheckEvery is how many loop steps pass between checks of ctx.
const ctxCheckEvery = 256

// Build writes the tree holding entries, which must come in strictly
// increasing key order, and returns its root. Memory is bounded by one open
// node per level and one write batch, whatever the number of entries. The
// key and value of an entry need only stay valid until the next is asked for.
func (t *Tree) Build(ctx context.Context, entries iter.Seq2[Entry, error]) (chunk.Hash, error) {
	b := newBuilder(t)
	defer b.release()
	var prev []byte
	first, steps := true, 0
	for e, err := range entries {
		if err != nil {
			return chunk.Hash{}, fmt.Errorf("build: %w", err)
		}
		if steps++; steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return chunk.Hash{}, err
			}
		}
		if err := checkKey(e.Key, prev, first); err != nil {
			return chunk.Hash{}, fmt.Errorf("build: %w", err)
		}
		prev, first = append(prev[:0], e.Key...), false
		if err := b.addEntry(ctx, e.Key, e.Value, t.level(e.Key, &b.scratch)); err != nil {
			return chunk.Hash{}, fmt.Errorf("build: %w", err)
		}
	}
	root, err := b.finish(ctx)
	if err != nil {
		return chunk.Hash{}, fmt.Errorf("build: %w", err)
	}
	return root, nil
}

// short cuts a key for an error message.
func short(key []byte) []byte {
	if len(key) > 64 {
		return key[:64]
	}
	return key
}

// checkKey checks key's size and that it follows prev (unless first).
func checkKey(key, prev []byte, first bool) error {
	if len(key) > MaxKeySize {
		return fmt.Errorf("key of %d bytes: %w", len(key), ErrKeyTooLarge)
	}
	if !first && bytes.Compare(key, prev) <= 0 {
		return fmt.Errorf("key %q after %q: %w", short(key), short(prev), ErrUnsorted)
	}
	return nil
}

// editSource pulls edits and checks their order.
type editSource struct {
	next  func() (Edit, error, bool)
	cur   Edit
	ok    bool
	prev  []byte
	first bool
}

// advance moves to the next edit, checking its key; s.ok is false once
// the edits end.
func (s *editSource) advance() error {
	e, err, ok := s.next()
	if !ok {
		s.ok = false
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkKey(e.Key, s.prev, s.first); err != nil {
		return err
	}
	s.prev, s.first = append(s.prev[:0], e.Key...), false
	s.cur, s.ok = e, true
	return nil
}

// keepLimit bounds the set of old node hashes that Apply remembers so as not
// to write an unchanged node again.
const keepLimit = 4096

// remember notes that old node h is stored already, so that Apply does not
// write it again; the notes are forgotten all at once at keepLimit.
func (b *builder) remember(h chunk.Hash) {
	if len(b.skip) >= keepLimit {
		clear(b.skip)
	}
	b.skip[h] = struct{}{}
}

// Apply applies edits, in strictly increasing key order, to the tree root and
// returns the new root, which is the root Build would give for the resulting
// set of entries. It reads and writes O(edits × log n) nodes: every old
// subtree whose key range holds no edit and that starts where a new node
// starts is referenced whole without being read. New nodes are written in
// batches, children before parents; if Apply fails, the nodes it wrote are
// garbage. The key and value of an edit need only stay valid until the next
// is asked for.
func (t *Tree) Apply(ctx context.Context, root chunk.Hash, edits iter.Seq2[Edit, error]) (chunk.Hash, error) {
	next, stop := iter.Pull2(edits)
	defer stop()
	es := &editSource{next: next, first: true}
	if err := es.advance(); err != nil {
		return chunk.Hash{}, fmt.Errorf("apply: %w", err)
	}
	if !es.ok {
		return root, nil
	}
	out, err := t.apply(ctx, root, es)
	if err != nil {
		return chunk.Hash{}, fmt.Errorf("apply: %w", err)
	}
	return out, nil
}

// apply is Apply from its first edit on: it walks the old tree and the
// edits together, keeping whole every old subtree that no edit falls in.
func (t *Tree) apply(ctx context.Context, root chunk.Hash, es *editSource) (chunk.Hash, error) {
	b := newBuilder(t)
	defer b.release()
	b.skip = make(map[chunk.Hash]struct{}, 16)
	var old cursor
	if err := old.init(ctx, t, root); err != nil {
		return chunk.Hash{}, err
	}
	if len(old.stack) > 0 {
		b.remember(old.top().n.hash())
	}
	steps := 0
	for old.valid() {
		if steps++; steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return chunk.Hash{}, err
			}
		}
		f := old.top()
		k := f.n.keys[f.idx]
		// Every old key but a node's last has a level known from the shape:
		// a level-L node ends at the first key whose level is above L, and
		// a reference's key ended its child, so its level is at least L.
		lvl := f.n.level
		if f.idx == len(f.n.keys)-1 {
			lvl = t.level(k, &b.scratch)
		}
		if f.n.level > 0 {
			cl := f.n.level - 1
			// Keep the subtree whole if no edit falls in its range: edits up
			// to the previous key are consumed, so the next edit must be
			// beyond k, and beyond +inf if the subtree is the last of its
			// level (its last key does not end it).
			if b.canKeep(cl) && (!es.ok || (lvl > cl && bytes.Compare(es.cur.Key, k) > 0)) {
				if err := b.keep(ctx, cl, k, lvl, f.n.kids[f.idx], f.n.counts[f.idx]); err != nil {
					return chunk.Hash{}, err
				}
				f.idx++
				continue
			}
			if err := old.descend(ctx); err != nil {
				return chunk.Hash{}, err
			}
			b.remember(old.top().n.hash())
			continue
		}
		// Leaf entry k: merge with the edits.
		c := 1
		if es.ok {
			c = bytes.Compare(es.cur.Key, k)
		}
		if c > 0 { // no edit at or before k: keep it
			if err := b.addEntry(ctx, k, f.n.vals[f.idx], lvl); err != nil {
				return chunk.Hash{}, err
			}
			f.idx++
			continue
		}
		if err := t.applyEdit(ctx, b, es, f, k, lvl, c == 0); err != nil {
			return chunk.Hash{}, err
		}
	}
	return t.applyRest(ctx, b, es, steps)
}

// applyEdit applies the current edit, which is at or before the old leaf
// entry k (at f, of level lvl): an edit of k (same) replaces or deletes k,
// an edit before k inserts its key (or deletes a missing one).
func (t *Tree) applyEdit(ctx context.Context, b *builder, es *editSource, f *frame, k []byte, lvl int, same bool) error {
	if !same {
		return t.addEdit(ctx, b, es)
	}
	if !es.cur.Delete {
		if err := b.addEntry(ctx, k, es.cur.Value, lvl); err != nil {
			return err
		}
	}
	f.idx++
	return es.advance()
}

// applyRest adds the edits beyond the old tree's last key, steps counting
// on from the walk, and finishes the new tree.
func (t *Tree) applyRest(ctx context.Context, b *builder, es *editSource, steps int) (chunk.Hash, error) {
	for ; es.ok; steps++ {
		if steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return chunk.Hash{}, err
			}
		}
		if err := t.addEdit(ctx, b, es); err != nil {
			return chunk.Hash{}, err
		}
	}
	return b.finish(ctx)
}

// addEdit adds the current edit, whose key the old tree does not hold (a
// delete adds nothing), and moves to the next edit.
func (t *Tree) addEdit(ctx context.Context, b *builder, es *editSource) error {
	if !es.cur.Delete {
		if err := b.addEntry(ctx, es.cur.Key, es.cur.Value, t.level(es.cur.Key, &b.scratch)); err != nil {
			return err
		}
	}
	return es.advance()
}
