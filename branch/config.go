package branch

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// A repository configuration document is a small named document kept
// beside a repository, outside its history: bucket-level settings of the
// S3 edge (tagging and ACLs today; CORS later) that are not object data.
// The branch package stores the bytes and knows nothing of their format;
// each name has one owner that reads and writes it. Deleting the
// repository deletes its documents.

// MaxRepoConfig is the largest configuration document, 64 KiB.
const MaxRepoConfig = 64 << 10

// ValidConfigName checks a configuration document's name: 1 to 32 of
// [a-z0-9-], starting with a letter ("tagging", "cors").
func ValidConfigName(name string) error {
	ok := len(name) >= 1 && len(name) <= 32 && name[0] >= 'a' && name[0] <= 'z'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("configuration name %q: want 1-32 of [a-z0-9-], starting with a letter: %w", name, ErrInvalid)
	}
	return nil
}

func repoConfigKey(repo uint64, name string) []byte {
	return append(u64([]byte(keyspace.RepoConfig), repo), name...)
}

// SetRepoConfig stores doc as the configuration document name of repo,
// replacing any earlier one.
func (s *Service) SetRepoConfig(ctx context.Context, repo, name string, doc []byte) error {
	if err := ValidConfigName(name); err != nil {
		return err
	}
	if len(doc) > MaxRepoConfig {
		return fmt.Errorf("configuration %s of %d bytes: at most %d: %w", name, len(doc), MaxRepoConfig, ErrInvalid)
	}
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		return txn.Set(repoConfigKey(rr.ID, name), doc)
	})
}

// RepoConfig returns the configuration document name of repo, or
// ErrNoSuchConfig when it has none.
func (s *Service) RepoConfig(ctx context.Context, repo, name string) ([]byte, error) {
	if err := ValidConfigName(name); err != nil {
		return nil, err
	}
	var doc []byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		v, err := r.Get(repoConfigKey(rr.ID, name))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("%s of %s: %w", name, repo, ErrNoSuchConfig)
		}
		doc = append([]byte(nil), v...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// DeleteRepoConfig removes the configuration document name of repo;
// removing one that does not exist succeeds.
func (s *Service) DeleteRepoConfig(ctx context.Context, repo, name string) error {
	if err := ValidConfigName(name); err != nil {
		return err
	}
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		return txn.Delete(repoConfigKey(rr.ID, name))
	})
}
