package branch

import (
	"context"
	"fmt"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// Revert and CherryPick replay one commit's changes (against its first
// parent) on a branch as a new single-parent commit. Both are three-way
// merges run by the merge machinery (threeWay): a cherry-pick merges the
// commit into the branch with its first parent as the base; a revert
// merges the first parent into the branch with the commit as the base, so
// a key that a later commit changed differently is a conflict, listed with
// both ETags like a merge conflict, and nothing changes.

// Commit metadata naming the commit a revert undid or a cherry-pick
// applied.
const (
	RevertsName    = "reverts"
	PickedFromName = "cherry_picked_from"
)

// PickOptions tunes Revert and CherryPick.
type PickOptions struct {
	CommitOptions
	// Allow, when set, is asked about every key the new commit would
	// change (deleted: it would remove it) before anything is written,
	// with the commits whose entries of the key the change involves (the
	// result's Base, Ours and Theirs); an error stops the operation. The
	// control plane holds a lease to its view and its ceiling here.
	Allow func(key string, deleted bool, at []manifest.CommitID) error
}

// Revert makes a commit on branch br that undoes commit ref's changes
// relative to its first parent. The branch must be unprotected (a revert
// is a direct commit) and have no uncommitted changes.
func (s *Service) Revert(ctx context.Context, repo, br, ref string, o PickOptions) (*MergeResult, error) {
	return s.pick(ctx, repo, br, ref, true, o)
}

// CherryPick makes a commit on branch br that applies commit ref's changes
// relative to its first parent. The branch must be unprotected and have no
// uncommitted changes.
func (s *Service) CherryPick(ctx context.Context, repo, br, ref string, o PickOptions) (*MergeResult, error) {
	return s.pick(ctx, repo, br, ref, false, o)
}

// pick is Revert (revert true) and CherryPick: in the result, Base is the
// merge base used, Ours the branch's head and Theirs the side whose
// changes are replayed.
func (s *Service) pick(ctx context.Context, repo, br, ref string, revert bool, o PickOptions) (*MergeResult, error) {
	unlock, err := s.lockBranch(ctx, repo, br)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	v, picked, _, staged, err := s.mergeSides(ctx, repo, ref, br)
	if err != nil {
		return nil, err
	}
	if v.br.Protected {
		return nil, fmt.Errorf("%s/%s: %w", repo, br, ErrProtected)
	}
	if staged {
		return nil, fmt.Errorf("%s/%s has uncommitted changes; commit them first: %w", repo, br, ErrConflict)
	}
	c, err := s.ms.GetCommit(ctx, picked)
	if err != nil {
		return nil, err
	}
	if len(c.Parents) == 0 {
		return nil, fmt.Errorf("commit %s has no parent to compare with: %w", picked, ErrInvalid)
	}
	res := &MergeResult{Base: c.Parents[0], Ours: v.br.Head, Theirs: picked}
	if revert {
		res.Base, res.Theirs = picked, c.Parents[0]
	}
	root, edits, err := s.pickTree(ctx, v, res, o.Allow)
	if err != nil {
		return res, err
	}
	res.Applied = len(edits)
	o.CommitOptions = pickProvenance(o.CommitOptions, c, picked, revert)
	id, err := s.swapHead(ctx, v, root, v.br.CommitSeq, 0, o.CommitOptions)
	if err != nil {
		return res, err
	}
	res.Commit = id
	return res, nil
}

// pickTree runs the three-way merge res names onto v's head and returns
// the new tree and the edits that make it; conflicts, an empty result and
// a key allow refuses stop it.
func (s *Service) pickTree(ctx context.Context, v *view, res *MergeResult, allow func(string, bool, []manifest.CommitID) error) (chunk.Hash, []tree.Edit, error) {
	var roots [3]chunk.Hash
	for i, id := range []manifest.CommitID{res.Base, res.Ours, res.Theirs} {
		var err error
		if roots[i], err = s.root(ctx, id); err != nil {
			return chunk.Hash{}, nil, err
		}
	}
	t := s.treeFor(v.rr)
	edits, _, err := s.threeWay(ctx, t, roots[0], roots[1], roots[2], MergeOptions{}, res)
	if err != nil {
		return chunk.Hash{}, nil, err
	}
	if len(res.Conflicts) > 0 {
		return chunk.Hash{}, nil, fmt.Errorf("%d conflicting key(s): %w", len(res.Conflicts), ErrMergeConflict)
	}
	if len(edits) == 0 {
		return chunk.Hash{}, nil, fmt.Errorf("%s/%s already has that state: %w", v.rr.Name, v.br.Name, ErrNothingToCommit)
	}
	at := []manifest.CommitID{res.Base, res.Ours, res.Theirs}
	for _, e := range edits {
		if allow == nil {
			break
		}
		if err := allow(string(e.Key), e.Delete, at); err != nil {
			return chunk.Hash{}, nil, err
		}
	}
	root, err := t.Apply(ctx, roots[1], tree.SliceEdits(edits))
	if err != nil {
		return chunk.Hash{}, nil, fmt.Errorf("apply %s: %w", res.Theirs, err)
	}
	return root, edits, nil
}

// pickProvenance fills a revert's or cherry-pick's default message and
// names the picked commit in its metadata.
func pickProvenance(o CommitOptions, c *manifest.Commit, picked manifest.CommitID, revert bool) CommitOptions {
	verb, name := "cherry-pick", PickedFromName
	if revert {
		verb, name = "revert", RevertsName
	}
	if o.Message == "" {
		o.Message = fmt.Sprintf("%s %s: %s", verb, picked.String()[:12], c.Message)
	}
	o.Extra = append(append([]manifest.Pair(nil), o.Extra...), manifest.Pair{Name: name, Value: picked.String()})
	return o
}
