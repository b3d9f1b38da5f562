package tree

import (
	"bytes"
	"context"
	"fmt"

	"github.com/agentnas/nas/chunk"
)

// Get returns the value of key in the tree root. It reads one node per level.
// The returned slice is shared with the node cache and must not be modified.
func (t *Tree) Get(ctx context.Context, root chunk.Hash, key []byte) ([]byte, bool, error) {
	h, want := root, -1
	for !h.IsZero() {
		n, err := t.load(ctx, h)
		if err != nil {
			return nil, false, fmt.Errorf("get %q: %w", short(key), err)
		}
		if want >= 0 && n.level != want {
			return nil, false, fmt.Errorf("get %q: node %s: level %d, want %d: %w", short(key), h, n.level, want, ErrCorrupt)
		}
		i := search(n.keys, key)
		if i == len(n.keys) {
			return nil, false, nil
		}
		if n.level == 0 {
			if bytes.Equal(n.keys[i], key) {
				return n.vals[i], true, nil
			}
			return nil, false, nil
		}
		h, want = n.kids[i], n.level-1
	}
	return nil, false, nil
}

// Iterator streams the entries of one tree in key order, within the bounds
// [lower, upper) given to NewIterator. It holds one path of nodes. An
// Iterator is not safe for concurrent use; the tree under it never changes.
//
//	it := t.NewIterator(root, nil, nil)
//	for ok := it.Next(ctx); ok; ok = it.Next(ctx) {
//		use(it.Key(), it.Value())
//	}
//	if err := it.Err(); err != nil { ... }
//
// Seek is cheap when the target lies ahead in the current node, so listing
// with a delimiter is a loop of Next and Seek past each common prefix.
type Iterator struct {
	c            cursor
	lower, upper []byte
	started      bool // positioned at least once
	at           bool // Key and Value are valid
	err          error
}

// NewIterator returns an Iterator over root's entries with keys in
// [lower, upper); a nil or empty upper means no upper bound. It reads nothing
// until the first Next or Seek.
func (t *Tree) NewIterator(root chunk.Hash, lower, upper []byte) *Iterator {
	it := &Iterator{lower: lower, upper: upper}
	if len(upper) == 0 {
		it.upper = nil
	}
	it.c.t, it.c.root = t, root
	return it
}

// Next moves to the next entry, or to the first one (at or after the lower
// bound) on a new Iterator, and reports whether there is one.
func (it *Iterator) Next(ctx context.Context) bool {
	if it.err != nil {
		return false
	}
	if !it.started {
		return it.Seek(ctx, it.lower)
	}
	if !it.at {
		return false
	}
	it.c.advance()
	ok, err := it.c.toEntry(ctx)
	return it.settle(ok, err)
}

// Seek moves to the first entry whose key is at least key (and at least the
// lower bound) and reports whether there is one before the upper bound.
// Seeking backwards is allowed; it reads from the root again.
func (it *Iterator) Seek(ctx context.Context, key []byte) bool {
	if it.err != nil {
		return false
	}
	if bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.started = true
	ok, err := it.c.seek(ctx, key)
	return it.settle(ok, err)
}

func (it *Iterator) settle(ok bool, err error) bool {
	if err != nil {
		it.err, it.at = fmt.Errorf("iterate: %w", err), false
		return false
	}
	it.at = ok && (it.upper == nil || bytes.Compare(it.c.key(), it.upper) < 0)
	return it.at
}

// Key returns the current key. It is valid while the last Next or Seek
// returned true; the slice itself stays valid after the Iterator moves on
// and must not be modified.
func (it *Iterator) Key() []byte {
	if !it.at {
		return nil
	}
	return it.c.key()
}

// Value returns the current value, under the same rules as Key.
func (it *Iterator) Value() []byte {
	if !it.at {
		return nil
	}
	return it.c.value()
}

// Err returns the error that stopped the Iterator, if any.
func (it *Iterator) Err() error { return it.err }
