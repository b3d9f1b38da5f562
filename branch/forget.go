package branch

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// ForgetKeys removes keys from branch br in one owner commit, protected
// or not, without putting them in the trash, and drops the trash entries
// of those keys a merge put there earlier. Staged changes are committed
// first (so the commit is over what the branch holds). Keys the branch
// does not hold are passed over; removed says how many it held. The
// content stays in the commits before (history is not rewritten here).
func (s *Service) ForgetKeys(ctx context.Context, repo, br string, keys []string, o CommitOptions) (id manifest.CommitID, removed int, err error) {
	staged := o
	staged.Message = "commit staged changes before forgetting"
	if _, err := s.Commit(ctx, repo, br, staged); err != nil && !errors.Is(err, ErrNothingToCommit) && !errors.Is(err, ErrProtected) {
		return id, 0, err
	}
	var edits []tree.Edit
	for _, k := range keys {
		if _, err := s.Get(ctx, repo, br, k); err == nil {
			edits = append(edits, tree.Edit{Key: []byte(k), Delete: true})
		} else if !errors.Is(err, ErrNoSuchKey) {
			return id, 0, err
		}
	}
	if len(edits) > 0 {
		t, err := s.treeOf(ctx, repo)
		if err != nil {
			return id, 0, err
		}
		id, err = s.ownerCommit(ctx, repo, br, func(head chunk.Hash) (chunk.Hash, error) {
			return t.Apply(ctx, head, tree.SliceEdits(edits))
		}, o)
		if err != nil {
			return id, 0, fmt.Errorf("forget on %s/%s: %w", repo, br, err)
		}
	}
	return id, len(edits), s.dropTrash(ctx, repo, keys)
}

// treeOf is repo's tree.
func (s *Service) treeOf(ctx context.Context, repo string) (*tree.Tree, error) {
	var t *tree.Tree
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err == nil {
			t = s.treeFor(rr)
		}
		return err
	})
	return t, err
}

// dropTrash deletes every trash entry of keys.
func (s *Service) dropTrash(ctx context.Context, repo string, keys []string) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		for _, k := range keys {
			var old [][]byte
			p := escKey(trashPrefix(rr.ID), k)
			err := txn.Scan(kv.Prefix(p), func(key, _ []byte) error {
				if len(key) == len(p)+8 { // this key's entries, not a longer key's
					old = append(old, append([]byte(nil), key...))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, key := range old {
				if err := txn.Delete(key); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
