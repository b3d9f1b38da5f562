package tree

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"sync"

	"github.com/agentnas/nas/chunk"
)

// This file holds what only the tests use; being in package tree, it is
// visible to the external tests too.

// MemStore is a NodeStore in memory, for tests.
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

// SliceEntries returns a sequence over entries, for Build.
func SliceEntries(entries []Entry) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for _, e := range entries {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// encodeNode returns the canonical encoding of n's content; the builder
// produces the same bytes incrementally.
func encodeNode(n *node) []byte {
	buf := []byte{nodeVersion, byte(n.level)}
	buf = binary.AppendUvarint(buf, uint64(len(n.keys)))
	for i, k := range n.keys {
		var prev []byte
		if i > 0 {
			prev = n.keys[i-1]
		}
		buf = appendKey(buf, prev, k, i == 0)
		if n.level == 0 {
			buf = binary.AppendUvarint(buf, uint64(len(n.vals[i])))
			buf = append(buf, n.vals[i]...)
		} else {
			buf = append(buf, n.kids[i][:]...)
			buf = binary.AppendUvarint(buf, n.counts[i])
		}
	}
	return buf
}
