package branch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// Export and restore (package gitexport) need what the rest of the
// package keeps private: a repository's salt, the lineage record of each
// commit and the branch that wrote each version. History reads them for an
// export; Restore writes them back, under a new repository that stays
// invisible until Publish.
//
// Both hold garbage collection off while they run (a collection that
// starts meanwhile waits, and so do commits issued while it waits): an
// export must not see history vanish half way, and what a restore has
// written is reachable from nothing until it publishes.

// CommitInfo is the lineage record of a commit: the branch that made it,
// the highest version sequence it folded, and the lineage the branch had.
// A fork from the commit derives its lineage from it.
type CommitInfo struct {
	Branch  uint64
	Seq     uint64
	Lineage []LineageItem
}

// LineageItem says that versions written on Branch with a sequence up to
// MaxSeq are visible.
type LineageItem struct {
	Branch, MaxSeq uint64
}

// RepoState is a repository as an export records it, beyond its commits.
type RepoState struct {
	Name          string
	DefaultBranch string
	Created       int64 // unix nanoseconds
	// Salt keys the shape of the repository's trees (tree.Config); a
	// restore with the same salt rebuilds the same tree roots.
	Salt        []byte
	Branches    []BranchState
	Checkpoints []Checkpoint
	// What an export cannot carry: version records (all, and how many are
	// delete markers), trash entries and open multipart uploads.
	VersionRecords, DeleteMarkers, Trash, Uploads int
}

// BranchState is one branch as an export records it.
type BranchState struct {
	Name      string
	Head      manifest.CommitID
	Base      manifest.CommitID // zero when the branch has no fork point
	Protected bool
	Created   int64 // unix nanoseconds
	// StagedKeys counts uncommitted writes and deletes, which an export
	// does not carry.
	StagedKeys int
}

// History reads one repository for an export. It holds garbage collection
// off until Close.
type History struct {
	s       *Service
	rr      *repoRecord
	release func()
}

// PauseCollection keeps garbage collection from starting until release is
// called; a collection already running finishes first. The caller must
// not call anything that commits or creates a repository before release
// (they take the same lock).
func (s *Service) PauseCollection() (release func()) {
	s.gcMu.RLock()
	var once sync.Once
	return func() { once.Do(s.gcMu.RUnlock) }
}

// OpenHistory opens repo for an export and returns its state, read in one
// snapshot.
func (s *Service) OpenHistory(ctx context.Context, repo string) (*History, *RepoState, error) {
	release := s.PauseCollection()
	var rr *repoRecord
	st := &RepoState{}
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		if rr, err = s.repo(r, repo); err != nil {
			return err
		}
		st.Name, st.DefaultBranch, st.Created = rr.Name, rr.DefaultBranch, rr.Created
		st.Salt = append([]byte(nil), rr.Salt...)
		if err := readBranchStates(r, rr, st); err != nil {
			return err
		}
		if err := readCheckpoints(r, rr, st); err != nil {
			return err
		}
		if err := countVersions(r, rr, st); err != nil {
			return err
		}
		if st.Trash, err = scanCount(r, trashPrefix(rr.ID)); err != nil {
			return err
		}
		st.Uploads, err = scanCount(r, uploadsPrefix(rr.ID))
		return err
	})
	if err != nil {
		release()
		return nil, nil, err
	}
	return &History{s: s, rr: rr, release: release}, st, nil
}

// readBranchStates appends the state of each of rr's branches to
// st.Branches, counting its staged keys.
func readBranchStates(r kv.Reader, rr *repoRecord, st *RepoState) error {
	return r.Scan(kv.Prefix(branchPrefix(rr.ID)), func(_, v []byte) error {
		br, err := decodeBranch(v)
		if err != nil {
			return err
		}
		bs := BranchState{Name: br.Name, Head: br.Head, Protected: br.Protected, Created: br.Created}
		if br.Base != "" {
			if bs.Base, err = manifest.ParseCommitID(br.Base); err != nil {
				return fmt.Errorf("branch %s: base: %w", br.Name, err)
			}
		}
		for _, gen := range []uint64{br.Gen, br.SealedGen} {
			if gen == 0 {
				continue
			}
			n, err := scanCount(r, stagePrefix(rr.ID, br.ID, gen))
			if err != nil {
				return err
			}
			bs.StagedKeys += n
		}
		st.Branches = append(st.Branches, bs)
		return nil
	})
}

// readCheckpoints appends rr's checkpoints to st.Checkpoints.
func readCheckpoints(r kv.Reader, rr *repoRecord, st *RepoState) error {
	return r.Scan(kv.Prefix(u64([]byte(keyspace.Checkpoint), rr.ID)), func(_, v []byte) error {
		var cp Checkpoint
		if err := json.Unmarshal(v, &cp); err != nil {
			return err
		}
		var err error
		cp.Commit, err = manifest.ParseCommitID(cp.CommitH)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", cp.Name, err)
		}
		st.Checkpoints = append(st.Checkpoints, cp)
		return nil
	})
}

// countVersions counts rr's version records, and the delete markers among
// them, into st.
func countVersions(r kv.Reader, rr *repoRecord, st *RepoState) error {
	return r.Scan(kv.Prefix(u64([]byte(keyspace.Version), rr.ID)), func(_, v []byte) error {
		st.VersionRecords++
		if len(v) > 0 {
			if rec, err := decodeVersion(v); err == nil && rec.del {
				st.DeleteMarkers++
			}
		}
		return nil
	})
}

// scanCount returns the number of keys under prefix.
func scanCount(r kv.Reader, prefix []byte) (int, error) {
	n := 0
	err := r.Scan(kv.Prefix(prefix), func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

// Close lets garbage collection run again.
func (h *History) Close() { h.release() }

// Tree returns the tree handle of the repository.
func (h *History) Tree() *tree.Tree { return h.s.treeFor(h.rr) }

// Commit loads commit id; ErrNoSuchCommit when it was collected.
func (h *History) Commit(ctx context.Context, id manifest.CommitID) (*manifest.Commit, error) {
	return h.s.ms.GetCommit(ctx, id)
}

// Info returns the lineage record of commit id, or nil when the
// repository has none for it.
func (h *History) Info(ctx context.Context, id manifest.CommitID) (*CommitInfo, error) {
	var ci *commitInfo
	err := h.s.db.View(ctx, func(r kv.Reader) (err error) {
		ci, err = h.s.commitInfo(r, h.rr, id)
		return err
	})
	if errors.Is(err, manifest.ErrNoSuchCommit) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := &CommitInfo{Branch: ci.Branch, Seq: ci.Seq}
	for _, l := range ci.Lineage {
		out.Lineage = append(out.Lineage, LineageItem(l))
	}
	return out, nil
}

// Writer returns the branch that wrote version vid of key, whose encoded
// entry is entry (tags and ACL aside: a commit may hold a version retouched after
// its record was written), as the version record says. ok is false when there is no
// record (it expired, or the entry never had one); a record that names
// another key or entry is ErrInvalid.
func (h *History) Writer(ctx context.Context, key, vid string, entry []byte) (writer uint64, ok bool, err error) {
	if _, valid := versionSeq(vid); !valid {
		return 0, false, nil
	}
	err = h.s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(versionKey(h.rr.ID, vid))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := decodeVersion(v)
		if err != nil {
			return err
		}
		if rec.del || rec.key != key || !sameVersion(rec.entry, entry) {
			return fmt.Errorf("version %s of %q: its record holds another key or entry: %w", vid, key, ErrInvalid)
		}
		writer, ok = rec.branch, true
		return nil
	})
	return writer, ok, err
}

// RestoreOptions describes the repository a Restore recreates.
type RestoreOptions struct {
	Salt          []byte
	DefaultBranch string
	Created       int64 // unix nanoseconds; 0 means now
}

// Restore recreates a repository from an export: commits with their exact
// IDs and lineage records, the version records of every entry they hold,
// branches and checkpoints. Everything is written under a repository ID
// that no name points to until Publish, which makes the repository appear
// in one transaction; Abort (or a failed Publish) deletes what was written
// under that ID and leaves the rest (nodes, commits, chunks, all shared by
// hash) to garbage collection. A Restore belongs to one goroutine.
type Restore struct {
	s       *Service
	rr      *repoRecord
	release func()

	roots    map[manifest.CommitID]chunk.Hash  // restored commits
	infos    map[manifest.CommitID]*commitInfo // their lineage records
	seen     map[uint64]struct{}               // branch IDs named anywhere
	pending  map[string][]byte                 // version records in batch, by vid
	batch    kv.Batch                          // nil when empty
	inBatch  int                               //
	branches []*branchRecord                   // to publish
	cps      []Checkpoint                      // to publish
	maxSeq   uint64                            // highest sequence restored
	done     bool                              //
}

// CheckRestore reports whether a repository called name could be
// restored now: the name is valid and not taken. BeginRestore checks
// again; calling this first lets a caller refuse a stream before reading
// any of it.
func (s *Service) CheckRestore(ctx context.Context, name string) error {
	if err := ValidRepoName(name); err != nil {
		return err
	}
	if _, err := s.GetRepo(ctx, name); err == nil {
		return fmt.Errorf("%s: %w", name, ErrRepoExists)
	} else if !errors.Is(err, ErrNoSuchRepo) {
		return err
	}
	return nil
}

// BeginRestore starts restoring a repository called name, which must not
// exist. It holds garbage collection off until Publish or Abort.
func (s *Service) BeginRestore(ctx context.Context, name string, o RestoreOptions) (*Restore, error) {
	if err := s.CheckRestore(ctx, name); err != nil {
		return nil, err
	}
	if len(o.Salt) == 0 {
		return nil, fmt.Errorf("restore %s: no tree salt: %w", name, ErrInvalid)
	}
	if o.DefaultBranch == "" {
		o.DefaultBranch = DefaultBranch
	}
	if err := ValidBranchName(o.DefaultBranch); err != nil {
		return nil, err
	}
	if o.Created == 0 {
		o.Created = time.Now().UnixNano()
	}
	rr := &repoRecord{Name: name, ID: randomID(), DefaultBranch: o.DefaultBranch, Created: o.Created,
		Salt: append([]byte(nil), o.Salt...)}
	return &Restore{s: s, rr: rr, release: s.PauseCollection(),
		roots: map[manifest.CommitID]chunk.Hash{}, infos: map[manifest.CommitID]*commitInfo{},
		seen: map[uint64]struct{}{}, pending: map[string][]byte{}}, nil
}

// Tree returns the tree handle of the repository being restored.
func (r *Restore) Tree() *tree.Tree { return r.s.treeFor(r.rr) }

// Root returns the tree root of a commit restored earlier.
func (r *Restore) Root(id manifest.CommitID) (chunk.Hash, bool) {
	h, ok := r.roots[id]
	return h, ok
}

// restoreBatch bounds the records written per kv batch.
const restoreBatch = 1000

// set adds a record to the restore's batch, flushing every restoreBatch
// records.
func (r *Restore) set(ctx context.Context, k, v []byte) error {
	if r.batch == nil {
		r.batch = r.s.db.Batch(ctx)
	}
	if err := r.batch.Set(k, v); err != nil {
		return err
	}
	if r.inBatch++; r.inBatch >= restoreBatch {
		return r.Flush(ctx)
	}
	return nil
}

// Flush makes the records written so far durable.
func (r *Restore) Flush(ctx context.Context) error {
	if r.batch == nil {
		return nil
	}
	b := r.batch
	r.batch, r.inBatch = nil, 0
	clear(r.pending)
	return b.Flush()
}

// Content stores a content list by its hash, which the caller verified.
func (r *Restore) Content(ctx context.Context, h chunk.Hash, data []byte) error {
	return r.set(ctx, manifest.ContentKey(h), data)
}

// Version restores the version record of an entry that a restored commit
// holds: version vid (the entry's VersionID) of key, written on branch
// writer. The same version met again must be identical.
func (r *Restore) Version(ctx context.Context, key, vid string, writer uint64, entry []byte) error {
	seq, ok := versionSeq(vid)
	if !ok {
		return fmt.Errorf("version %q of %q: not a version ID: %w", vid, key, ErrInvalid)
	}
	rec := versionRecord{key: key, branch: writer, staged: staged{seq: seq, vid: vid, entry: entry}}
	enc := rec.encode()
	vk := versionKey(r.rr.ID, vid)
	old, inBatch := r.pending[vid]
	if !inBatch {
		err := r.s.db.View(ctx, func(rd kv.Reader) error {
			v, err := rd.Get(vk)
			if err == nil {
				old = v
			}
			if errors.Is(err, kv.ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	if old != nil {
		// The version first met keeps its record; a later commit may hold
		// it retouched (new tags or ACL).
		if !bytes.Equal(old, enc) && !sameRecord(old, rec) {
			return fmt.Errorf("version %s of %q restored twice with different contents: %w", vid, key, ErrInvalid)
		}
		return nil
	}
	r.pending[vid] = enc
	r.seen[writer] = struct{}{}
	r.maxSeq = max(r.maxSeq, seq)
	if err := r.set(ctx, vk, enc); err != nil {
		return err
	}
	return r.set(ctx, keyVersionKey(r.rr.ID, key, seq), []byte(vid))
}

// Commit stores a commit whose tree the caller built with Tree and
// verified, with its lineage record (nil when the exported repository had
// none), and returns its ID. Parents need not have been restored (history
// the source had already collected).
func (r *Restore) Commit(ctx context.Context, c *manifest.Commit, info *CommitInfo) (manifest.CommitID, error) {
	if err := r.Flush(ctx); err != nil {
		return manifest.CommitID{}, err
	}
	id, err := r.s.ms.PutCommit(ctx, c)
	if err != nil {
		return id, err
	}
	r.roots[id] = c.Tree
	if info == nil {
		return id, nil
	}
	ci := &commitInfo{Branch: info.Branch, Seq: info.Seq}
	r.seen[info.Branch] = struct{}{}
	r.maxSeq = max(r.maxSeq, info.Seq)
	for _, l := range info.Lineage {
		ci.Lineage = append(ci.Lineage, lineageItem(l))
		r.seen[l.Branch] = struct{}{}
		if l.MaxSeq != math.MaxUint64 {
			r.maxSeq = max(r.maxSeq, l.MaxSeq)
		}
	}
	b, _ := json.Marshal(ci)
	err = r.s.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(commitInfoKey(r.rr.ID, id), b) })
	if err != nil {
		return id, err
	}
	r.infos[id] = ci
	return id, nil
}

// Branch adds a branch at a restored commit. Like a fork of its head it
// gets a new branch ID and the lineage of the head's commit; base is its
// fork point (zero for none).
func (r *Restore) Branch(name string, head, base manifest.CommitID, protected bool, created int64) error {
	if err := ValidBranchName(name); err != nil {
		return err
	}
	if _, ok := r.roots[head]; !ok {
		return fmt.Errorf("branch %s: head %s was not restored: %w", name, head, ErrInvalid)
	}
	for _, b := range r.branches {
		if b.Name == name {
			return fmt.Errorf("branch %s: %w", name, ErrBranchExists)
		}
	}
	br := &branchRecord{Name: name, Head: head, Gen: 1, Protected: protected, Created: created}
	if !base.IsZero() {
		br.Base = base.String()
	}
	for {
		br.ID = randomID()
		if _, taken := r.seen[br.ID]; !taken {
			break
		}
	}
	r.seen[br.ID] = struct{}{}
	if ci, ok := r.infos[head]; ok {
		br.Lineage = ci.lineageAt()
	}
	br.Lineage = append(br.Lineage, lineageItem{Branch: br.ID, MaxSeq: math.MaxUint64})
	r.branches = append(r.branches, br)
	return nil
}

// Checkpoint adds a checkpoint of a restored commit.
func (r *Restore) Checkpoint(branchName, name string, commit manifest.CommitID, created time.Time) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("checkpoint name must be 1-128 bytes: %w", ErrInvalid)
	}
	if _, ok := r.roots[commit]; !ok {
		return fmt.Errorf("checkpoint %s: commit %s was not restored: %w", name, commit, ErrInvalid)
	}
	r.cps = append(r.cps, Checkpoint{Branch: branchName, Name: name, Commit: commit, CommitH: commit.String(), Created: created})
	return nil
}

// Publish makes the repository appear: its record, branches and
// checkpoints are written in one transaction, provided the name is still
// free. On failure everything restored is removed.
func (r *Restore) Publish(ctx context.Context) (*Repo, error) {
	if r.done {
		return nil, fmt.Errorf("restore %s: already finished: %w", r.rr.Name, ErrInvalid)
	}
	err := r.publish(ctx)
	if err != nil {
		if aerr := r.Abort(ctx); aerr != nil {
			r.s.log.Warn("removing a failed restore", "repo", r.rr.Name, "err", aerr)
		}
		return nil, err
	}
	r.done = true
	r.release()
	r.s.clk.observe(r.maxSeq)
	return r.rr.public(), nil
}

// publish flushes what is pending and makes the restored repository
// visible, its branches and checkpoints with it, in one transaction.
func (r *Restore) publish(ctx context.Context) error {
	if err := r.Flush(ctx); err != nil {
		return err
	}
	found := false
	for _, b := range r.branches {
		found = found || b.Name == r.rr.DefaultBranch
	}
	if !found {
		return fmt.Errorf("restore %s: default branch %s missing: %w", r.rr.Name, r.rr.DefaultBranch, ErrInvalid)
	}
	return r.s.db.Update(ctx, func(txn kv.Txn) error {
		if _, err := txn.Get(repoKey(r.rr.Name)); err == nil {
			return fmt.Errorf("%s: %w", r.rr.Name, ErrRepoExists)
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		b, _ := json.Marshal(r.rr)
		if err := txn.Set(repoKey(r.rr.Name), b); err != nil {
			return err
		}
		for _, br := range r.branches {
			if err := txn.Set(branchKey(r.rr.ID, br.Name), br.encode()); err != nil {
				return err
			}
		}
		for _, cp := range r.cps {
			b, _ := json.Marshal(cp)
			if err := txn.Set(checkpointKey(r.rr.ID, cp.Branch, cp.Name), b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Abort removes what the restore wrote under its repository ID and lets
// garbage collection run again. It is safe to call after Publish failed
// and does nothing after Publish succeeded.
func (r *Restore) Abort(ctx context.Context) error {
	if r.done {
		return nil
	}
	r.done = true
	defer r.release()
	if r.batch != nil {
		r.batch.Cancel()
		r.batch = nil
	}
	// A cancelled request still cleans up.
	ctx = context.WithoutCancel(ctx)
	for _, p := range []string{keyspace.Version, keyspace.KeyVersion, keyspace.CommitInfo, keyspace.Branch, keyspace.Checkpoint} {
		if err := r.s.deleteRange(ctx, kv.Prefix(u64([]byte(p), r.rr.ID))); err != nil {
			return err
		}
	}
	return nil
}
