package api

import (
	"context"
	"errors"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Commits, history and diffs: open to a lease on its own branch and the
// commits it has seen, limited to its view.

func (h *Handler) commitCreate(ctx context.Context, c *call, a *apiv1.CommitCreateRequest) (*apiv1.CommitResponse, error) {
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	o := commitOptions(c, a.Message)
	o.AllowEmpty = a.AllowEmpty
	o.Intent = func(id manifest.CommitID) error {
		e := record.Event{Kind: record.KindCommit, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: id.String()}, Details: detail(a.Message)}
		if err := h.stagedBy(ctx, &e, id); err != nil {
			return err
		}
		return h.record(ctx, c, e)
	}
	id, err := h.b.Commit(ctx, a.Repo, a.Branch, o)
	if err != nil {
		return nil, err
	}
	cm, err := h.b.Manifest().GetCommit(ctx, id)
	if err != nil {
		return nil, err
	}
	return &apiv1.CommitResponse{Commit: commitOut(id, cm)}, nil
}

// commitOptions is a commit's message and the caller's provenance: the
// owner's access key, or the lease's principal, run and purpose.
func commitOptions(c *call, message string) branch.CommitOptions {
	o := branch.CommitOptions{Message: message, Principal: c.p.AccessKey}
	if l := c.p.Lease; l != nil {
		o.Principal, o.OnBehalfOf, o.Run, o.Lease = l.Principal, l.OnBehalfOf, l.Run, l.ID
		if l.Purpose != "" {
			o.Extra = []manifest.Pair{{Name: "purpose", Value: l.Purpose}}
		}
	}
	return o
}

func (h *Handler) commitLog(ctx context.Context, c *call, a *apiv1.CommitLogRequest) (*apiv1.CommitLogResponse, error) {
	if err := required("repo", a.Repo, "ref", a.Ref); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	if err := h.leaseRef(ctx, c, a.Repo, a.Ref); err != nil {
		return nil, err
	}
	ref := a.Ref
	if a.Cursor != "" {
		if err := h.leaseRef(ctx, c, a.Repo, a.Cursor); err != nil {
			return nil, err
		}
		ref = a.Cursor
	}
	out := &apiv1.CommitLogResponse{Commits: []apiv1.Commit{}}
	err = h.b.Log(ctx, a.Repo, ref, func(e branch.LogEntry) error {
		if len(out.Commits) == limit {
			out.NextCursor = e.ID.String()
			return kv.ErrStop
		}
		out.Commits = append(out.Commits, visibleCommit(c, commitOut(e.ID, e.Commit)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stagedBy names in a commit's event the leases whose staged writes the
// commit folded (whoever commits), after flushing their read manifests,
// so `nas explain` reaches every run behind the commit.
func (h *Handler) stagedBy(ctx context.Context, e *record.Event, id manifest.CommitID) error {
	cm, err := h.b.Manifest().GetCommit(ctx, id)
	if err != nil {
		return err
	}
	ws := branch.StagedBy(cm)
	if len(ws) == 0 {
		return nil
	}
	parts, runs := make([]string, 0, len(ws)), make([]string, 0, len(ws))
	for _, w := range ws {
		parts, runs = append(parts, w.Lease+":"+w.Run), append(runs, w.Run)
	}
	h.auth.FlushReads(ctx, runs...)
	if e.Details == nil {
		e.Details = map[string]string{}
	}
	e.Details[record.DetailStagedBy] = strings.Join(parts, " ")
	return nil
}

// errPageFull ends a streamed page.
var errPageFull = errors.New("page full")

// page collects changes until limit, returning the cursor to continue.
func page(limit int, run func(fn func(branch.Change) error) error) (*apiv1.ChangesResponse, error) {
	out := &apiv1.ChangesResponse{Changes: []apiv1.Change{}}
	err := run(func(c branch.Change) error {
		if len(out.Changes) == limit {
			out.NextCursor = out.Changes[len(out.Changes)-1].Key
			return errPageFull
		}
		out.Changes = append(out.Changes, changeOut(c))
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	return out, err
}

func (h *Handler) diffList(ctx context.Context, c *call, a *apiv1.DiffListRequest) (*apiv1.ChangesResponse, error) {
	if err := required("repo", a.Repo, "from", a.From, "to", a.To); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	for _, ref := range []string{a.From, a.To} {
		if err := h.leaseRef(ctx, c, a.Repo, ref); err != nil {
			return nil, err
		}
	}
	return page(limit, func(fn func(branch.Change) error) error {
		return h.b.Diff(ctx, a.Repo, a.From, a.To, a.Cursor, h.auth.ListFilter(ctx, c.p, a.Repo, lease.List), fn)
	})
}

func (h *Handler) changesList(ctx context.Context, c *call, a *apiv1.ChangesListRequest) (*apiv1.ChangesResponse, error) {
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.List, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	return page(limit, func(fn func(branch.Change) error) error {
		return h.b.Changes(ctx, a.Repo, a.Branch, a.Cursor, h.visibleOnly(ctx, c, a.Repo, fn))
	})
}

// visibleCommit is a commit as the caller may see it: a lease sees the
// message and provenance of its own run's commits only; of every other
// commit in its branch's history (the fork point, other runs' merged
// work, the owner's) it sees the ID, parents, tree and time.
func visibleCommit(c *call, j apiv1.Commit) apiv1.Commit {
	if l := c.p.Lease; l != nil && j.Run != l.Run {
		j.Message, j.Principal, j.OnBehalfOf, j.Run, j.Lease = "", "", "", "", ""
	}
	return j
}

// leaseRef checks that the caller may name ref in repo: for a lease, its
// own branch or a commit its branch has seen; anything else does not exist
// for it (answered alike whether it exists or not).
func (h *Handler) leaseRef(ctx context.Context, c *call, repo, ref string) error {
	t := auth.Target{Repo: repo, Branch: ref}
	if l := c.p.Lease; l != nil && ref != l.Branch {
		t = auth.Target{Repo: repo, Commit: ref}
	}
	return h.auth.Authorize(ctx, c.p, lease.List, t)
}

// visibleOnly drops changes to keys the caller may not list, or whose
// old or new version is above its sensitivity ceiling.
func (h *Handler) visibleOnly(ctx context.Context, c *call, repo string, fn func(branch.Change) error) func(branch.Change) error {
	if c.p.IsOwner() {
		return fn
	}
	admits := func(key string, e *manifest.Entry) bool { return e == nil || h.auth.Admits(ctx, c.p, repo, key, e) }
	return func(ch branch.Change) error {
		if !c.p.Visible(ch.Key, lease.List) || !admits(ch.Key, ch.Old) || !admits(ch.Key, ch.New) {
			return nil
		}
		return fn(ch)
	}
}
