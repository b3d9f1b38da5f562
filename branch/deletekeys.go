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

// deleteGroup bounds the keys, and their bytes, one transaction of
// DeleteKeys deletes (Badger refuses a transaction past a few MiB, and
// each key writes three records).
const (
	deleteGroup      = 256
	deleteGroupBytes = 128 << 10
)

// DeleteKeys deletes keys from a branch as Delete does each, in a few
// transactions (one durable write per group of up to 256 keys instead of
// one per key: S3's DeleteObjects). Results are per key, in order; a key
// named twice is deleted twice, as two Deletes would (delete markers
// stack). An error that is not one key's own (the branch, the store)
// fails the keys of its group, each with that error; earlier groups stay
// deleted.
func (s *Service) DeleteKeys(ctx context.Context, repo, branch string, keys []string, cond Condition) []KeyResult {
	out := make([]KeyResult, len(keys))
	for from := 0; from < len(keys); {
		to, size := from, 0
		for to < len(keys) && to-from < deleteGroup && (to == from || size+len(keys[to]) <= deleteGroupBytes) {
			size += len(keys[to])
			to++
		}
		if err := s.deleteGroup(ctx, repo, branch, keys[from:to], cond, out[from:to]); err != nil {
			for i := from; i < to; i++ {
				out[i] = KeyResult{Err: err}
			}
		}
		from = to
	}
	return out
}

// deleteGroup deletes keys in one transaction, their results in out.
func (s *Service) deleteGroup(ctx context.Context, repo, branch string, keys []string, cond Condition, out []KeyResult) error {
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
			var wrote bool
			if wrote, out[i].Err = s.deleteIn(ctx, txn, v, key, cond, &q, &out[i].DeleteResult); out[i].Err != nil && wrote {
				return out[i].Err // a write of this key failed half-way
			}
		}
		return nil
	})
	if err != nil {
		q.release()
	}
	return err
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
