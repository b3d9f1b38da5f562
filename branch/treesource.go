package branch

import (
	"context"

	"github.com/agentnas/nas/cas"
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

// treeSource adapts a tree Iterator to source.
type treeSource struct {
	ctx context.Context
	it  *tree.Iterator
	ok  bool
}

func newTreeSource(ctx context.Context, t *tree.Tree, root cas.Hash) *treeSource {
	return &treeSource{ctx: ctx, it: t.NewIterator(root, nil, nil)}
}

func (s *treeSource) seek(key string) {
	if s.ok && string(s.it.Key()) >= key {
		return
	}
	s.ok = s.it.Seek(s.ctx, []byte(key))
}

func (s *treeSource) peek() (string, []byte, bool, bool) {
	if !s.ok {
		return "", nil, false, false
	}
	return string(s.it.Key()), s.it.Value(), false, true
}

func (s *treeSource) next() { s.ok = s.it.Next(s.ctx) }

func (s *treeSource) err() error { return s.it.Err() }
