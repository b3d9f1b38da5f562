package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Reverts and cherry-picks are direct commits: a lease may make them on
// its own branch, replaying a commit its branch has seen, when it may
// write (or delete) every key the new commit changes.

func (h *Handler) commitRevert(ctx context.Context, c *call, a *apiv1.CommitRevertRequest) (*apiv1.PickResponse, error) {
	return h.pick(ctx, c, apiv1.PickRequest(*a), "revert", h.b.Revert)
}

func (h *Handler) commitCherryPick(ctx context.Context, c *call, a *apiv1.CommitCherryPickRequest) (*apiv1.PickResponse, error) {
	return h.pick(ctx, c, apiv1.PickRequest(*a), "cherry-pick", h.b.CherryPick)
}

// pickFunc is branch.Service.Revert or CherryPick.
type pickFunc func(ctx context.Context, repo, br, ref string, o branch.PickOptions) (*branch.MergeResult, error)

// pick authorizes and runs a revert or cherry-pick (what names it in the
// flight recorder).
func (h *Handler) pick(ctx context.Context, c *call, a apiv1.PickRequest, what string, fn pickFunc) (*apiv1.PickResponse, error) {
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	if err := required("repo", a.Repo, "branch", a.Branch, "commit", a.Commit); err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Read, auth.Target{Repo: a.Repo, Branch: a.Branch, Commit: a.Commit}); err != nil {
		return nil, err
	}
	o := branch.PickOptions{CommitOptions: commitOptions(c, a.Message), Allow: h.pickAllow(ctx, c, a.Repo, a.Branch)}
	o.Intent = func(id manifest.CommitID) error {
		e := record.Event{Kind: record.KindCommit, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: id.String()},
			Details: detail(what + " " + a.Commit)}
		return h.record(ctx, c, e)
	}
	res, err := fn(ctx, a.Repo, a.Branch, a.Commit, o)
	result, verr := h.visibleResult(ctx, c, a.Repo, res)
	if verr != nil {
		return nil, verr
	}
	out := &apiv1.PickResponse{Result: result}
	if errors.Is(err, branch.ErrMergeConflict) {
		if len(out.Result.Conflicts) == 0 && !c.p.IsOwner() {
			return nil, errHiddenChanges() // every conflict is on a key the lease cannot see
		}
		msg := fmt.Sprintf("%s of %s: %d conflicting key(s); nothing was changed", what, a.Commit, len(out.Result.Conflicts))
		return nil, &Error{Status: http.StatusConflict, Code: apiv1.CodeMergeConflict, Message: msg, Details: map[string]any{"result": out.Result}}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pickAllow asks the door about each key a revert, cherry-pick or
// restore on br changes: write, or delete for a key it removes, with no
// entry of it at the commits involved above a lease's ceiling. A key the
// lease cannot see, by its view or its ceiling, refuses the whole change
// without being named.
func (h *Handler) pickAllow(ctx context.Context, c *call, repo, br string) func(string, bool, []manifest.CommitID) error {
	return func(key string, deleted bool, at []manifest.CommitID) error {
		act := lease.Write
		if deleted {
			act = lease.Delete
		}
		err := h.auth.AuthorizeChange(ctx, c.p, act, auth.Target{Repo: repo, Branch: br, Key: key}, at...)
		if err != nil && !c.p.IsOwner() && (errors.Is(err, auth.ErrNotFound) || !c.p.Visible(key, lease.List, lease.Read)) {
			return errHiddenChanges() // the door's refusal would name the key
		}
		return err
	}
}

// errHiddenChanges refuses a lease's revert or cherry-pick of a commit that
// changes keys outside its view (or only conflicts on keys it may not
// know of), without naming them.
func errHiddenChanges() error { return denied("the commit changes keys outside the lease's view") }

// visibleResult is res as the caller may see it: for a lease, only the
// conflicts on keys the door admits as of the pick's three commits (the
// picked commit, its parent and the branch's head), so neither its view
// nor its sensitivity ceiling is crossed by naming a key.
func (h *Handler) visibleResult(ctx context.Context, c *call, repo string, res *branch.MergeResult) (apiv1.MergeResult, error) {
	r := mergeOut(res)
	if c.p.IsOwner() || res == nil {
		return r, nil
	}
	var keep []apiv1.Conflict
	for _, x := range r.Conflicts {
		ok, err := h.auth.AdmitsAt(ctx, c.p, repo, x.Key, res.Base, res.Ours, res.Theirs)
		if err != nil {
			return r, fmt.Errorf("conflicts of the pick: %w", err)
		}
		if ok {
			keep = append(keep, x)
		}
	}
	r.Conflicts = keep
	return r, nil
}
