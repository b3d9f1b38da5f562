package branch

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// GetAt returns key's entry as of commit id of repo, on whatever branch
// the commit was made: ErrNoSuchVersion when repo has no such commit,
// ErrNoSuchKey when the key did not exist then. It checks no branch's
// lineage: a caller bound to a branch checks first that the branch has
// seen the commit (Sees).
func (s *Service) GetAt(ctx context.Context, repo string, id manifest.CommitID, key string) (*manifest.Entry, error) {
	var entry []byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		if _, err := s.commitInfo(r, rr, id); errors.Is(err, manifest.ErrNoSuchCommit) {
			return fmt.Errorf("%s as of %s: %w", key, id, ErrNoSuchVersion)
		} else if err != nil {
			return err
		}
		root, err := s.root(ctx, id)
		if err != nil {
			return err
		}
		val, found, err := s.treeFor(rr).Get(ctx, root, []byte(key))
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s as of %s: %w", key, id, ErrNoSuchKey)
		}
		entry = val
		return nil
	})
	if err != nil {
		return nil, err
	}
	return manifest.DecodeEntry(entry)
}
