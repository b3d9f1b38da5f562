package tree

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/chunk"
)

// NodeView is a read-only view of one node handed to a Walk callback. It is
// valid during the callback only; the slices it returns stay valid after and
// must not be modified.
type NodeView struct {
	n *node
}

// Hash returns the node's hash.
func (v *NodeView) Hash() chunk.Hash { return v.n.h }

// Level returns the node's level; 0 is a leaf.
func (v *NodeView) Level() int { return v.n.level }

// Len returns the number of entries (leaf) or children (internal node).
func (v *NodeView) Len() int { return len(v.n.keys) }

// Size returns the length of the node's encoding in bytes.
func (v *NodeView) Size() int { return len(v.n.data) }

// Key returns the key of entry i (leaf) or the last key under child i.
func (v *NodeView) Key(i int) []byte { return v.n.keys[i] }

// Value returns the value of entry i of a leaf; it panics on an internal
// node.
func (v *NodeView) Value(i int) []byte { return v.n.vals[i] }

// Child returns the hash of child i of an internal node; it panics on a leaf.
func (v *NodeView) Child(i int) chunk.Hash { return v.n.kids[i] }

// Walk visits every node of the tree root once, parents before children, in
// key order, calling fn with each. If fn returns SkipSubtree for an internal
// node its children are not read (a mark phase that has already marked a
// node skips it this way); any other error stops the walk and is returned.
// Leaf values are reachable through NodeView.Value. Walk holds one path.
func (t *Tree) Walk(ctx context.Context, root chunk.Hash, fn func(v *NodeView) error) error {
	if root.IsZero() {
		return nil
	}
	if err := t.walk(ctx, root, -1, fn); err != nil {
		return fmt.Errorf("walk %s: %w", root, err)
	}
	return nil
}

func (t *Tree) walk(ctx context.Context, h chunk.Hash, want int, fn func(v *NodeView) error) error {
	n, err := t.load(ctx, h)
	if err != nil {
		return err
	}
	if want >= 0 && n.level != want {
		return fmt.Errorf("node %s: level %d, want %d: %w", h, n.level, want, ErrCorrupt)
	}
	err = fn(&NodeView{n: n})
	if errors.Is(err, SkipSubtree) || n.level == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	for _, kid := range n.kids {
		if err := t.walk(ctx, kid, n.level-1, fn); err != nil {
			return err
		}
	}
	return nil
}

// Check verifies that root is a canonical tree for t's Config: every node is
// present, hashes to its name and decodes; children sit one level below
// their parent, inside the key range their reference gives them, with the
// counts it claims; every node ends exactly at the first key whose level is
// above its own (the last node of a level at the end); and the root is the
// lowest level with a single node. It reads the whole tree and hashes every
// key, so it is for fsck and tests. Errors wrap ErrCorrupt or the store's
// error.
func (t *Tree) Check(ctx context.Context, root chunk.Hash) error {
	if root.IsZero() {
		return nil
	}
	c := &checker{t: t}
	n, err := t.load(ctx, root)
	if err != nil {
		return fmt.Errorf("check %s: %w", root, err)
	}
	if n.level > 0 && len(n.keys) < 2 {
		return fmt.Errorf("check %s: root has one child: %w", root, ErrCorrupt)
	}
	if _, err := c.node(ctx, n, nil, false, true); err != nil {
		return fmt.Errorf("check %s: %w", root, err)
	}
	return nil
}

type checker struct {
	t       *Tree
	scratch []byte
	steps   int
}

// node checks n, whose keys must be above lo, and returns its entry count.
// rightmost says n is the last node of its level.
func (c *checker) node(ctx context.Context, n *node, lo []byte, hasLo, rightmost bool) (uint64, error) {
	if c.steps++; c.steps%ctxCheckEvery == 0 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	if hasLo && bytes.Compare(n.keys[0], lo) <= 0 {
		return 0, fmt.Errorf("node %s: first key not above its lower bound: %w", n.h, ErrCorrupt)
	}
	last := len(n.keys) - 1
	for i, k := range n.keys {
		lvl := c.t.level(k, &c.scratch)
		// Items before the last neither end the node (level <= L) nor, in
		// an internal node, fail to end their child (level >= L).
		if i < last && lvl != n.level {
			return 0, fmt.Errorf("node %s: item %d has level %d inside a level %d node: %w", n.h, i, lvl, n.level, ErrCorrupt)
		}
		if i == last && !rightmost && lvl <= n.level {
			return 0, fmt.Errorf("node %s: ends at a key of level %d: %w", n.h, lvl, ErrCorrupt)
		}
	}
	if n.level == 0 {
		return uint64(len(n.keys)), nil
	}
	var total uint64
	for i, kid := range n.kids {
		child, err := c.t.load(ctx, kid)
		if err != nil {
			return 0, err
		}
		if child.level != n.level-1 {
			return 0, fmt.Errorf("node %s: level %d under level %d: %w", kid, child.level, n.level, ErrCorrupt)
		}
		if !bytes.Equal(child.last(), n.keys[i]) {
			return 0, fmt.Errorf("node %s: last key differs from its reference: %w", kid, ErrCorrupt)
		}
		clo, chasLo := lo, hasLo
		if i > 0 {
			clo, chasLo = n.keys[i-1], true
		}
		cnt, err := c.node(ctx, child, clo, chasLo, rightmost && i == last)
		if err != nil {
			return 0, err
		}
		if cnt != n.counts[i] {
			return 0, fmt.Errorf("node %s: count %d, reference says %d: %w", kid, cnt, n.counts[i], ErrCorrupt)
		}
		total += cnt
	}
	return total, nil
}
