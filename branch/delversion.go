package branch

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// DeleteVersion deletes one version of key, as S3 does where history
// allows it:
//
//   - a version or delete marker the branch staged and never committed is
//     forgotten: it leaves the version list, and when it was the key's
//     current state the version before it becomes current again (deleting
//     a staged delete marker undeletes the key; deleting the only staged
//     version of a new key leaves nothing behind);
//   - the current version of a committed key is removed from the branch as
//     a plain DELETE would (a delete marker is staged; history keeps it);
//   - an older committed version or a committed delete marker is history,
//     which is immutable: ErrImmutable, and nothing changes.
//
// Only cond's By and Hidden apply: a version hidden from the writer is,
// for it, ErrNoSuchVersion.
func (s *Service) DeleteVersion(ctx context.Context, repo, branch, key, vid string, cond Condition) (DeleteResult, error) {
	var res DeleteResult
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		res = DeleteResult{VersionID: vid}
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		if _, err := manifest.ParseCommitID(vid); err == nil {
			return fmt.Errorf("%s@%s: a commit cannot be deleted: %w", key, vid, ErrImmutable)
		}
		cur, err := s.currentVersion(ctx, txn, v, key)
		if err != nil {
			return err
		}
		if cur.vid == vid {
			if hidden, err := cond.hides(key, cur); hidden || err != nil {
				return errors.Join(err, hiddenVersion(key, vid, hidden))
			}
		}
		if cur.vid == vid && cur.entry != nil && cur.seq <= v.br.commitSeq() {
			// The committed current version: removed from the branch.
			if q, err = s.quotaFor(ctx, txn, v); err != nil {
				return err
			}
			if err := q.change(cur.entry, nil); err != nil {
				return err
			}
			var ignored DeleteResult
			return s.tombstone(txn, v, key, cond.By, &ignored)
		}
		rec, err := s.versionRecord(txn, v, key, vid)
		if err != nil {
			return err
		}
		if hidden, err := cond.hides(key, current{entry: rec.entry}); hidden || err != nil {
			return errors.Join(err, hiddenVersion(key, vid, hidden))
		}
		res.DeleteMarker = rec.del
		if rec.branch != v.br.ID || rec.seq <= v.br.commitSeq() {
			what := "an older committed version"
			if rec.del {
				what = "a committed delete marker"
			}
			return fmt.Errorf("%s version %s is %s: %w", key, vid, what, ErrImmutable)
		}
		if err := forgetVersion(txn, v, key, rec); err != nil {
			return err
		}
		if cur.vid != vid {
			return nil // an overwritten staged version: gone from the list
		}
		if q, err = s.quotaFor(ctx, txn, v); err != nil {
			return err
		}
		return s.restorePrevious(txn, v, q, key, rec, cur, cond.By)
	})
	if err != nil {
		q.release()
	}
	return res, err
}

// hiddenVersion is ErrNoSuchVersion for a version hidden from the
// writer, and nil otherwise.
func hiddenVersion(key, vid string, hidden bool) error {
	if !hidden {
		return nil
	}
	return fmt.Errorf("%s version %s: %w", key, vid, ErrNoSuchVersion)
}

// currentVersion is lookup with the version ID of a committed value
// filled in from its entry.
func (s *Service) currentVersion(ctx context.Context, r kv.Reader, v *view, key string) (current, error) {
	cur, err := s.lookup(ctx, r, v, key)
	if err != nil || cur.entry == nil || cur.vid != "" {
		return cur, err
	}
	e, err := manifest.DecodeEntry(cur.entry)
	if err != nil {
		return cur, err
	}
	cur.vid = e.VersionID
	return cur, nil
}

// forgetVersion deletes a version's records: it is no longer listed or
// readable.
func forgetVersion(txn kv.Txn, v *view, key string, rec versionRecord) error {
	if err := txn.Delete(versionKey(v.rr.ID, rec.vid)); err != nil {
		return err
	}
	return txn.Delete(keyVersionKey(v.rr.ID, key, rec.seq))
}

// restorePrevious makes the version before rec (the key's current state,
// just forgotten) current again by staging it as it was; with no version
// before it the key is staged as absent, without a delete marker.
func (s *Service) restorePrevious(txn kv.Txn, v *view, q *quotaTxn, key string, rec versionRecord, cur current, by Writer) error {
	prev, found, err := s.previousVersion(txn, v, key, rec.seq)
	if err != nil {
		return err
	}
	st := staged{del: true, seq: s.clk.next(), by: by}
	if found {
		st = prev.staged
		st.by = by
	}
	if err := q.change(cur.entry, st.entry); err != nil {
		return err
	}
	if err := txn.Set(stageKey(v.rr.ID, v.br.ID, v.br.Gen, key), st.encode()); err != nil {
		return err
	}
	if by.Lease == "" {
		return nil
	}
	return txn.Set(append(writerPrefix(v.rr.ID, v.br.ID, v.br.Gen), by.Lease...), []byte(by.Run))
}

// previousVersion finds the newest version of key older than seq that the
// branch sees (its own or an ancestor's).
func (s *Service) previousVersion(r kv.Reader, v *view, key string, seq uint64) (versionRecord, bool, error) {
	if seq == 0 {
		return versionRecord{}, false, nil
	}
	rng := kv.Prefix(escKey(keyVersionsPrefix(v.rr.ID), key))
	rng.Start = keyVersionKey(v.rr.ID, key, seq-1)
	var prev versionRecord
	found := false
	err := r.Scan(rng, func(_, vid []byte) error {
		rec, err := s.versionRecord(r, v, key, string(vid))
		if errors.Is(err, ErrNoSuchVersion) {
			return nil // another branch's, not seen from here
		}
		if err != nil {
			return err
		}
		prev, found = rec, true
		return kv.ErrStop
	})
	return prev, found, err
}
