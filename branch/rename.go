package branch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Rename moves one key to another name on a branch in one transaction:
// the new key gets a new version sharing the old content (no bytes move)
// and the old key a delete marker. With noReplace it fails with
// ErrPrecondition when the target exists.
func (s *Service) Rename(ctx context.Context, repo, branch, from, to string, noReplace bool, by Writer) (*manifest.Entry, error) {
	if from == to {
		// rename(2) onto itself changes nothing (it must not delete it).
		e, err := s.Get(ctx, repo, branch, from)
		if err != nil {
			return nil, err
		}
		if noReplace {
			return nil, fmt.Errorf("%s exists: %w", to, ErrPrecondition)
		}
		return e, nil
	}
	if err := ValidKey(to); err != nil {
		return nil, err
	}
	var out *manifest.Entry
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		if q, err = s.quotaFor(ctx, txn, v); err != nil {
			return err
		}
		out, err = s.renameIn(ctx, txn, v, q, from, to, noReplace, by)
		return err
	})
	if err != nil {
		q.release()
	}
	return out, err
}

// renameIn moves one key inside a write transaction; q accounts the change
// against the branch's quota (a rename over an existing key shrinks it).
func (s *Service) renameIn(ctx context.Context, txn kv.Txn, v *view, q *quotaTxn, from, to string, noReplace bool, by Writer) (*manifest.Entry, error) {
	cur, err := s.lookup(ctx, txn, v, from)
	if err != nil {
		return nil, err
	}
	if cur.entry == nil {
		return nil, fmt.Errorf("%s: %w", from, ErrNoSuchKey)
	}
	if noReplace || q != nil {
		dst, err := s.lookup(ctx, txn, v, to)
		if err != nil {
			return nil, err
		}
		if noReplace && dst.entry != nil {
			return nil, fmt.Errorf("%s exists: %w", to, ErrPrecondition)
		}
		if err := q.change(dst.entry, nil); err != nil {
			return nil, err
		}
	}
	e, err := manifest.DecodeEntry(cur.entry)
	if err != nil {
		return nil, err
	}
	seq := s.clk.next()
	e.VersionID = newVersionID(seq, rand.Uint32())
	e.ModTime = time.Now().UnixNano()
	if err := s.stage(txn, v, to, staged{seq: seq, vid: e.VersionID, entry: e.Encode(), by: by}); err != nil {
		return nil, err
	}
	var ignored DeleteResult
	if err := s.tombstone(txn, v, from, by, &ignored); err != nil {
		return nil, err
	}
	return e, nil
}

// renameBatch bounds the keys one rename transaction moves, keeping every
// transaction far below the kv limits however large the directory.
const renameBatch = 256

// RenameResult says what RenamePrefix did.
type RenameResult struct {
	Renamed int
	// Atomic is true when every key moved in one transaction; a rename of
	// more than one batch is not atomic: a crash or a concurrent writer can
	// observe it half done (each key is either at its old or its new name,
	// never lost or duplicated).
	Atomic bool
}

// RenamePrefix moves every key under prefix from to prefix to (a
// directory rename), in batches. allow, when set, is asked for each key
// (old and new name) and can stop the rename with its error; keys it skips
// by returning ErrNotFound are left in place.
func (s *Service) RenamePrefix(ctx context.Context, repo, branch, from, to string, by Writer, allow func(oldKey, newKey string) error) (RenameResult, error) {
	var res RenameResult
	if from == "" || strings.HasPrefix(to, from) {
		return res, fmt.Errorf("cannot rename %q into itself (%q): %w", from, to, ErrInvalid)
	}
	batches := 0
	after := ""
	for {
		page, err := s.List(ctx, repo, branch, ListOptions{Prefix: from, After: after, MaxKeys: renameBatch})
		if err != nil {
			return res, err
		}
		var keys []string
		for _, o := range page.Objects {
			after = o.Key
			nk := to + strings.TrimPrefix(o.Key, from)
			if allow != nil {
				if err := allow(o.Key, nk); err != nil {
					if errIsNotFound(err) {
						continue
					}
					return res, err
				}
			}
			if err := ValidKey(nk); err != nil {
				return res, err
			}
			keys = append(keys, o.Key)
		}
		if len(keys) > 0 {
			var q *quotaTxn
			err := s.db.Update(ctx, func(txn kv.Txn) error {
				q.release()
				v, err := s.writableView(ctx, txn, repo, branch)
				if err != nil {
					return err
				}
				if q, err = s.quotaFor(ctx, txn, v); err != nil {
					return err
				}
				for _, k := range keys {
					if _, err := s.renameIn(ctx, txn, v, q, k, to+strings.TrimPrefix(k, from), false, by); err != nil && !errIsNotFound(err) {
						return err
					}
				}
				return nil
			})
			if err != nil {
				q.release()
				return res, err
			}
			res.Renamed += len(keys)
			batches++
		}
		if !page.Truncated {
			break
		}
	}
	res.Atomic = batches <= 1
	return res, nil
}

func errIsNotFound(err error) bool { return err != nil && errors.Is(err, ErrNotFound) }
