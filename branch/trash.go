package branch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// A merge into a protected branch keeps what it deleted in the trash. The
// entries are written in the transaction that swaps the head, so a merge
// never lands without them; a merge that deleted more than fits one
// transaction writes, in that transaction, a journal record that obliges
// the entries instead, writes them in batches after, and drops the
// journal. settleTrash finishes any journal a crash left, before a
// collection marks (the trash keeps its entries' chunks alive).

// trashInline bounds the entries written in the head swap itself; a batch
// after it holds as many.
const trashInline = 1024

// trashJournal is the value of a TQ/ record: the merge's branch and the
// time its entries carry.
type trashJournal struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Time   int64  `json:"time"`
}

func trashJournalKey(repo uint64, id manifest.CommitID) []byte {
	return append(u64([]byte(keyspace.TrashJournal), repo), id[:]...)
}

// putTrash writes the trash entries of deleted, removed from br by commit
// at time at, in txn.
func putTrash(txn kv.Txn, rr *repoRecord, br string, commit manifest.CommitID, at time.Time, deleted []Object) error {
	for _, o := range deleted {
		te := TrashEntry{Repo: rr.Name, Branch: br, Key: o.Key, DeletedAt: at, Commit: commit.String(),
			ETag: o.Entry.ETag, Size: o.Entry.Size, EntryB: o.Entry.Encode()}
		b, err := json.Marshal(te)
		if err != nil {
			return err
		}
		if err := txn.Set(u64(escKey(trashPrefix(rr.ID), o.Key), ^uint64(at.UnixNano())), b); err != nil {
			return err
		}
	}
	return nil
}

// trashInSwap writes, inside the head swap of a merge into br, its trash
// entries or the journal that obliges them; it reports whether the
// entries are still to be written.
func trashInSwap(txn kv.Txn, rr *repoRecord, br *branchRecord, commit manifest.CommitID, at time.Time, deleted []Object) (later bool, err error) {
	if !br.Protected || len(deleted) == 0 {
		return false, nil
	}
	if len(deleted) <= trashInline {
		return false, putTrash(txn, rr, br.Name, commit, at, deleted)
	}
	j, _ := json.Marshal(trashJournal{Repo: rr.Name, Branch: br.Name, Time: at.UnixNano()})
	return true, txn.Set(trashJournalKey(rr.ID, commit), j)
}

// finishTrash writes journalled trash entries in batches, then drops the
// journal. The entries' keys depend only on the key and the time, so a
// repeat after a crash rewrites the same records.
func (s *Service) finishTrash(ctx context.Context, rr *repoRecord, br string, commit manifest.CommitID, at time.Time, deleted []Object) error {
	for len(deleted) > 0 {
		n := min(len(deleted), trashInline)
		if err := s.db.Update(ctx, func(txn kv.Txn) error { return putTrash(txn, rr, br, commit, at, deleted[:n]) }); err != nil {
			return fmt.Errorf("trash of merge %s: %w", commit, err)
		}
		deleted = deleted[n:]
	}
	return s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(trashJournalKey(rr.ID, commit)) })
}

// SettleTrash finishes the trash of every merge whose entries a crash left
// unwritten: it recomputes what the merge deleted from the merge commit
// and its first parent. The gateway calls it at start; Collect calls it
// before marking.
func (s *Service) SettleTrash(ctx context.Context) error {
	type pending struct {
		repoID uint64
		commit manifest.CommitID
		j      trashJournal
	}
	var todo []pending
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.TrashJournal)), func(k, v []byte) error {
			rest := k[len(keyspace.TrashJournal):]
			var p pending
			if len(rest) != 8+len(p.commit) || json.Unmarshal(v, &p.j) != nil {
				s.log.Warn("skipping an undecodable trash journal record", "key", fmt.Sprintf("%q", k))
				return nil
			}
			p.repoID = binary.BigEndian.Uint64(rest[:8])
			copy(p.commit[:], rest[8:])
			todo = append(todo, p)
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, p := range todo {
		if err := s.settleOne(ctx, p.repoID, p.commit, p.j); err != nil {
			return err
		}
	}
	return nil
}

// settleOne finishes one journalled merge; a journal whose repository is
// gone is dropped.
func (s *Service) settleOne(ctx context.Context, repoID uint64, commit manifest.CommitID, j trashJournal) error {
	var rr *repoRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		rr, err = s.repo(r, j.Repo)
		return err
	})
	if err != nil || rr.ID != repoID {
		return s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(trashJournalKey(repoID, commit)) })
	}
	deleted, err := s.mergeDeletions(ctx, rr, commit)
	if err != nil {
		return fmt.Errorf("settle trash of merge %s: %w", commit, err)
	}
	return s.finishTrash(ctx, rr, j.Branch, commit, time.Unix(0, j.Time).UTC(), deleted)
}

// mergeDeletions lists what commit removed relative to its first parent,
// with the entries the parent had.
func (s *Service) mergeDeletions(ctx context.Context, rr *repoRecord, commit manifest.CommitID) ([]Object, error) {
	c, err := s.ms.GetCommit(ctx, commit)
	if err != nil {
		return nil, err
	}
	if len(c.Parents) == 0 {
		return nil, nil
	}
	parent, err := s.root(ctx, c.Parents[0])
	if err != nil {
		return nil, err
	}
	var out []Object
	err = s.treeFor(rr).Diff(ctx, parent, c.Tree, func(ch tree.Change) error {
		if ch.New != nil {
			return nil
		}
		e, err := manifest.DecodeEntry(ch.Old)
		if err != nil {
			return err
		}
		out = append(out, Object{Key: string(ch.Key), Entry: e})
		return nil
	})
	return out, err
}
