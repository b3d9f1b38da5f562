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

// diff is DiffRange for distinct roots: it walks both trees in key order,
// skipping equal subtrees, and calls fn for every entry that differs. The
// steps that cost nothing (past equal subtrees, past equal entries) are
// taken inline; a descent or a change is a call.
func (t *Tree) diff(ctx context.Context, from, to chunk.Hash, lower, upper []byte, fn func(Change) error) error {
	if len(upper) == 0 {
		upper = nil
	}
	a := &diffSide{upper: upper}
	b := &diffSide{upper: upper}
	if err := a.open(ctx, t, from, lower); err != nil {
		return err
	}
	if err := b.open(ctx, t, to, lower); err != nil {
		return err
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
		if aRef && bRef && a.hash() == b.hash() {
			// Equal subtrees hold equal keys: both sides have consumed
			// exactly the keys before them.
			a.advance()
			b.advance()
			continue
		}
		if aRef || bRef {
			if err := descendRefs(ctx, a, b, aRef, bRef); err != nil {
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
		if c == 0 && bytes.Equal(a.value(), b.value()) {
			a.advance()
			b.advance()
			continue
		}
		if err := diffEntries(a, b, c, fn); err != nil {
			return err
		}
	}
}

// open puts s at the start of root, or at lower when it is set.
func (s *diffSide) open(ctx context.Context, t *Tree, root chunk.Hash, lower []byte) error {
	if err := s.init(ctx, t, root); err != nil {
		return err
	}
	if len(lower) > 0 {
		if _, err := s.seek(ctx, lower); err != nil {
			return err
		}
	}
	return nil
}

// descendRefs moves a diff on when at least one side is at a reference
// (aRef, bRef) and the two are not the same subtree: into the subtree of
// the higher reference, or of both when their levels are equal.
func descendRefs(ctx context.Context, a, b *diffSide, aRef, bRef bool) error {
	switch {
	case aRef && bRef:
		la, lb := a.refLevel(), b.refLevel()
		if la >= lb {
			if err := a.descend(ctx); err != nil {
				return err
			}
		}
		if lb >= la {
			return b.descend(ctx)
		}
		return nil
	case aRef:
		// The other side is at an entry, which is above everything a
		// has consumed (the merge consumes keys in order), so the entry
		// may lie in a's subtree.
		return a.descend(ctx)
	default:
		return b.descend(ctx)
	}
}

// diffEntries calls fn for the leaf entries the sides are at, which differ:
// c < 0 means a's key is the smaller (or b is done), c > 0 b's, c == 0 the
// same key with different values. It advances past what it reported.
func diffEntries(a, b *diffSide, c int, fn func(Change) error) error {
	var err error
	switch {
	case c < 0:
		err = fn(Change{Key: a.key(), Old: a.value()})
		a.advance()
	case c > 0:
		err = fn(Change{Key: b.key(), New: b.value()})
		b.advance()
	default:
		err = fn(Change{Key: a.key(), Old: a.value(), New: b.value()})
		a.advance()
		b.advance()
	}
	return err
}
