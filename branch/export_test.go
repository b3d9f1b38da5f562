package branch

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// SetFoldHook makes Commit call f between sealing and folding.
func SetFoldHook(s *Service, f func()) { s.foldHook = f }

// StageBulk stages each entry on a branch as Put (or, with Delete set, a
// tombstone as Delete) would: staged value, version record, key index. It
// writes in kv batches and checks no condition and no quota, and stages a
// tombstone even where nothing is there to delete: it sets up large staging
// areas in seconds rather than minutes.
func StageBulk(ctx context.Context, s *Service, repo, br string, entries []ImportEntry) error {
	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		v, err = s.writableView(ctx, r, repo, br)
		return err
	})
	if err != nil {
		return err
	}
	b := s.db.Batch(ctx)
	for i, ie := range entries {
		key, seq := ie.Key, s.clk.next()
		st := staged{del: true, seq: seq, vid: newVersionID(seq, rand.Uint32())}
		if !ie.Delete {
			out := *ie.Entry
			out.VersionID = st.vid
			st = staged{seq: seq, vid: st.vid, entry: out.Encode()}
		}
		if err := s.stage(b, v, key, st); err != nil {
			return err
		}
		if i%1000 == 999 {
			if err := b.Flush(); err != nil {
				return err
			}
		}
	}
	return b.Flush()
}

// StagedKeys counts the staging records of a branch, in every generation.
func StagedKeys(ctx context.Context, s *Service, repo, br string) (int, error) {
	n := 0
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, br)
		if err != nil {
			return err
		}
		return r.Scan(kv.Prefix(branchStagePrefix(v.rr.ID, v.br.ID)), func(_, _ []byte) error {
			n++
			return nil
		})
	})
	return n, err
}

// OweTrash puts repo into the state a crash after a large merge's head
// swap leaves: the trash of commit is journalled on br and none of its
// entries is written.
func OweTrash(ctx context.Context, s *Service, repo, br string, commit manifest.CommitID, at time.Time) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		var keys [][]byte
		err = txn.Scan(kv.Prefix(trashPrefix(rr.ID)), func(k, _ []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		j, _ := json.Marshal(trashJournal{Repo: repo, Branch: br, Time: at.UnixNano()})
		return txn.Set(trashJournalKey(rr.ID, commit), j)
	})
}

// TrashInline is how many trash entries a merge writes in its head swap.
const TrashInline = trashInline

// SameVersion exposes sameVersion to tests.
func SameVersion(a, b []byte) bool { return sameVersion(a, b) }
