package branch

import (
	"context"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/tree"
)

// treeFor returns the tree handle of a repository (its salt shapes every
// tree of the repository).
func (s *Service) treeFor(rr *repoRecord) *tree.Tree {
	if t, ok := s.trees.Load(rr.ID); ok {
		return t.(*tree.Tree)
	}
	t, _ := s.trees.LoadOrStore(rr.ID, tree.New(s.nodes, tree.Config{Salt: rr.Salt}))
	return t.(*tree.Tree)
}

// treeSource adapts a tree Iterator to source. Seeking is cheap (the
// Iterator keeps its path of nodes); the current key is kept as a string
// because a merged source peeks at it several times per item.
type treeSource struct {
	ctx context.Context
	it  *tree.Iterator
	ok  bool
	key string // the current key while ok
}

func newTreeSource(ctx context.Context, t *tree.Tree, root chunk.Hash) *treeSource {
	return &treeSource{ctx: ctx, it: t.NewIterator(root, nil, nil)}
}

func (s *treeSource) seek(key string) {
	if s.ok && s.key >= key {
		return
	}
	s.settle(s.it.Seek(s.ctx, []byte(key)))
}

func (s *treeSource) settle(ok bool) {
	s.ok, s.key = ok, ""
	if ok {
		s.key = string(s.it.Key())
	}
}

func (s *treeSource) peek() (string, []byte, bool, bool) {
	if !s.ok {
		return "", nil, false, false
	}
	return s.key, s.it.Value(), false, true
}

func (s *treeSource) next() { s.settle(s.it.Next(s.ctx)) }

func (s *treeSource) err() error { return s.it.Err() }
