package branch

import (
	"context"

	"github.com/agentnas/nas/kv"
)

// KeyResult is what deleting one key of DeleteKeys did, or its own error.
type KeyResult struct {
	DeleteResult
	Err error
}

// DeleteKeys deletes keys from a branch as Delete does each, in one
// transaction: one durable write for all of them (S3's DeleteObjects).
// Results are per key, in order; a key named twice is deleted twice, as
// two Deletes would (delete markers stack). An error that is not one
// key's own (the branch, the store) fails the whole call and deletes
// nothing.
func (s *Service) DeleteKeys(ctx context.Context, repo, branch string, keys []string, cond Condition) ([]KeyResult, error) {
	out := make([]KeyResult, len(keys))
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		q = nil
		clear(out)
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		for i, key := range keys {
			if out[i].Err = ValidKey(key); out[i].Err != nil {
				continue
			}
			var deleted bool
			if deleted, out[i].Err = s.deleteIn(ctx, txn, v, key, cond, &q, &out[i].DeleteResult); out[i].Err != nil && deleted {
				return out[i].Err // a write of this key failed half-way
			}
		}
		return nil
	})
	if err != nil {
		q.release()
		return nil, err
	}
	return out, nil
}

// deleteIn is one key of DeleteKeys in its transaction: Delete's steps,
// with the quota reservation shared (*q, taken on first need). wrote says
// whether an error came after the key's writes began.
func (s *Service) deleteIn(ctx context.Context, txn kv.Txn, v *view, key string, cond Condition, q **quotaTxn, res *DeleteResult) (wrote bool, err error) {
	cur, err := s.lookup(ctx, txn, v, key)
	if err != nil {
		return true, err // the store failed: fail the transaction
	}
	if err := cond.check(key, cur); err != nil {
		return false, err
	}
	if cur.entry == nil && cur.vid == "" {
		return false, nil // never written here, or its deletion committed
	}
	if hidden, err := cond.hides(key, cur); hidden || err != nil {
		res.Hidden = hidden
		return err != nil, err
	}
	if cur.entry != nil {
		if *q == nil {
			if *q, err = s.quotaFor(ctx, txn, v); err != nil {
				return true, err
			}
		}
		if err := (*q).change(cur.entry, nil); err != nil {
			return false, err
		}
	}
	return true, s.tombstone(txn, v, key, cond.By, res)
}
