package tree

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentnas/nas/chunk"
)

// Node is one encoded tree node as handed to a NodeStore: Data is the
// canonical encoding and Hash is chunk.Sum(Data).
type Node struct {
	Hash chunk.Hash
	Data []byte
}

// NodeStore keeps encoded nodes by hash. Nodes are immutable, so a store may
// cache, replicate and deduplicate them freely. Implementations must be safe
// for concurrent use.
type NodeStore interface {
	// GetNode returns the encoding of the node named h, or an error wrapping
	// ErrNodeNotFound. The tree verifies the hash of what it gets and never
	// modifies the returned slice; the store must not modify it either once
	// returned.
	GetNode(ctx context.Context, h chunk.Hash) ([]byte, error)
	// PutNodes stores nodes durably before returning. Storing a node that is
	// already present is not an error. The store must not keep nodes (the
	// slice) after returning, but may keep each node's Data.
	PutNodes(ctx context.Context, nodes []Node) error
}

// MemStore is a NodeStore in memory, for tests and small tools.
type MemStore struct {
	mu    sync.RWMutex // guards nodes
	nodes map[chunk.Hash][]byte
}

var _ NodeStore = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{nodes: make(map[chunk.Hash][]byte)}
}

// GetNode implements NodeStore.
func (m *MemStore) GetNode(ctx context.Context, h chunk.Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	b, ok := m.nodes[h]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("node %s: %w", h, ErrNodeNotFound)
	}
	return b, nil
}

// PutNodes implements NodeStore; it keeps copies of the data.
func (m *MemStore) PutNodes(ctx context.Context, nodes []Node) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range nodes {
		if _, ok := m.nodes[n.Hash]; ok {
			continue
		}
		m.nodes[n.Hash] = append([]byte(nil), n.Data...)
	}
	return nil
}

// Len returns the number of nodes stored.
func (m *MemStore) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.nodes)
}

// Bytes returns the total size of the stored encodings.
func (m *MemStore) Bytes() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var n int64
	for _, b := range m.nodes {
		n += int64(len(b))
	}
	return n
}

// Delete removes the node named h, as a garbage collector would; it is for
// tests of missing nodes.
func (m *MemStore) Delete(h chunk.Hash) {
	m.mu.Lock()
	delete(m.nodes, h)
	m.mu.Unlock()
}

// Hashes returns the names of all stored nodes, in no particular order.
func (m *MemStore) Hashes() []chunk.Hash {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]chunk.Hash, 0, len(m.nodes))
	for h := range m.nodes {
		out = append(out, h)
	}
	return out
}

// Corrupt replaces the stored data of h with data, for tests of corruption.
func (m *MemStore) Corrupt(h chunk.Hash, data []byte) {
	m.mu.Lock()
	m.nodes[h] = data
	m.mu.Unlock()
}
