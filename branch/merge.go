package branch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// ErrMergeConflict is returned (with the result listing every conflict)
// when both sides changed a key differently and no pattern resolves it.
var ErrMergeConflict = fmt.Errorf("merge conflict: %w", ErrConflict)

// MergeOptions tunes Merge.
type MergeOptions struct {
	CommitOptions
	// Ours and Theirs are key globs (package glob) whose conflicts resolve
	// to the target's or the source's side.
	Ours, Theirs []string
	// AllowProtected lets a merge into a protected branch: the control
	// plane sets it once policy or a person approved.
	AllowProtected bool
	// ExpectSource and ExpectTarget, when set, bind the merge to the heads
	// a decision was made on: if either moved, the merge does not happen.
	ExpectSource, ExpectTarget manifest.CommitID
	// DryRun computes the result without committing.
	DryRun bool
	// Review marks every version the merge carries into the target
	// reviewed (its label's Reviewed): a person approved the diff, which
	// declassifies it (external content no longer taints who reads it).
	Review bool
	// Only, when not nil, narrows the merge to these keys: the source's
	// changes to any other key stay on the source. A narrowed merge is
	// not a merge in history: its commit has the target's head as its
	// one parent (the source's head is no ancestor of it), so what was
	// left out can be merged later.
	Only []string
}

// Conflict is a key both sides changed differently.
type Conflict struct {
	Key          string
	Base         *manifest.Entry // nil if the key did not exist at the base
	Ours, Theirs *manifest.Entry // nil if that side deleted it
}

// MergeResult reports a merge.
type MergeResult struct {
	Base, Ours, Theirs manifest.CommitID
	Commit             manifest.CommitID // zero when nothing was merged
	Applied            int               // keys the merge changed on the target
	Conflicts          []Conflict
	// Deleted lists what the merge removed from the target, with the entry
	// it had, for the trash of a protected branch.
	Deleted []Object
	// Changes lists, in key order, what the merge changes on the target
	// (filled by a dry run): the diff a reviewer approves.
	Changes  []Change
	UpToDate bool // the source had nothing the target lacks
}

// Merge merges ref from (a branch or commit) into branch into with a
// three-way merge against their merge base, in O(changes): equal subtrees
// are skipped by hash, and the result is built from whichever side has
// fewer changes to apply (mergedRoot). A conflict stops the merge,
// changes nothing and is reported per key with both sides; patterns in o
// resolve conflicts.
// Merging commits a merge commit with two parents and the provenance in o.
// The target must have no uncommitted changes.
func (s *Service) Merge(ctx context.Context, repo, from, into string, o MergeOptions) (*MergeResult, error) {
	unlock, err := s.lockBranch(ctx, repo, into)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	v, theirs, theirsInfo, staged, err := s.mergeSides(ctx, repo, from, into)
	if err != nil {
		return nil, err
	}
	if v.br.Protected && !o.AllowProtected {
		return nil, fmt.Errorf("merge into %s/%s: %w", repo, into, ErrProtected)
	}
	if staged {
		return nil, fmt.Errorf("%s/%s has uncommitted changes; commit them first: %w", repo, into, ErrConflict)
	}
	res := &MergeResult{Ours: v.br.Head, Theirs: theirs}
	if !o.ExpectSource.IsZero() && o.ExpectSource != theirs || !o.ExpectTarget.IsZero() && o.ExpectTarget != v.br.Head {
		return res, fmt.Errorf("the branches moved since the merge was decided: %w", ErrConflict)
	}
	base, err := s.mergeBase(ctx, v.br.Head, theirs)
	if err != nil {
		return nil, err
	}
	res.Base = base
	if base == theirs {
		res.UpToDate = true
		return res, nil
	}
	roots := make(map[manifest.CommitID]chunk.Hash)
	for _, id := range []manifest.CommitID{base, v.br.Head, theirs} {
		if roots[id], err = s.root(ctx, id); err != nil {
			return nil, err
		}
	}
	t := s.treeFor(v.rr)
	edits, alt, err := s.threeWay(ctx, t, roots[base], roots[v.br.Head], roots[theirs], o, res)
	if err != nil {
		return res, err
	}
	if len(res.Conflicts) > 0 {
		return res, fmt.Errorf("%d conflicting key(s): %w", len(res.Conflicts), ErrMergeConflict)
	}
	if o.Only != nil {
		edits = narrow(edits, res, o.Only)
	}
	res.Applied = len(edits)
	if o.DryRun {
		res.Changes, err = dryRunChanges(ctx, t, roots[v.br.Head], edits)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	root, err := mergedRoot(ctx, t, roots[v.br.Head], roots[theirs], edits, alt, o.Only == nil)
	if err != nil {
		return nil, err
	}
	if o.Message == "" {
		o.Message = fmt.Sprintf("merge %s into %s", from, into)
	}
	in := &mergeIn{head: theirs, lineage: theirsInfo.lineageAt(), deleted: res.Deleted}
	if o.Only != nil {
		in.head, in.lineage = manifest.CommitID{}, nil
	}
	id, err := s.swapHeadMerge(ctx, v, root, v.br.CommitSeq, 0, o.CommitOptions, in)
	if err != nil {
		return nil, err
	}
	res.Commit = id
	return res, nil
}

// narrow keeps the edits (and the deletions reported in res) of the keys
// in only.
func narrow(edits []tree.Edit, res *MergeResult, only []string) []tree.Edit {
	keep := make(map[string]bool, len(only))
	for _, k := range only {
		keep[k] = true
	}
	out := edits[:0]
	for _, e := range edits {
		if keep[string(e.Key)] {
			out = append(out, e)
		}
	}
	var deleted []Object
	for _, d := range res.Deleted {
		if keep[d.Key] {
			deleted = append(deleted, d)
		}
	}
	res.Deleted = deleted
	return out
}

// mergeSides reads, in one transaction, the target's view, the source's
// commit and its lineage, and whether the target has uncommitted changes.
func (s *Service) mergeSides(ctx context.Context, repo, from, into string) (v *view, theirs manifest.CommitID, info *commitInfo, staged bool, err error) {
	err = s.db.View(ctx, func(r kv.Reader) error {
		var err error
		if v, err = s.openView(ctx, r, repo, into); err != nil {
			return err
		}
		if theirs, err = s.resolve(ctx, r, v.rr, from); err != nil {
			return err
		}
		if info, err = s.commitInfo(r, v.rr, theirs); err != nil {
			return err
		}
		if v.br.SealedGen != 0 {
			staged = true
			return nil
		}
		return r.Scan(kv.Prefix(stagePrefix(v.rr.ID, v.br.ID, v.br.Gen)), func(_, _ []byte) error {
			staged = true
			return kv.ErrStop
		})
	})
	return v, theirs, info, staged, err
}

// dryRunChanges describes what edits would change on the tree at root.
func dryRunChanges(ctx context.Context, t *tree.Tree, root chunk.Hash, edits []tree.Edit) ([]Change, error) {
	var out []Change
	for _, e := range edits {
		old, _, err := t.Get(ctx, root, e.Key)
		if err != nil {
			return nil, err
		}
		var nv []byte
		if !e.Delete {
			nv = e.Value
		}
		ch, err := toChange(e.Key, old, nv)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// mergedRoot applies the merge: edits to ours, or, when fewer and the
// merge is whole (alt holds no narrowing), alt to theirs. Both give the
// same tree, since a tree is the same for the same entries whatever built
// it; a run's branch with many changes merged into a target that moved a
// little then costs the target's changes, not the run's.
func mergedRoot(ctx context.Context, t *tree.Tree, ours, theirs chunk.Hash, edits, alt []tree.Edit, whole bool) (chunk.Hash, error) {
	from, apply := ours, edits
	if whole && len(alt) < len(edits) {
		from, apply = theirs, alt
	}
	root, err := t.Apply(ctx, from, tree.SliceEdits(apply))
	if err != nil {
		return root, fmt.Errorf("apply merge: %w", err)
	}
	return root, nil
}

// threeWay joins the two sides' changes since base and returns the edits
// to apply to ours, filling conflicts and deletions into res, and alt, the
// edits that turn theirs into the same result.
func (s *Service) threeWay(ctx context.Context, t *tree.Tree, base, ours, theirs chunk.Hash, o MergeOptions, res *MergeResult) (edits, alt []tree.Edit, err error) {
	nextO, stopO := iter.Pull2(diffSeq(ctx, t, base, ours))
	defer stopO()
	nextT, stopT := iter.Pull2(diffSeq(ctx, t, base, theirs))
	defer stopT()
	co, eo, okO := nextO()
	ct, et, okT := nextT()
	matches := func(globs []string, key string) bool {
		for _, g := range globs {
			if glob.Match(glob.Clean(g), key) {
				return true
			}
		}
		return false
	}
	for okO || okT {
		if eo != nil {
			return nil, nil, eo
		}
		if et != nil {
			return nil, nil, et
		}
		switch {
		case okT && (!okO || bytes.Compare(ct.Key, co.Key) < 0):
			// Only the source changed this key.
			n := len(edits)
			edits = appendEdit(edits, ct, res, o.Review)
			alt = altOfSource(alt, ct, edits, n)
			ct, et, okT = nextT()
		case okO && (!okT || bytes.Compare(co.Key, ct.Key) < 0):
			// Only the target changed it: keep.
			alt = append(alt, setTo(co.Key, co.New))
			co, eo, okO = nextO()
		default:
			// Both changed the same key.
			key := string(co.Key)
			switch {
			case sameObject(co.New, ct.New), isScratch(ct.New), matches(o.Ours, key):
				if !bytes.Equal(co.New, ct.New) {
					alt = append(alt, setTo(co.Key, co.New))
				}
			case matches(o.Theirs, key):
				n := len(edits)
				edits = appendEdit(edits, ct, res, o.Review)
				alt = altOfSource(alt, ct, edits, n)
			default:
				c := Conflict{Key: key}
				var err error
				if c.Base, err = decodeOpt(co.Old); err != nil {
					return nil, nil, err
				}
				if c.Ours, err = decodeOpt(co.New); err != nil {
					return nil, nil, err
				}
				if c.Theirs, err = decodeOpt(ct.New); err != nil {
					return nil, nil, err
				}
				res.Conflicts = append(res.Conflicts, c)
			}
			co, eo, okO = nextO()
			ct, et, okT = nextT()
		}
	}
	return edits, alt, nil
}

// setTo is the edit that makes key's entry v (nil: absent).
func setTo(key, v []byte) tree.Edit {
	if v == nil {
		return tree.Edit{Key: bytes.Clone(key), Delete: true}
	}
	return tree.Edit{Key: bytes.Clone(key), Value: v}
}

// altOfSource is what theirs needs for a source change c that appendEdit
// turned into edits[n:]: nothing when carried as it is; the base's entry
// back when it was left out (a scratch file); the carried entry when
// appendEdit changed it (marked reviewed).
func altOfSource(alt []tree.Edit, c tree.Change, edits []tree.Edit, n int) []tree.Edit {
	if len(edits) == n {
		return append(alt, setTo(c.Key, c.Old))
	}
	if e := edits[n]; !e.Delete && !bytes.Equal(e.Value, c.New) {
		return append(alt, e)
	}
	return alt
}

// appendEdit carries the source's change c into the target, unless it
// writes a scratch file (which stays where it was written). The entry is
// decoded once, to see both its class and, for a reviewed merge, its
// label.
func appendEdit(edits []tree.Edit, c tree.Change, res *MergeResult, review bool) []tree.Edit {
	if c.New == nil {
		if e, err := manifest.DecodeEntry(c.Old); err == nil {
			res.Deleted = append(res.Deleted, Object{Key: string(c.Key), Entry: e})
		}
		return append(edits, tree.Edit{Key: bytes.Clone(c.Key), Delete: true})
	}
	v := c.New
	e, err := manifest.DecodeEntry(v)
	switch {
	case err != nil: // carried unchanged: fsck reports it
	case e.Retention == manifest.RetentionScratch:
		return edits
	case review && !label.Of(e.Label).Reviewed:
		v = markReviewed(e)
	}
	return append(edits, tree.Edit{Key: bytes.Clone(c.Key), Value: v})
}

// markReviewed is e, encoded, with its label marked reviewed: a person
// approved the diff, which declassifies it.
func markReviewed(e *manifest.Entry) []byte {
	l := label.Of(e.Label)
	l.Reviewed = true
	e.Label = &l
	return e.Encode()
}

// isScratch reports whether the encoded entry b is of the scratch
// retention class: such files are never merged out of their branch.
func isScratch(b []byte) bool {
	if b == nil {
		return false
	}
	e, err := manifest.DecodeEntry(b)
	return err == nil && e.Retention == manifest.RetentionScratch
}

func decodeOpt(b []byte) (*manifest.Entry, error) {
	if b == nil {
		return nil, nil
	}
	return manifest.DecodeEntry(b)
}

// sameObject reports whether two entries hold the same object (content,
// headers and metadata), whatever their version IDs, times and review
// marks (a narrowed approval carried some of a branch's versions into the
// target reviewed; the branch still holds them unreviewed).
func sameObject(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ea, err1 := manifest.DecodeEntry(a)
	eb, err2 := manifest.DecodeEntry(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ea.VersionID, eb.VersionID, ea.ModTime, eb.ModTime = "", "", 0, 0
	for _, e := range []*manifest.Entry{ea, eb} {
		l := label.Of(e.Label)
		l.Reviewed = false
		e.Label = &l
	}
	return bytes.Equal(ea.Encode(), eb.Encode())
}

// diffSeq adapts Tree.Diff to a pull-able sequence.
func diffSeq(ctx context.Context, t *tree.Tree, from, to chunk.Hash) iter.Seq2[tree.Change, error] {
	return func(yield func(tree.Change, error) bool) {
		err := t.Diff(ctx, from, to, func(c tree.Change) error {
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

// mergeBase returns the nearest common ancestor of a and b.
func (s *Service) mergeBase(ctx context.Context, a, b manifest.CommitID) (manifest.CommitID, error) {
	ancestors := map[manifest.CommitID]bool{}
	queue := []manifest.CommitID{a}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if ancestors[id] {
			continue
		}
		ancestors[id] = true
		c, err := s.ms.GetCommit(ctx, id)
		if errors.Is(err, manifest.ErrNotFound) {
			continue // expired history
		}
		if err != nil {
			return manifest.CommitID{}, err
		}
		queue = append(queue, c.Parents...)
	}
	seen := map[manifest.CommitID]bool{}
	queue = []manifest.CommitID{b}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if ancestors[id] {
			return id, nil
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.ms.GetCommit(ctx, id)
		if errors.Is(err, manifest.ErrNotFound) {
			continue
		}
		if err != nil {
			return manifest.CommitID{}, err
		}
		queue = append(queue, c.Parents...)
	}
	return manifest.CommitID{}, fmt.Errorf("no common history between %s and %s: %w", a, b, ErrConflict)
}
