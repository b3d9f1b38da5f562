package branch

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// PutItem is one new version PutKeys stages: e under key, if cond holds,
// with recs (its content list) written beside it.
type PutItem struct {
	Key   string
	Entry *manifest.Entry
	Cond  Condition
	Recs  []Recorder
}

// PutResult is the stored entry of one PutItem, or its own error.
type PutResult struct {
	Entry *manifest.Entry
	Err   error
}

// errNoneStaged ends a PutKeys transaction in which every item failed on
// its own: nothing, not even the shared records, is written.
var errNoneStaged = errors.New("branch: no item staged")

// PutKeys stages items on a branch as Put does each, in one transaction
// (one durable write for all of them: a file system's many small files),
// with recs (the chunk store's upload they share) written once beside
// them. Results are per item, in order: an item refused on its own (its
// key, size, condition or the branch's quota) leaves the others staged;
// an error that is not one item's own (the branch, the store) fails
// every item. The caller bounds the items so one transaction holds them.
func (s *Service) PutKeys(ctx context.Context, repo, branch string, items []PutItem, recs ...Recorder) []PutResult {
	out := make([]PutResult, len(items))
	all := recs
	for _, it := range items {
		all = append(all[:len(all):len(all)], it.Recs...)
	}
	withMarks, done := s.enterWrite(all)
	defer done()
	marks := withMarks[len(all):] // an online collection's marks of the lists, if one runs
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		q = nil
		clear(out)
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		staged := 0
		for i, it := range items {
			var wrote bool
			out[i].Entry, wrote, out[i].Err = s.putIn(ctx, txn, v, it, &q)
			if out[i].Err != nil && wrote {
				return out[i].Err // a write of this item failed half-way
			}
			if out[i].Err == nil {
				staged++
			}
		}
		if staged == 0 {
			return errNoneStaged
		}
		for _, r := range append(recs[:len(recs):len(recs)], marks...) {
			if err := r.Record(txn); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		q.release()
	}
	if err != nil && !errors.Is(err, errNoneStaged) {
		for i := range out {
			out[i] = PutResult{Err: err}
		}
	}
	return out
}

// putIn is one item of PutKeys in its transaction: its checks, then its
// version, with the quota reservation shared (*q, taken on first need).
// wrote says whether an error came after the item's writes began.
func (s *Service) putIn(ctx context.Context, txn kv.Txn, v *view, it PutItem, q **quotaTxn) (_ *manifest.Entry, wrote bool, err error) {
	if err := ValidKey(it.Key); err != nil {
		return nil, false, err
	}
	if err := validSize(it.Entry); err != nil {
		return nil, false, err
	}
	cur, err := s.lookup(ctx, txn, v, it.Key)
	if err != nil {
		return nil, true, err // the store failed: fail the transaction
	}
	if err := it.Cond.check(it.Key, cur); err != nil {
		return nil, false, err
	}
	out := *it.Entry
	seq := s.clk.next()
	out.VersionID = newVersionID(seq, rand.Uint32())
	if it.Entry.ModTime == 0 {
		out.ModTime = time.Now().UnixNano()
	}
	st := staged{seq: seq, vid: out.VersionID, entry: out.Encode(), by: it.Cond.By}
	if *q == nil {
		if *q, err = s.quotaFor(ctx, txn, v); err != nil {
			return nil, true, err
		}
	}
	if err := (*q).change(cur.entry, st.entry); err != nil {
		return nil, false, err
	}
	if err := s.stage(txn, v, it.Key, st); err != nil {
		return nil, true, err
	}
	if err := s.noteScratch(txn, v, it.Key, &out); err != nil {
		return nil, true, err
	}
	for _, r := range it.Recs {
		if err := r.Record(txn); err != nil {
			return nil, true, err
		}
	}
	return &out, true, nil
}
