package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Deleting a branch keeps a record of it (name, head, fork point, when and
// by whom) for a retention window, so the owner can restore it. While the
// record lives, garbage collection pins its head and fork point like a live
// branch's, so everything the head reaches stays; Collect drops records
// older than the window. Staged (uncommitted) changes are not kept.
//
// kv layout:
//
//	BD/<repo><branch name>\x00<^deleted at>   deleted branch (JSON), newest
//	                                          first per name

// DefaultDeletedRetention is how long a deleted branch stays restorable,
// as long as the trash keeps what merges delete.
const DefaultDeletedRetention = 7 * 24 * time.Hour

// DeletedBranch is the record of a deleted branch; about 250 bytes.
type DeletedBranch struct {
	Repo      string            `json:"repo"`
	Name      string            `json:"name"`
	Head      manifest.CommitID `json:"-"`
	HeadH     string            `json:"head"`
	Base      string            `json:"base,omitempty"` // fork point commit
	DeletedAt time.Time         `json:"deleted_at"`
	DeletedBy string            `json:"deleted_by,omitempty"`
}

// ExpiresAt is when the record stops being restorable under retention
// keep.
func (d *DeletedBranch) ExpiresAt(keep time.Duration) time.Time { return d.DeletedAt.Add(keep) }

func deletedPrefix(repo uint64) []byte { return u64([]byte(keyspace.DeletedBranch), repo) }

func deletedKey(repo uint64, name string, at time.Time) []byte {
	return u64(append(append(deletedPrefix(repo), name...), 0), ^uint64(at.UnixNano()))
}

// SetDeletedRetention sets how long deleted branches stay restorable (0:
// DefaultDeletedRetention).
func (s *Service) SetDeletedRetention(keep time.Duration) { s.deletedKeep.Store(int64(keep)) }

// DeletedRetention is how long deleted branches stay restorable.
func (s *Service) DeletedRetention() time.Duration {
	if keep := time.Duration(s.deletedKeep.Load()); keep > 0 {
		return keep
	}
	return DefaultDeletedRetention
}

// putDeleted writes, in txn, the record of br deleted from rr by by.
func putDeleted(txn kv.Txn, rr *repoRecord, br *branchRecord, by string, at time.Time) error {
	d := DeletedBranch{Repo: rr.Name, Name: br.Name, HeadH: br.Head.String(), Base: br.Base, DeletedAt: at, DeletedBy: by}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return txn.Set(deletedKey(rr.ID, br.Name, at), b)
}

func decodeDeleted(v []byte) (*DeletedBranch, error) {
	var d DeletedBranch
	if err := json.Unmarshal(v, &d); err != nil {
		return nil, fmt.Errorf("deleted branch record: %w", err)
	}
	h, err := manifest.ParseCommitID(d.HeadH)
	if err != nil {
		return nil, fmt.Errorf("deleted branch record: %w", err)
	}
	d.Head = h
	return &d, nil
}

// ListDeleted returns the restorable deleted branches of repo, by name
// and newest first per name.
func (s *Service) ListDeleted(ctx context.Context, repo string) ([]DeletedBranch, error) {
	cutoff := time.Now().Add(-s.DeletedRetention())
	var out []DeletedBranch
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		return r.Scan(kv.Prefix(deletedPrefix(rr.ID)), func(_, v []byte) error {
			d, err := decodeDeleted(v)
			if err != nil {
				return err
			}
			if d.DeletedAt.After(cutoff) {
				out = append(out, *d)
			}
			return nil
		})
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// RestoreBranch recreates the deleted branch name at the head it had when
// it was last deleted, under the name as ("" keeps name), and drops the
// record. It is refused when no restorable record exists (never deleted,
// or deleted longer ago than the retention window) and when a branch
// called as exists. The branch comes back unprotected and without limits,
// with its old fork point, and sees the history it had seen.
func (s *Service) RestoreBranch(ctx context.Context, repo, name, as string) (*Branch, error) {
	if as == "" {
		as = name
	}
	if err := ValidBranchName(as); err != nil {
		return nil, err
	}
	var out *Branch
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		k, d, err := s.newestDeleted(txn, rr, name)
		if err != nil {
			return err
		}
		if _, err := txn.Get(branchKey(rr.ID, as)); err == nil {
			return fmt.Errorf("%s/%s exists; restore under another name (--as): %w", repo, as, ErrBranchExists)
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		br, err := s.restoredRecord(txn, rr, d, as)
		if err != nil {
			return err
		}
		if err := txn.Set(branchKey(rr.ID, as), br.encode()); err != nil {
			return err
		}
		out = br.public(repo)
		return txn.Delete(k)
	})
	return out, err
}

// newestDeleted returns the key and record of name's latest deletion, if
// it is still within the retention window.
func (s *Service) newestDeleted(r kv.Reader, rr *repoRecord, name string) ([]byte, *DeletedBranch, error) {
	var key []byte
	var d *DeletedBranch
	err := r.Scan(kv.Prefix(append(append(deletedPrefix(rr.ID), name...), 0)), func(k, v []byte) error {
		var err error
		key, d = append([]byte(nil), k...), nil
		d, err = decodeDeleted(v)
		if err != nil {
			return err
		}
		return kv.ErrStop
	})
	if err != nil {
		return nil, nil, err
	}
	if d == nil || !d.DeletedAt.After(time.Now().Add(-s.DeletedRetention())) {
		return nil, nil, fmt.Errorf("no restorable deleted branch %s in %s (kept %s): %w", name, rr.Name, s.DeletedRetention(), ErrNoSuchBranch)
	}
	return key, d, nil
}

// restoredRecord is a new branch record called as for d: at d's head with
// the head's lineage, as a fork of the head would have, and d's fork point.
func (s *Service) restoredRecord(r kv.Reader, rr *repoRecord, d *DeletedBranch, as string) (*branchRecord, error) {
	ci, err := s.commitInfo(r, rr, d.Head)
	if err != nil {
		return nil, err
	}
	br := &branchRecord{Name: as, ID: randomID(), Head: d.Head, Base: d.Base, Gen: 1, Created: time.Now().UnixNano()}
	br.Lineage = append(ci.lineageAt(), lineageItem{Branch: br.ID, MaxSeq: ^uint64(0)})
	return br, nil
}

// deletedPins returns the heads and fork points of repo's deleted branches
// younger than cutoff, for the collector, and the keys of older records,
// which it drops.
func (s *Service) deletedPins(ctx context.Context, rr *repoRecord, cutoff time.Time) (pins []manifest.CommitID, expired [][]byte, err error) {
	err = s.scan(ctx, deletedPrefix(rr.ID), func(k, v []byte) error {
		d, err := decodeDeleted(v)
		if err != nil {
			return err
		}
		if !d.DeletedAt.After(cutoff) {
			expired = append(expired, append([]byte(nil), k...))
			return nil
		}
		pins = append(pins, d.Head)
		if id, err := manifest.ParseCommitID(d.Base); d.Base != "" && err == nil {
			pins = append(pins, id)
		}
		return nil
	})
	return pins, expired, err
}
