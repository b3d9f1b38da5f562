package tree

import (
	"context"

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
