package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// CommitOptions carries a commit's message and provenance.
type CommitOptions struct {
	Message    string
	Principal  string
	OnBehalfOf string
	Run        string
	Lease      string
	Extra      []manifest.Pair
	// AllowEmpty commits even when nothing is staged.
	AllowEmpty bool
	// Intent, when set, is called with the new commit's ID after the
	// commit is stored and before the branch moves to it; an error stops
	// the commit (the flight recorder's "record first, then act").
	Intent func(id manifest.CommitID) error
}

// Locker serializes work on one name across gateways that share a
// metadata store (kvlock.Locks); Lock returns the function that releases.
type Locker interface {
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// SetLocker makes commits, merges, imports, picks and restores of a
// branch take l's lock of the branch, so gateways sharing a metadata
// store do them one at a time; without one an in-process mutex does.
// Call it before serving.
func (s *Service) SetLocker(l Locker) { s.locker = l }

// lockBranch serializes the head-moving work on repo/branch: a fold
// and its swap, a merge, a restore.
func (s *Service) lockBranch(ctx context.Context, repo, branch string) (unlock func(), err error) {
	if err := s.fenced(); err != nil {
		return nil, err
	}
	if s.locker != nil {
		return s.locker.Lock(ctx, repo+"\x00"+branch)
	}
	m := s.commitLock(repo, branch)
	m.Lock()
	return m.Unlock, nil
}

// commitLock returns the mutex that serialises commits to repo/branch
// in this process.
func (s *Service) commitLock(repo, branch string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repo + "\x00" + branch
	m, ok := s.commitLocks[k]
	if !ok {
		m = &sync.Mutex{}
		s.commitLocks[k] = m
	}
	return m
}

// foldPage bounds the staged entries applied to the tree per step.
const foldPage = 4096

// Commit folds a branch's staging into a new commit. Writers keep writing
// while it runs: the open generation is sealed and a new one opened in one
// transaction, then the sealed generation is folded into the head tree in
// O(changes × log n), and the head swapped. A fold interrupted by a crash is
// finished by the next Commit; until then reads still see the sealed
// generation.
func (s *Service) Commit(ctx context.Context, repo, branch string, o CommitOptions) (manifest.CommitID, error) {
	unlock, err := s.lockBranch(ctx, repo, branch)
	if err != nil {
		return manifest.CommitID{}, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	ctx = keepsView(ctx) // a commit changes no key's contents

	var v *view
	var sealed uint64
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		var err error
		if v, err = s.writableView(ctx, txn, repo, branch); err != nil {
			return err
		}
		if v.br.SealedGen != 0 {
			sealed = v.br.SealedGen
			return nil
		}
		empty := true
		err = txn.Scan(kv.Prefix(stagePrefix(v.rr.ID, v.br.ID, v.br.Gen)), func(_, _ []byte) error {
			empty = false
			return kv.ErrStop
		})
		if err != nil {
			return err
		}
		if empty {
			if !o.AllowEmpty {
				return fmt.Errorf("%s/%s: %w", repo, v.br.Name, ErrNothingToCommit)
			}
			return nil
		}
		sealed = v.br.Gen
		v.br.SealedGen = v.br.Gen
		v.br.Gen++
		return txn.Set(branchKey(v.rr.ID, v.br.Name), v.br.encode())
	})
	if err != nil {
		return manifest.CommitID{}, err
	}

	if s.foldHook != nil {
		s.foldHook()
	}
	t := s.treeFor(v.rr)
	root := v.root
	maxSeq := v.br.CommitSeq
	if sealed != 0 {
		if root, maxSeq, err = s.fold(ctx, t, v, sealed, root, maxSeq); err != nil {
			return manifest.CommitID{}, err
		}
	}
	if sealed != 0 {
		ws, err := s.writers(ctx, v, sealed)
		if err != nil {
			return manifest.CommitID{}, err
		}
		o.Extra = withStagedBy(o.Extra, ws)
	}
	id, err := s.swapHead(ctx, v, root, maxSeq, sealed, o)
	if err != nil {
		return id, err
	}
	if sealed != 0 {
		for _, p := range [][]byte{stagePrefix(v.rr.ID, v.br.ID, sealed), writerPrefix(v.rr.ID, v.br.ID, sealed)} {
			if err := s.deleteRange(ctx, kv.Prefix(p)); err != nil {
				s.log.Warn("clearing folded staging", "repo", repo, "branch", branch, "err", err)
			}
		}
	}
	return id, nil
}

// StagedByName is the commit metadata that names the leases whose staged
// writes a commit folded: "LEASE:RUN" pairs separated by spaces, sorted.
const StagedByName = "staged_by"

// maxStagedBy bounds the leases one commit names (the rest are counted).
const maxStagedBy = 256

// writers lists the leases whose writes staging generation gen holds.
func (s *Service) writers(ctx context.Context, v *view, gen uint64) ([]Writer, error) {
	var out []Writer
	prefix := writerPrefix(v.rr.ID, v.br.ID, gen)
	err := s.sealedRead(ctx, func(r kv.Reader) error {
		out = out[:0] // the read may be retried
		return r.Scan(kv.Prefix(prefix), func(k, val []byte) error {
			out = append(out, Writer{Lease: string(k[len(prefix):]), Run: string(val)})
			return nil
		})
	})
	return out, err
}

// withStagedBy adds the staged_by pair for ws to extra (none for no
// writers).
func withStagedBy(extra []manifest.Pair, ws []Writer) []manifest.Pair {
	if len(ws) == 0 {
		return extra
	}
	parts := make([]string, 0, min(len(ws), maxStagedBy)+1)
	for i, w := range ws {
		if i == maxStagedBy {
			parts = append(parts, fmt.Sprintf("+%d", len(ws)-i))
			break
		}
		parts = append(parts, w.Lease+":"+w.Run)
	}
	return append(slices.Clone(extra), manifest.Pair{Name: StagedByName, Value: strings.Join(parts, " ")})
}

// StagedBy returns the leases whose staged writes commit c folded, as
// its staged_by metadata names them.
func StagedBy(c *manifest.Commit) []Writer {
	var out []Writer
	for _, p := range c.Extra {
		if p.Name != StagedByName {
			continue
		}
		for _, f := range strings.Fields(p.Value) {
			if lease, run, ok := strings.Cut(f, ":"); ok {
				out = append(out, Writer{Lease: lease, Run: run})
			}
		}
	}
	return out
}

// swapHead stores a commit of root on top of v's head and moves the branch
// to it, provided the branch has not moved meanwhile; sealed names the
// staging generation the commit folded (0 for none), which is closed in the
// same transaction. maxSeq is the highest version sequence the commit
// includes.
func (s *Service) swapHead(ctx context.Context, v *view, root chunk.Hash, maxSeq, sealed uint64, o CommitOptions) (manifest.CommitID, error) {
	return s.swapHeadMerge(ctx, v, root, maxSeq, sealed, o, nil)
}

// mergeIn describes the other side of a merge commit: its head becomes
// the second parent and its lineage joins the branch's, so versions it
// has seen become visible on the branch.
type mergeIn struct {
	head    manifest.CommitID
	lineage []lineageItem
	deleted []Object // what the merge removed: the trash of a protected target
}

// swapHeadMerge is swapHead for a merge of m (nil: none): m's head becomes
// the second parent and m's lineage joins the branch's. A narrowed merge's
// m has no head: only its deletions are carried (to the trash).
func (s *Service) swapHeadMerge(ctx context.Context, v *view, root chunk.Hash, maxSeq, sealed uint64, o CommitOptions, m *mergeIn) (manifest.CommitID, error) {
	parents := []manifest.CommitID{v.br.Head}
	if m != nil && !m.head.IsZero() {
		parents = append(parents, m.head)
	}
	at := time.Now().UTC()
	c := &manifest.Commit{
		Tree: root, Parents: parents,
		Message: o.Message, Principal: o.Principal, OnBehalfOf: o.OnBehalfOf,
		Run: o.Run, Lease: o.Lease, Time: at.UnixNano(), Extra: o.Extra,
	}
	id, err := s.ms.PutCommit(ctx, c)
	if err != nil {
		return id, err
	}
	if o.Intent != nil {
		if err := o.Intent(id); err != nil {
			return manifest.CommitID{}, fmt.Errorf("commit intent not recorded: %w", err)
		}
	}
	trashLater := false
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		br, err := s.branch(txn, v.rr, v.br.Name)
		if err != nil {
			return err
		}
		if br.ID != v.br.ID || br.Head != v.br.Head || br.SealedGen != sealed {
			return fmt.Errorf("%s/%s moved during commit: %w", v.rr.Name, br.Name, ErrConflict)
		}
		br.Head = id
		br.SealedGen = 0
		br.CommitSeq = max(br.CommitSeq, maxSeq)
		if m != nil {
			br.Lineage = joinLineage(br.Lineage, m.lineage)
			if trashLater, err = trashInSwap(txn, v.rr, br, id, at, m.deleted); err != nil {
				return err
			}
		}
		ci, _ := json.Marshal(commitInfo{Branch: br.ID, Seq: br.CommitSeq, Lineage: br.Lineage})
		if err := txn.Set(commitInfoKey(v.rr.ID, id), ci); err != nil {
			return err
		}
		return txn.Set(branchKey(v.rr.ID, br.Name), br.encode())
	})
	if err != nil {
		return manifest.CommitID{}, err
	}
	if trashLater {
		if err := s.finishTrash(ctx, v.rr, v.br.Name, id, at, m.deleted); err != nil {
			// The merge landed; the journal keeps the obligation.
			s.log.Warn("trash of a large merge left to SettleTrash", "repo", v.rr.Name, "commit", id, "err", err)
		}
	}
	if sealed == 0 {
		// Not a fold of staged writes (a merge, a restore, an import): the
		// branch's contents changed outside quota accounting.
		s.forgetUsage(v.rr.ID, v.br.ID)
	}
	return id, nil
}

// fold applies staging generation gen to root, a page at a time, and
// returns the new root and the highest sequence it saw.
func (s *Service) fold(ctx context.Context, t *tree.Tree, v *view, gen uint64, root chunk.Hash, maxSeq uint64) (chunk.Hash, uint64, error) {
	prefix := stagePrefix(v.rr.ID, v.br.ID, gen)
	from := prefix
	end := kv.PrefixEnd(prefix)
	for {
		var edits []tree.Edit
		var last []byte
		err := s.sealedRead(ctx, func(r kv.Reader) error {
			edits, last = edits[:0], nil // the read may be retried
			return r.Scan(kv.Range{Start: from, End: end}, func(k, val []byte) error {
				st, err := decodeStaged(val)
				if err != nil {
					return err
				}
				maxSeq = max(maxSeq, st.seq)
				key := append([]byte(nil), k[len(prefix):]...)
				edits = append(edits, tree.Edit{Key: key, Value: st.entry, Delete: st.del})
				last = k
				if len(edits) >= foldPage {
					return kv.ErrStop
				}
				return nil
			})
		})
		if err != nil {
			return root, maxSeq, err
		}
		if len(edits) > 0 {
			if root, err = t.Apply(ctx, root, tree.SliceEdits(edits)); err != nil {
				return root, maxSeq, fmt.Errorf("fold staging: %w", err)
			}
		}
		if len(edits) < foldPage {
			return root, maxSeq, nil
		}
		from = append(append([]byte(nil), last...), 0)
	}
}

// sealedRead reads a sealed staging generation. On a shared store it
// reads in a serializable transaction, not a snapshot: a write that read
// the branch before the seal and commits after it is serialized before
// the seal, and a snapshot taken between the two commits would miss it
// (the fold would then clear a write it never applied). A serializable
// read conflicts with such a write, and one of them is retried.
func (s *Service) sealedRead(ctx context.Context, fn func(kv.Reader) error) error {
	if s.locker == nil {
		return s.db.View(ctx, fn)
	}
	return s.db.Update(ctx, func(txn kv.Txn) error { return fn(txn) })
}

// LogEntry is one commit of a log.
type LogEntry struct {
	ID     manifest.CommitID
	Commit *manifest.Commit
}

// Log calls fn for the commits reachable from ref (a branch or commit ID)
// along first parents, newest first, until fn returns an error or history
// ends. Returning kv.ErrStop ends the walk without error.
func (s *Service) Log(ctx context.Context, repo, ref string, fn func(LogEntry) error) error {
	id, err := s.ResolveRef(ctx, repo, ref)
	if err != nil {
		return err
	}
	for !id.IsZero() {
		c, err := s.ms.GetCommit(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(LogEntry{ID: id, Commit: c}); err != nil {
			if errors.Is(err, kv.ErrStop) {
				return nil
			}
			return err
		}
		if len(c.Parents) == 0 {
			return nil
		}
		id = c.Parents[0]
	}
	return nil
}

// ChangeKind classifies a change.
type ChangeKind byte

// Change kinds as nas diff prints them.
const (
	Added    ChangeKind = 'A'
	Modified ChangeKind = 'M'
	Deleted  ChangeKind = 'D'
)

// Change is one key that differs between two states.
type Change struct {
	Kind     ChangeKind
	Key      string
	Old, New *manifest.Entry // nil when absent
}

// toChange decodes a key's old and new encoded entries (nil: absent) into
// a Change.
func toChange(key []byte, old, new []byte) (Change, error) {
	c := Change{Key: string(key)}
	var err error
	if old != nil {
		if c.Old, err = manifest.DecodeEntry(old); err != nil {
			return c, err
		}
	}
	if new != nil {
		if c.New, err = manifest.DecodeEntry(new); err != nil {
			return c, err
		}
	}
	switch {
	case old == nil:
		c.Kind = Added
	case new == nil:
		c.Kind = Deleted
	default:
		c.Kind = Modified
	}
	return c, nil
}

// lowerBound returns the smallest key after after ("" means from the
// start).
func lowerBound(after string) []byte {
	if after == "" {
		return nil
	}
	return []byte(after + "\x00")
}

// Diff streams the differences between the committed states of two refs
// (branch names or commit IDs) in key order, in O(changes × log n),
// starting after key after. With a filter it seeks only the filter's key
// ranges and streams only keys it matches, so changes outside them (a
// lease's hidden keys) cost nothing to skip.
func (s *Service) Diff(ctx context.Context, repo, from, to, after string, f *Filter, fn func(Change) error) error {
	var rr *repoRecord
	var a, b manifest.CommitID
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		if rr, err = s.repo(r, repo); err != nil {
			return err
		}
		if a, err = s.resolve(ctx, r, rr, from); err != nil {
			return err
		}
		b, err = s.resolve(ctx, r, rr, to)
		return err
	})
	if err != nil {
		return err
	}
	ra, err := s.root(ctx, a)
	if err != nil {
		return err
	}
	rb, err := s.root(ctx, b)
	if err != nil {
		return err
	}
	t := s.treeFor(rr)
	for _, kr := range f.ranges(string(lowerBound(after)), "") {
		var upper []byte
		if kr.End != "" {
			upper = []byte(kr.End)
		}
		err := t.DiffRange(ctx, ra, rb, []byte(kr.Start), upper, func(c tree.Change) error {
			if !f.match(string(c.Key)) {
				return nil
			}
			ch, err := toChange(c.Key, c.Old, c.New)
			if err != nil || !f.admitsChange(ch) {
				return err
			}
			return fn(ch)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// errStopIter ends a push iterator early.
var errStopIter = errors.New("stop iteration")

// Changes streams what a branch changed since its fork point, staged
// changes included, in key order. The default branch, which has no fork
// point, is compared with the empty tree. Keys up to after are skipped.
func (s *Service) Changes(ctx context.Context, repo, branch, after string, fn func(Change) error) error {
	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		v, err = s.openView(ctx, r, repo, branch)
		return err
	})
	if err != nil {
		return err
	}
	t := s.treeFor(v.rr)
	base, err := s.forkRoot(ctx, v)
	if err != nil {
		return err
	}
	next, stop := iter.Pull2(diffRangeSeq(ctx, t, base, v.root, lowerBound(after)))
	defer stop()
	staging := s.stagedStream(ctx, v)
	staging.seek(string(lowerBound(after)))

	dc, derr, dok := next()
	for {
		if derr != nil {
			return derr
		}
		sk, sval, sdel, sok := staging.peekAll()
		if !dok && !sok {
			return staging.err()
		}
		if sok && (!dok || sk <= string(dc.Key)) {
			// A staged key overrides the committed change of the same key.
			if err := stagedChange(ctx, t, base, sk, sval, sdel, fn); err != nil {
				return err
			}
			if dok && sk == string(dc.Key) {
				dc, derr, dok = next()
			}
			staging.skip(sk)
			continue
		}
		ch, err := toChange(dc.Key, dc.Old, dc.New)
		if err != nil {
			return err
		}
		if err := fn(ch); err != nil {
			return err
		}
		dc, derr, dok = next()
	}
}

// forkRoot returns the root of v's fork point, or the empty tree for a
// branch without one.
func (s *Service) forkRoot(ctx context.Context, v *view) (chunk.Hash, error) {
	if v.br.Base == "" {
		return chunk.Hash{}, nil
	}
	id, err := manifest.ParseCommitID(v.br.Base)
	if err != nil {
		return chunk.Hash{}, err
	}
	return s.root(ctx, id)
}

// diffRangeSeq adapts Tree.DiffRange, from lower on, to a pull-able
// sequence.
func diffRangeSeq(ctx context.Context, t *tree.Tree, from, to chunk.Hash, lower []byte) iter.Seq2[tree.Change, error] {
	return func(yield func(tree.Change, error) bool) {
		err := t.DiffRange(ctx, from, to, lower, nil, func(c tree.Change) error {
			if !yield(c, nil) {
				return errStopIter
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopIter) {
			yield(tree.Change{}, err)
		}
	}
}

// stagedStream returns v's staged keys, open generation over sealed, as
// one ordered stream, tombstones included.
func (s *Service) stagedStream(ctx context.Context, v *view) *merged {
	staging := &merged{}
	for _, gen := range []uint64{v.br.Gen, v.br.SealedGen} {
		if gen != 0 {
			staging.srcs = append(staging.srcs, &stagingSource{ctx: ctx, db: s.db, prefix: stagePrefix(v.rr.ID, v.br.ID, gen)})
		}
	}
	return staging
}

// stagedChange calls fn with the change staged key sk (valued sval, or
// deleted when sdel) makes to the tree base, if it makes one.
func stagedChange(ctx context.Context, t *tree.Tree, base chunk.Hash, sk string, sval []byte, sdel bool, fn func(Change) error) error {
	old, found, err := t.Get(ctx, base, []byte(sk))
	if err != nil {
		return err
	}
	if !found {
		old = nil
	}
	var nv []byte
	if !sdel {
		nv = sval
	}
	if old == nil && nv == nil {
		return nil
	}
	if old != nil && nv != nil && equalEntries(old, nv) {
		return nil
	}
	ch, err := toChange([]byte(sk), old, nv)
	if err != nil {
		return err
	}
	return fn(ch)
}

// equalEntries reports whether two encoded entries are the same.
func equalEntries(a, b []byte) bool { return string(a) == string(b) }

// peekAll is peek that also returns tombstones.
func (m *merged) peekAll() (string, []byte, bool, bool) {
	var best string
	var bestVal []byte
	var bestDel, found bool
	for _, s := range m.srcs {
		k, v, del, ok := s.peek()
		if ok && (!found || k < best) {
			best, bestVal, bestDel, found = k, v, del, true
		}
	}
	return best, bestVal, bestDel, found
}

// Sees reports whether a commit is part of the history a branch has seen
// (its lineage): a lease bound to the branch may read it.
func (s *Service) Sees(ctx context.Context, repo, branchName string, id manifest.CommitID) (bool, error) {
	var ok bool
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, branchName)
		if err != nil {
			return err
		}
		ci, err := s.commitInfo(r, v.rr, id)
		if errors.Is(err, manifest.ErrNoSuchCommit) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = sees(v.br.Lineage, ci.Branch, ci.Seq)
		return nil
	})
	return ok, err
}

// joinLineage returns a lineage that sees everything a or b sees.
func joinLineage(a, b []lineageItem) []lineageItem {
	out := append([]lineageItem(nil), a...)
	for _, x := range b {
		found := false
		for i := range out {
			if out[i].Branch == x.Branch {
				out[i].MaxSeq = max(out[i].MaxSeq, x.MaxSeq)
				found = true
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}
