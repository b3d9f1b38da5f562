package tree

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/agentnas/nas/chunk"
)

// DefaultCacheBytes is the memory budget of a Cache made with a size of 0.
const DefaultCacheBytes = 64 << 20

// Cache is a NodeStore decorator that keeps decoded, verified nodes in a
// least-recently-used list bounded by their approximate memory. Reads of a
// tree hit the same upper nodes constantly; a Tree over a Cache decodes each
// node once while it stays cached. Decoded nodes are immutable and shared by
// every reader. Share one Cache between the Trees of one store. It is safe
// for concurrent use.
type Cache struct {
	store NodeStore
	max   int64

	mu    sync.Mutex // guards items, lru and bytes
	items map[chunk.Hash]*list.Element
	lru   *list.List // of *node, most recent first
	bytes int64

	hits, misses atomic.Int64
}

var (
	_ NodeStore  = (*Cache)(nil)
	_ nodeLoader = (*Cache)(nil)
)

// NewCache returns a Cache over store holding about maxBytes of decoded
// nodes (DefaultCacheBytes when maxBytes <= 0).
func NewCache(store NodeStore, maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{store: store, max: maxBytes, items: make(map[chunk.Hash]*list.Element), lru: list.New()}
}

// GetNode implements NodeStore: it returns the encoding of a cached node, or
// asks the underlying store without caching or verifying anything.
func (c *Cache) GetNode(ctx context.Context, h chunk.Hash) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.items[h]
	c.mu.Unlock()
	if ok {
		return e.Value.(*node).data, nil
	}
	return c.store.GetNode(ctx, h)
}

// PutNodes implements NodeStore by writing through to the underlying store,
// then keeping the nodes it wrote: what a commit or merge writes is what
// the next diff, merge or read of the new head loads first. The hashes are
// the writer's, computed over the same bytes, so nothing is re-hashed; the
// cache keeps each node's Data, which the caller must not modify afterwards
// (the tree's builder allocates it per node).
func (c *Cache) PutNodes(ctx context.Context, nodes []Node) error {
	if err := c.store.PutNodes(ctx, nodes); err != nil {
		return err
	}
	for _, nd := range nodes {
		// A node already held, or too big to keep (memSize exceeds the
		// encoding), is not worth decoding.
		if int64(len(nd.Data)) > c.max/4 || c.has(nd.Hash) {
			continue
		}
		n, err := decodeNode(nd.Data)
		if err != nil {
			continue // not ours to judge here; a load verifies and fails
		}
		n.h = nd.Hash
		c.insert(n)
	}
	return nil
}

func (c *Cache) has(h chunk.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[h]
	return ok
}

// CacheStats are a Cache's counters.
type CacheStats struct {
	Hits, Misses int64 // lookups answered from memory, and from the store
	Nodes        int   // nodes held
	Bytes        int64 // approximate memory held
}

// Stats returns the Cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Nodes: len(c.items), Bytes: c.bytes}
}

func (c *Cache) loadNode(ctx context.Context, h chunk.Hash) (*node, error) {
	c.mu.Lock()
	if e, ok := c.items[h]; ok {
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		c.hits.Add(1)
		return e.Value.(*node), nil
	}
	c.mu.Unlock()
	c.misses.Add(1)
	// Concurrent misses of one node may both read it; they decode equal
	// nodes and the second insert is dropped.
	n, err := fetchNode(ctx, c.store, h)
	if err != nil {
		return nil, err
	}
	return c.insert(n), nil
}

// insert keeps n (unless it is too big to be worth evicting a quarter of
// the cache) and returns the cached node of its hash.
func (c *Cache) insert(n *node) *node {
	size := n.memSize()
	if size > c.max/4 {
		return n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[n.h]; ok {
		return e.Value.(*node)
	}
	c.items[n.h] = c.lru.PushFront(n)
	c.bytes += size
	for c.bytes > c.max {
		e := c.lru.Back()
		old := c.lru.Remove(e).(*node)
		delete(c.items, old.h)
		c.bytes -= old.memSize()
	}
	return n
}
