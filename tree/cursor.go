package tree

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/agentnas/nas/chunk"
)

// frame is one node on a cursor's path and the position in it.
type frame struct {
	n   *node
	idx int
	// lo is the exclusive lower bound of the keys under n (the last key
	// before n's subtree); hasLo is false for the leftmost nodes.
	lo    []byte
	hasLo bool
}

// itemLo returns the exclusive lower bound of the subtree under item idx.
func (f *frame) itemLo() ([]byte, bool) {
	if f.idx > 0 {
		return f.n.keys[f.idx-1], true
	}
	return f.lo, f.hasLo
}

// cursor is a position in a tree: a path of frames from the root. The top
// frame's idx is either a leaf entry or, in an internal node, a child
// reference whose subtree has not been read: "at a ref" means at the start
// of that whole subtree. Memory is one path.
type cursor struct {
	t     *Tree
	root  chunk.Hash
	stack []frame
}

func (c *cursor) init(ctx context.Context, t *Tree, root chunk.Hash) error {
	c.t, c.root, c.stack = t, root, c.stack[:0]
	if root.IsZero() {
		return nil
	}
	n, err := t.load(ctx, root)
	if err != nil {
		return err
	}
	c.stack = append(c.stack, frame{n: n})
	return nil
}

func (c *cursor) top() *frame { return &c.stack[len(c.stack)-1] }

// valid pops exhausted frames and reports whether c has a position left.
func (c *cursor) valid() bool {
	for len(c.stack) > 0 {
		f := c.top()
		if f.idx < len(f.n.keys) {
			return true
		}
		c.stack = c.stack[:len(c.stack)-1]
		if len(c.stack) > 0 {
			c.top().idx++
		}
	}
	return false
}

// Accessors of the current position; they require valid().
func (c *cursor) atRef() bool      { return c.top().n.level > 0 }
func (c *cursor) key() []byte      { f := c.top(); return f.n.keys[f.idx] }
func (c *cursor) value() []byte    { f := c.top(); return f.n.vals[f.idx] }
func (c *cursor) hash() chunk.Hash { f := c.top(); return f.n.kids[f.idx] }
func (c *cursor) refLevel() int    { return c.top().n.level - 1 }
func (c *cursor) advance()         { c.top().idx++ }

// descend reads the subtree of the current reference and moves to its first
// item, checking that the child fits where its parent puts it.
func (c *cursor) descend(ctx context.Context) error {
	f := c.top()
	h, want, last := f.n.kids[f.idx], f.n.level-1, f.n.keys[f.idx]
	lo, hasLo := f.itemLo()
	child, err := c.t.load(ctx, h)
	if err != nil {
		return err
	}
	if child.level != want {
		return fmt.Errorf("node %s: level %d under level %d: %w", h, child.level, want+1, ErrCorrupt)
	}
	if !bytes.Equal(child.last(), last) || (hasLo && bytes.Compare(child.keys[0], lo) <= 0) {
		return fmt.Errorf("node %s: keys outside the range of its reference: %w", h, ErrCorrupt)
	}
	c.stack = append(c.stack, frame{n: child, lo: lo, hasLo: hasLo})
	return nil
}

// toEntry moves to the next leaf entry, descending through references; it
// reports whether there is one.
func (c *cursor) toEntry(ctx context.Context) (bool, error) {
	for c.valid() {
		if !c.atRef() {
			return true, nil
		}
		if err := c.descend(ctx); err != nil {
			return false, err
		}
	}
	return false, nil
}

// search returns the index of the first key >= target.
func search(keys [][]byte, target []byte) int {
	i, _ := slices.BinarySearchFunc(keys, target, bytes.Compare)
	return i
}

// seek moves to the first leaf entry >= target and reports whether there is
// one. It reuses the deepest frame of the current path whose range holds
// target, so a forward seek within one leaf reads no node.
func (c *cursor) seek(ctx context.Context, target []byte) (bool, error) {
	if c.root.IsZero() {
		return false, nil
	}
	if len(c.stack) == 0 {
		if err := c.init(ctx, c.t, c.root); err != nil {
			return false, err
		}
	}
	i := len(c.stack) - 1
	for ; i > 0; i-- {
		f := &c.stack[i]
		if (!f.hasLo || bytes.Compare(target, f.lo) > 0) && bytes.Compare(target, f.n.last()) <= 0 {
			break
		}
	}
	c.stack = c.stack[:i+1]
	for {
		f := c.top()
		f.idx = search(f.n.keys, target)
		if f.idx == len(f.n.keys) {
			// Only the root can lack the target: it is beyond the last key.
			return c.valid(), nil
		}
		if f.n.level == 0 {
			return true, nil
		}
		if err := c.descend(ctx); err != nil {
			return false, err
		}
	}
}
