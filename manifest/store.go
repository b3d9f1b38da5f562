package manifest

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/tree"
)

// Key prefixes of the values this package stores in kv.
const (
	prefixNode    = keyspace.Node
	prefixContent = keyspace.Content
	prefixCommit  = keyspace.Commit
)

// NodeKey, ContentKey and CommitKey return the kv keys of stored values;
// callers that must write a value in their own transaction use them.
func NodeKey(h chunk.Hash) []byte    { return hashKey(prefixNode, h) }
func ContentKey(h chunk.Hash) []byte { return hashKey(prefixContent, h) }
func CommitKey(id CommitID) []byte   { return hashKey(prefixCommit, chunk.Hash(id)) }

// Kind names one of the kinds of value this package stores.
type Kind int

// The kinds of stored value.
const (
	KindNode Kind = iota
	KindContent
	KindCommit
)

var kindPrefix = [...]string{KindNode: prefixNode, KindContent: prefixContent, KindCommit: prefixCommit}

// ScanKeys calls fn with the hash and the kv key of every stored value of
// kind, in key order, for tools that sweep storage (gc). A key of the wrong
// length is skipped. fn must not keep key after it returns.
func ScanKeys(r kv.Reader, kind Kind, fn func(h chunk.Hash, key []byte) error) error {
	prefix := kindPrefix[kind]
	return r.Scan(kv.Prefix([]byte(prefix)), func(k, _ []byte) error {
		if len(k) != len(prefix)+chunk.HashSize {
			return nil
		}
		return fn(chunk.Hash(k[len(prefix):]), k)
	})
}

func hashKey(prefix string, h chunk.Hash) []byte {
	k := make([]byte, 0, len(prefix)+chunk.HashSize)
	return append(append(k, prefix...), h[:]...)
}

// Store keeps tree nodes, content lists and commits in kv. It implements
// tree.NodeStore.
type Store struct {
	db kv.DB
}

var _ tree.NodeStore = (*Store)(nil)

// NewStore returns a Store over db.
func NewStore(db kv.DB) *Store { return &Store{db: db} }

// DB returns the underlying kv store.
func (s *Store) DB() kv.DB { return s.db }

// GetNode implements tree.NodeStore.
func (s *Store) GetNode(ctx context.Context, h chunk.Hash) ([]byte, error) {
	b, err := s.get(ctx, NodeKey(h))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("node %s: %w", h, tree.ErrNodeNotFound)
	}
	return b, err
}

// PutNodes implements tree.NodeStore.
func (s *Store) PutNodes(ctx context.Context, nodes []tree.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	b := s.db.Batch(ctx)
	for _, n := range nodes {
		if err := b.Set(NodeKey(n.Hash), n.Data); err != nil {
			b.Cancel()
			return err
		}
	}
	return b.Flush()
}

// GetContent loads the content list named h and verifies its hash.
func (s *Store) GetContent(ctx context.Context, h chunk.Hash) (*Content, error) {
	b, err := s.get(ctx, ContentKey(h))
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", h, err)
	}
	if chunk.Sum(b) != h {
		return nil, fmt.Errorf("content %s: %w", h, ErrCorrupt)
	}
	return DecodeContent(b)
}

// Content returns e's content, loading it when it is stored by hash. A
// lazy entry has none here: ErrLazy.
func (s *Store) Content(ctx context.Context, e *Entry) (*Content, error) {
	if e.Content != nil {
		return e.Content, nil
	}
	if e.Lazy() {
		return nil, ErrLazy
	}
	if e.ContentRef.IsZero() {
		return &Content{}, nil
	}
	return s.GetContent(ctx, e.ContentRef)
}

// PutCommit stores c durably and returns its ID.
func (s *Store) PutCommit(ctx context.Context, c *Commit) (CommitID, error) {
	b := c.Encode()
	id := CommitID(chunk.Sum(b))
	err := s.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(CommitKey(id), b) })
	if err != nil {
		return id, fmt.Errorf("put commit: %w", err)
	}
	return id, nil
}

// GetCommit loads commit id and verifies its hash.
func (s *Store) GetCommit(ctx context.Context, id CommitID) (*Commit, error) {
	b, err := s.get(ctx, CommitKey(id))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", id, ErrNoSuchCommit)
	}
	if err != nil {
		return nil, err
	}
	if CommitID(chunk.Sum(b)) != id {
		return nil, fmt.Errorf("commit %s: %w", id, ErrCorrupt)
	}
	return DecodeCommit(b)
}

func (s *Store) get(ctx context.Context, key []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(key)
		out = v
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	return out, err
}
