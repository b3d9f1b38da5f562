package tree

import (
	"bytes"
	"context"
	"fmt"

	"github.com/agentnas/nas/chunk"
)

// Change is one difference between two trees. Old is nil when Key was added,
// New is nil when it was deleted; both are set when its value changed (an
// empty value is a non-nil empty slice). The slices are shared with the node
// cache, stay valid after the callback returns and must not be modified.
type Change struct {
	Key, Old, New []byte
}

// Diff calls fn for every difference from tree from to tree to, in key
// order. Subtrees with equal hashes are skipped without being read, so the
// cost is O(changes × log n) node reads; the zero hash (the empty tree) on
// either side makes every entry of the other a change. An error from fn stops
// the diff and is returned.
func (t *Tree) Diff(ctx context.Context, from, to chunk.Hash, fn func(Change) error) error {
	return t.DiffRange(ctx, from, to, nil, nil, fn)
}

// DiffRange is Diff restricted to keys in [lower, upper); a nil or empty
// bound is open.
func (t *Tree) DiffRange(ctx context.Context, from, to chunk.Hash, lower, upper []byte, fn func(Change) error) error {
	if from == to {
		return nil
	}
	if err := t.diff(ctx, from, to, lower, upper, fn); err != nil {
		return fmt.Errorf("diff %s..%s: %w", from, to, err)
	}
	return nil
}

// diffSide is one side of a diff: a cursor and whether it still has
// something before the upper bound.
type diffSide struct {
	cursor
	upper []byte
}

// live reports whether the side has a position below the upper bound.
func (s *diffSide) live() bool {
	if !s.valid() {
		return false
	}
	if s.upper == nil {
		return true
	}
	if !s.atRef() {
		return bytes.Compare(s.key(), s.upper) < 0
	}
	lo, ok := s.top().itemLo()
	return !ok || bytes.Compare(lo, s.upper) < 0
}

func (t *Tree) diff(ctx context.Context, from, to chunk.Hash, lower, upper []byte, fn func(Change) error) error {
	if len(upper) == 0 {
		upper = nil
	}
	a := &diffSide{upper: upper}
	b := &diffSide{upper: upper}
	for _, s := range []struct {
		side *diffSide
		root chunk.Hash
	}{{a, from}, {b, to}} {
		if err := s.side.init(ctx, t, s.root); err != nil {
			return err
		}
		if len(lower) > 0 {
			if _, err := s.side.seek(ctx, lower); err != nil {
				return err
			}
		}
	}
	for steps := 1; ; steps++ {
		if steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		al, bl := a.live(), b.live()
		if !al && !bl {
			return nil
		}
		aRef, bRef := al && a.atRef(), bl && b.atRef()
		switch {
		case aRef && bRef:
			if a.hash() == b.hash() {
				// Equal subtrees hold equal keys: both sides have consumed
				// exactly the keys before them.
				a.advance()
				b.advance()
				continue
			}
			la, lb := a.refLevel(), b.refLevel()
			if la >= lb {
				if err := a.descend(ctx); err != nil {
					return err
				}
			}
			if lb >= la {
				if err := b.descend(ctx); err != nil {
					return err
				}
			}
			continue
		case aRef:
			// The other side is at an entry, which is above everything a
			// has consumed (the merge consumes keys in order), so the entry
			// may lie in a's subtree.
			if err := a.descend(ctx); err != nil {
				return err
			}
			continue
		case bRef:
			if err := b.descend(ctx); err != nil {
				return err
			}
			continue
		}
		// Each side is at a leaf entry or done.
		c := 0
		switch {
		case !al:
			c = 1
		case !bl:
			c = -1
		default:
			c = bytes.Compare(a.key(), b.key())
		}
		var err error
		switch {
		case c < 0:
			err = fn(Change{Key: a.key(), Old: a.value()})
			a.advance()
		case c > 0:
			err = fn(Change{Key: b.key(), New: b.value()})
			b.advance()
		default:
			if av, bv := a.value(), b.value(); !bytes.Equal(av, bv) {
				err = fn(Change{Key: a.key(), Old: av, New: bv})
			}
			a.advance()
			b.advance()
		}
		if err != nil {
			return err
		}
	}
}
