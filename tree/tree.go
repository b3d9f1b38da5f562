package tree

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"

	"github.com/agentnas/nas/chunk"
)

// DefaultLevelBits is B in level(key) = trailingZeros(h(key)) / B: each key
// ends a node at level L with probability 2^-(B*(L+1)), so nodes hold 2^B = 32
// items on average.
const DefaultLevelBits = 5

// Config describes a tree's shape. Roots are only meaningful with the Config
// that built them: a root read with another Config reads correctly, but
// edits to it produce a tree that is no longer canonical, so two equal sets
// may then get different roots.
type Config struct {
	// Salt, when not empty, keys the level hash, so that only holders of the
	// salt can tell where node boundaries fall. Without a salt, anyone who
	// chooses keys can pick keys that never end a node and so build one
	// giant leaf, making every edit near it cost O(n). Give each repository
	// a random secret salt of 16 bytes or more and keep it with the
	// repository; it is part of the tree's identity.
	Salt []byte
}

// Tree reads and writes trees whose nodes live in one NodeStore. A Tree holds
// no mutable state: every method is safe for concurrent use, and a root
// (chunk.Hash) is the whole handle of a tree version. The zero hash is the
// empty tree.
type Tree struct {
	store     NodeStore
	salt      []byte    // 32-byte key prefix derived from Config.Salt; nil without salt
	levelBits int       // B
	maxLevel  int       // 64 / B
	builders  sync.Pool // of *builder, reused to keep their buffers
}

// New returns a Tree over store. Wrap the store with NewCache to keep decoded
// nodes in memory.
func New(store NodeStore, cfg Config) *Tree {
	t := &Tree{store: store}
	if len(cfg.Salt) > 0 {
		s := chunk.Sum(append([]byte("agentnas tree level salt v1\x00"), cfg.Salt...))
		t.salt = s[:]
	}
	t.setLevelBits(DefaultLevelBits)
	return t
}

// setLevelBits changes B; tests use small B to get deep trees from few keys.
// It must be called before the Tree is used.
func (t *Tree) setLevelBits(b int) {
	t.levelBits = b
	t.maxLevel = 64 / b
}

// Store returns the NodeStore the Tree reads and writes.
func (t *Tree) Store() NodeStore { return t.store }

// level returns the level of key: the number of whole groups of B trailing
// zero bits in the first 8 bytes (little endian) of BLAKE3(salt || key).
// scratch is reused to build the salted input.
func (t *Tree) level(key []byte, scratch *[]byte) int {
	var h chunk.Hash
	if t.salt == nil {
		h = chunk.Sum(key)
	} else {
		b := append(append((*scratch)[:0], t.salt...), key...)
		*scratch = b
		h = chunk.Sum(b)
	}
	return bits.TrailingZeros64(binary.LittleEndian.Uint64(h[:8])) / t.levelBits
}

// nodeLoader is implemented by stores that hand out decoded, verified nodes
// (Cache).
type nodeLoader interface {
	loadNode(ctx context.Context, h chunk.Hash) (*node, error)
}

// fetchNode reads, verifies and decodes node h from store.
func fetchNode(ctx context.Context, store NodeStore, h chunk.Hash) (*node, error) {
	data, err := store.GetNode(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", h, err)
	}
	if chunk.Sum(data) != h {
		return nil, fmt.Errorf("node %s: hash mismatch: %w", h, ErrCorrupt)
	}
	n, err := decodeNode(data)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", h, err)
	}
	n.h = h
	return n, nil
}

// load returns the decoded node h.
func (t *Tree) load(ctx context.Context, h chunk.Hash) (*node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var n *node
	var err error
	if l, ok := t.store.(nodeLoader); ok {
		n, err = l.loadNode(ctx, h)
	} else {
		n, err = fetchNode(ctx, t.store, h)
	}
	if err != nil {
		return nil, err
	}
	if n.level > t.maxLevel {
		return nil, fmt.Errorf("node %s: level %d above %d: %w", h, n.level, t.maxLevel, ErrCorrupt)
	}
	return n, nil
}

// Count returns the number of entries in the tree root, reading one node.
func (t *Tree) Count(ctx context.Context, root chunk.Hash) (uint64, error) {
	if root.IsZero() {
		return 0, nil
	}
	n, err := t.load(ctx, root)
	if err != nil {
		return 0, err
	}
	return n.count(), nil
}
