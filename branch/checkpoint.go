package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// Checkpoints and the trash belong to the owner, and garbage collection
// keeps what they name. A run may name checkpoints of its own branch too
// (CreateCheckpoint with By, at most MaxRunCheckpoints a branch) and go
// back to one (RestoreRunCheckpoint, which lets its caller refuse each
// key it changes); it can never remove or move one, so what the owner
// checkpointed stays.
//
// kv layout:
//
//	CK/<repo><branch name>\x00<checkpoint name>   checkpoint (JSON)
//	TR/<repo><esc key><^time>                     trashed entry (JSON)

// Checkpoint is a named commit of a branch. By is the lease that named
// it, "" for the owner.
type Checkpoint struct {
	Branch  string            `json:"branch"`
	Name    string            `json:"name"`
	Commit  manifest.CommitID `json:"-"`
	CommitH string            `json:"commit"`
	Created time.Time         `json:"created"`
	By      string            `json:"by,omitempty"`
}

// MaxRunCheckpoints bounds the checkpoints leases may name on one branch:
// each pins a commit against garbage collection.
const MaxRunCheckpoints = 64

func checkpointKey(repo uint64, br, name string) []byte {
	return append(append(u64([]byte(keyspace.Checkpoint), repo), br+"\x00"...), name...)
}

// CreateCheckpoint names the branch's head commit; by is the lease that
// asks ("" for the owner), held to MaxRunCheckpoints.
func (s *Service) CreateCheckpoint(ctx context.Context, repo, br, name, by string) (*Checkpoint, error) {
	if name == "" || len(name) > 128 || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return nil, fmt.Errorf("checkpoint name must be 1-128 bytes of UTF-8: %w", ErrInvalid)
	}
	var cp *Checkpoint
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		v, err := s.openView(ctx, txn, repo, br)
		if err != nil {
			return err
		}
		k := checkpointKey(v.rr.ID, br, name)
		if _, err := txn.Get(k); err == nil {
			return fmt.Errorf("checkpoint %s of %s: %w", name, br, ErrExists)
		}
		if by != "" {
			if err := runCheckpointRoom(txn, v.rr.ID, br); err != nil {
				return err
			}
		}
		cp = &Checkpoint{Branch: br, Name: name, Commit: v.br.Head, CommitH: v.br.Head.String(), Created: time.Now().UTC(), By: by}
		b, _ := json.Marshal(cp)
		return txn.Set(k, b)
	})
	return cp, err
}

// runCheckpointRoom refuses a lease's checkpoint when leases have named
// MaxRunCheckpoints of branch br already.
func runCheckpointRoom(r kv.Reader, repo uint64, br string) error {
	n := 0
	err := r.Scan(kv.Prefix(checkpointKey(repo, br, "")), func(_, v []byte) error {
		var cp Checkpoint
		if json.Unmarshal(v, &cp) == nil && cp.By != "" {
			n++
		}
		return nil
	})
	if err == nil && n >= MaxRunCheckpoints {
		err = fmt.Errorf("%s already has %d checkpoints named by leases, the most it may have: %w", br, n, ErrQuotaExceeded)
	}
	return err
}

// ListCheckpoints returns a branch's checkpoints ("" for every branch).
func (s *Service) ListCheckpoints(ctx context.Context, repo, br string) ([]Checkpoint, error) {
	var out []Checkpoint
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		p := u64([]byte(keyspace.Checkpoint), rr.ID)
		if br != "" {
			p = append(p, br+"\x00"...)
		}
		return r.Scan(kv.Prefix(p), func(_, v []byte) error {
			var cp Checkpoint
			if err := json.Unmarshal(v, &cp); err != nil {
				return err
			}
			cp.Commit, _ = manifest.ParseCommitID(cp.CommitH)
			out = append(out, cp)
			return nil
		})
	})
	return out, err
}

// RestoreCheckpoint makes a new commit on the branch whose tree is the
// checkpoint's, keeping history (the old head is its parent). It works on
// protected branches: restoring is the owner's undo.
func (s *Service) RestoreCheckpoint(ctx context.Context, repo, br, name string, o CommitOptions) (manifest.CommitID, error) {
	cp, err := s.checkpoint(ctx, repo, br, name)
	if err != nil {
		return manifest.CommitID{}, err
	}
	root, err := s.root(ctx, cp.Commit)
	if err != nil {
		return manifest.CommitID{}, err
	}
	if o.Message == "" {
		o.Message = "restore checkpoint " + name
	}
	return s.ownerCommit(ctx, repo, br, func(chunk.Hash) (chunk.Hash, error) { return root, nil }, o)
}

// RestoreRunCheckpoint is RestoreCheckpoint for a run: the branch must be
// unprotected and have no uncommitted changes, and o.Allow is asked about
// every key the restore changes (deleted true for a key it removes)
// before anything is committed. The result's Base and Ours are the
// branch's head, Theirs the checkpoint's commit.
func (s *Service) RestoreRunCheckpoint(ctx context.Context, repo, br, name string, o PickOptions) (*MergeResult, error) {
	cp, err := s.checkpoint(ctx, repo, br, name)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lockBranch(ctx, repo, br)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	v, theirs, _, staged, err := s.mergeSides(ctx, repo, cp.CommitH, br)
	switch {
	case err != nil:
		return nil, err
	case v.br.Protected:
		return nil, fmt.Errorf("%s/%s: %w", repo, br, ErrProtected)
	case staged:
		return nil, fmt.Errorf("%s/%s has uncommitted changes; commit them first: %w", repo, br, ErrConflict)
	}
	res := &MergeResult{Base: v.br.Head, Ours: v.br.Head, Theirs: theirs}
	root, edits, err := s.pickTree(ctx, v, res, o.Allow)
	if err != nil {
		return res, err
	}
	res.Applied = len(edits)
	if o.Message == "" {
		o.Message = "restore checkpoint " + name
	}
	id, err := s.swapHead(ctx, v, root, v.br.CommitSeq, 0, o.CommitOptions)
	res.Commit = id
	return res, err
}

// checkpoint reads checkpoint name of branch br.
func (s *Service) checkpoint(ctx context.Context, repo, br, name string) (*Checkpoint, error) {
	var cp Checkpoint
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		b, err := r.Get(checkpointKey(rr.ID, br, name))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("checkpoint %s of %s: %w", name, br, ErrNotFound)
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &cp)
	})
	if err != nil {
		return nil, err
	}
	if cp.Commit, err = manifest.ParseCommitID(cp.CommitH); err != nil {
		return nil, err
	}
	return &cp, nil
}

// ownerCommit commits a new tree computed from the head's on a branch,
// protected or not, which must have no staged changes. It is for the
// owner's restores.
func (s *Service) ownerCommit(ctx context.Context, repo, br string, next func(head chunk.Hash) (chunk.Hash, error), o CommitOptions) (manifest.CommitID, error) {
	unlock, err := s.lockBranch(ctx, repo, br)
	if err != nil {
		return manifest.CommitID{}, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	var v *view
	staged := false
	err = s.db.View(ctx, func(r kv.Reader) error {
		var err error
		if v, err = s.openView(ctx, r, repo, br); err != nil {
			return err
		}
		staged = v.br.SealedGen != 0
		return r.Scan(kv.Prefix(stagePrefix(v.rr.ID, v.br.ID, v.br.Gen)), func(_, _ []byte) error {
			staged = true
			return kv.ErrStop
		})
	})
	if err != nil {
		return manifest.CommitID{}, err
	}
	if staged {
		return manifest.CommitID{}, fmt.Errorf("%s/%s has uncommitted changes; commit them first: %w", repo, br, ErrConflict)
	}
	root, err := next(v.root)
	if err != nil {
		return manifest.CommitID{}, err
	}
	return s.swapHead(ctx, v, root, v.br.CommitSeq, 0, o)
}

// TrashEntry is an object a merge deleted from a protected branch.
type TrashEntry struct {
	Repo      string          `json:"repo"`
	Branch    string          `json:"branch"`
	Key       string          `json:"key"`
	DeletedAt time.Time       `json:"deleted_at"`
	Commit    string          `json:"commit"` // the merge that deleted it
	ETag      string          `json:"etag"`
	Size      int64           `json:"size"`
	EntryB    []byte          `json:"entry"`
	Entry     *manifest.Entry `json:"-"`
}

func trashPrefix(repo uint64) []byte { return u64([]byte(keyspace.Trash), repo) }

// ListTrash returns trashed entries under prefix, newest first per key.
func (s *Service) ListTrash(ctx context.Context, repo, prefix string) ([]TrashEntry, error) {
	var out []TrashEntry
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		esc := escKey(trashPrefix(rr.ID), prefix)
		return r.Scan(kv.Prefix(esc[:len(esc)-2]), func(_, v []byte) error {
			var te TrashEntry
			if err := json.Unmarshal(v, &te); err != nil {
				return err
			}
			out = append(out, te)
			return nil
		})
	})
	return out, err
}

// RestoreTrash puts the newest trashed version of key back on its branch
// with a commit (protected or not) and removes it from the trash.
func (s *Service) RestoreTrash(ctx context.Context, repo, key string, o CommitOptions) (manifest.CommitID, error) {
	items, err := s.ListTrash(ctx, repo, key)
	if err != nil {
		return manifest.CommitID{}, err
	}
	var te *TrashEntry
	for i := range items {
		if items[i].Key == key {
			te = &items[i]
			break
		}
	}
	if te == nil {
		return manifest.CommitID{}, fmt.Errorf("%s is not in the trash of %s: %w", key, repo, ErrNotFound)
	}
	if o.Message == "" {
		o.Message = "restore " + key + " from the trash"
	}
	var t *tree.Tree
	err = s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err == nil {
			t = s.treeFor(rr)
		}
		return err
	})
	if err != nil {
		return manifest.CommitID{}, err
	}
	id, err := s.ownerCommit(ctx, repo, te.Branch, func(head chunk.Hash) (chunk.Hash, error) {
		return t.Apply(ctx, head, tree.SliceEdits([]tree.Edit{{Key: []byte(key), Value: te.EntryB}}))
	}, o)
	if err != nil {
		return id, err
	}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		k := u64(escKey(trashPrefix(rr.ID), key), ^uint64(te.DeletedAt.UnixNano()))
		return txn.Delete(k)
	})
	return id, err
}

// expireTrash drops trash entries deleted before cutoff and returns how
// many; Collect calls it with TrashRetention.
func (s *Service) expireTrash(ctx context.Context, cutoff time.Time) (int, error) {
	var old [][]byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.Trash)), func(k, v []byte) error {
			var te TrashEntry
			if json.Unmarshal(v, &te) == nil && te.DeletedAt.Before(cutoff) {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	return len(old), s.deleteKeys(ctx, old)
}
