package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Merging, proposals, gates, checkpoints and the trash. Only proposals are
// open to leases; deciding a gate, merging directly, and touching
// checkpoints or the trash are the owner's, on every interface.

func (h *Handler) needGates() error {
	if h.gates == nil {
		return notFound("proposals and gates are not enabled on this gateway")
	}
	return nil
}

func gateError(err error) error {
	switch {
	case errors.Is(err, gate.ErrNotFound):
		return notFound(err.Error())
	case errors.Is(err, gate.ErrDecided):
		return &Error{Status: http.StatusConflict, Code: "AlreadyDecided", Message: err.Error()}
	case errors.Is(err, gate.ErrVoid):
		return &Error{Status: http.StatusConflict, Code: "ApprovalVoid", Message: err.Error()}
	}
	return err
}

// mergeCreate is the owner's direct merge (`nas merge`).
func (h *Handler) mergeCreate(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo    string   `json:"repo"`
		From    string   `json:"from"`
		Into    string   `json:"into"`
		Message string   `json:"message"`
		Ours    []string `json:"ours"`
		Theirs  []string `json:"theirs"`
		DryRun  bool     `json:"dry_run"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "from", a.From, "into", a.Into); err != nil {
		return nil, err
	}
	o := branch.MergeOptions{Ours: a.Ours, Theirs: a.Theirs, AllowProtected: true, DryRun: a.DryRun,
		CommitOptions: branch.CommitOptions{Message: a.Message, Principal: c.p.AccessKey}}
	o.Intent = func(id manifest.CommitID) error {
		return h.record(ctx, c, record.Event{Kind: record.KindMerge, Repo: a.Repo, Branch: a.Into, Subject: record.Subject{Commit: id.String()}, Details: detail("from " + a.From)})
	}
	res, err := h.b.Merge(ctx, a.Repo, a.From, a.Into, o)
	out := map[string]any{"result": mergeJSON(res)}
	if errors.Is(err, branch.ErrMergeConflict) {
		return nil, &Error{Status: http.StatusConflict, Code: "MergeConflict", Message: err.Error(), Details: out}
	}
	if err != nil {
		return nil, err
	}
	if !res.Commit.IsZero() {
		if br, err := h.b.GetBranch(ctx, a.Repo, a.Into); err == nil && br.Protected {
			if err := h.b.Trash(ctx, a.Repo, a.Into, res.Commit, res.Deleted); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func mergeJSON(r *branch.MergeResult) map[string]any {
	if r == nil {
		return nil
	}
	m := map[string]any{"base": r.Base.String(), "ours": r.Ours.String(), "theirs": r.Theirs.String(),
		"applied": r.Applied, "up_to_date": r.UpToDate}
	if !r.Commit.IsZero() {
		m["commit"] = r.Commit.String()
	}
	var conflicts []map[string]any
	for _, c := range r.Conflicts {
		cj := map[string]any{"key": c.Key}
		for name, e := range map[string]*manifest.Entry{"base_etag": c.Base, "ours_etag": c.Ours, "theirs_etag": c.Theirs} {
			if e != nil {
				cj[name] = e.ETag
			} else {
				cj[name] = nil
			}
		}
		conflicts = append(conflicts, cj)
	}
	if conflicts != nil {
		m["conflicts"] = conflicts
	}
	if r.Changes != nil {
		var ch []ChangeJSON
		for _, c := range r.Changes {
			ch = append(ch, changeJSON(c))
		}
		m["changes"] = ch
	}
	return m
}

// proposeCreate is `nas propose`: open to a lease for its own branch.
func (h *Handler) proposeCreate(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	var a struct {
		Repo   string `json:"repo"`
		Branch string `json:"branch"`
		Into   string `json:"into"`
		Intent string `json:"intent"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if l := c.p.Lease; a.Into == "" && l != nil && l.ForkedFrom != "" {
		a.Into = l.ForkedFrom
	}
	if a.Into == "" {
		a.Into = branch.DefaultBranch
	}
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	// A run proposes with propose, or with write (a run that may change
	// its branch may offer the change).
	act := lease.Propose
	if !c.p.Grants(lease.Propose) {
		act = lease.Write
	}
	if err := h.auth.Authorize(ctx, c.p, act, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	// A target the lease may not name and one that does not exist answer
	// alike.
	missing := notFound("no branch " + a.Into + " in " + a.Repo + " to propose into")
	if err := h.auth.ProposeInto(ctx, c.p, a.Repo, a.Into); err != nil {
		if errors.Is(err, auth.ErrNotFound) {
			return nil, missing
		}
		return nil, err
	}
	p, err := h.gates.Propose(ctx, gate.ProposeRequest{Repo: a.Repo, From: a.Branch, Into: a.Into, Intent: a.Intent, Lease: c.p.Lease, Actor: c.p.AccessKey})
	if errors.Is(err, branch.ErrNoSuchBranch) && !c.p.IsOwner() {
		return nil, missing
	}
	if err != nil {
		return nil, gateError(err)
	}
	return map[string]any{"proposal": visibleProposal(c, p)}, nil
}

// visibleProposal is p as the caller may see it: for a lease, the
// changes, conflicts and counts of keys inside its view only (the diff of
// a run's branch can hold what the owner wrote there).
func visibleProposal(c *call, p *gate.Proposal) *gate.Proposal {
	if c.p.IsOwner() {
		return p
	}
	out := *p
	out.Changes, out.Counts = visibleLines(c, p.Changes)
	out.Conflicts = nil
	for _, k := range p.Conflicts {
		if c.p.Visible(k, lease.List, lease.Read) {
			out.Conflicts = append(out.Conflicts, k)
		}
	}
	return &out
}

// visibleLines keeps the change lines of keys the caller may see, with
// their counts.
func visibleLines(c *call, lines []gate.ChangeLine) ([]gate.ChangeLine, map[string]int) {
	out := []gate.ChangeLine{}
	counts := map[string]int{"added": 0, "modified": 0, "deleted": 0}
	for _, l := range lines {
		if !c.p.Visible(l.Key, lease.List, lease.Read) {
			continue
		}
		out = append(out, l)
		counts[map[string]string{"A": "added", "M": "modified", "D": "deleted"}[l.Kind]]++
	}
	return out, counts
}

// gateList lists gates; a lease sees only the gates of its own branch's
// proposals (so a run learns that it waits for a person), never decides.
func (h *Handler) gateList(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	var a struct {
		Status string `json:"status"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	gs, err := h.gates.ListGates(ctx, a.Status)
	if err != nil {
		return nil, err
	}
	if l := c.p.Lease; l != nil {
		mine := gs[:0]
		for _, g := range gs {
			if g.Repo == l.Repo && g.Card.Action.From == l.Branch {
				g.Card.Action.Changes, _ = visibleLines(c, g.Card.Action.Changes)
				g.Card.Action.FilesChanged = len(g.Card.Action.Changes)
				mine = append(mine, g)
			}
		}
		gs = mine
	}
	if gs == nil {
		gs = []gate.Gate{}
	}
	return map[string]any{"gates": gs}, nil
}

func (h *Handler) gateGet(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	var a struct {
		GateID string `json:"gate_id"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	g, err := h.gates.GetGate(ctx, a.GateID)
	if err != nil {
		return nil, gateError(err)
	}
	return map[string]any{"gate": g}, nil
}

// gateDecide approves or denies: the owner's alone, never a lease's.
func (h *Handler) gateDecide(approve bool) func(context.Context, *call) (any, error) {
	return func(ctx context.Context, c *call) (any, error) {
		if err := h.needGates(); err != nil {
			return nil, err
		}
		var a struct {
			GateID string `json:"gate_id"`
			Reason string `json:"reason"`
		}
		if err := c.decode(&a); err != nil {
			return nil, err
		}
		g, err := h.gates.Decide(ctx, a.GateID, c.p.AccessKey, approve, a.Reason)
		if err != nil {
			if errors.Is(err, gate.ErrVoid) {
				return nil, &Error{Status: http.StatusConflict, Code: "ApprovalVoid", Message: err.Error(), Details: map[string]any{"gate": g}}
			}
			return nil, gateError(err)
		}
		return map[string]any{"gate": g}, nil
	}
}

func (h *Handler) gateStats(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	if err := c.decode(&struct{}{}); err != nil {
		return nil, err
	}
	st, err := h.gates.GateStats(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"stats": st}, nil
}

func (h *Handler) policyGet(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	var a repoArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	p, err := h.gates.Policy(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return map[string]any{"policy": p}, nil
}

func (h *Handler) policySet(ctx context.Context, c *call) (any, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	var a struct {
		Repo   string      `json:"repo"`
		Policy gate.Policy `json:"policy"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	if err := h.gates.SetPolicy(ctx, a.Repo, &a.Policy); err != nil {
		return nil, err
	}
	return map[string]any{"policy": a.Policy}, nil
}

type checkpointArgs struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Name   string `json:"name"`
}

func (h *Handler) checkpointCreate(ctx context.Context, c *call) (any, error) {
	var a checkpointArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	cp, err := h.b.CreateCheckpoint(ctx, a.Repo, a.Branch, a.Name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"checkpoint": cp}, nil
}

func (h *Handler) checkpointList(ctx context.Context, c *call) (any, error) {
	var a checkpointArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	cps, err := h.b.ListCheckpoints(ctx, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if cps == nil {
		cps = []branch.Checkpoint{}
	}
	return map[string]any{"checkpoints": cps}, nil
}

func (h *Handler) checkpointRestore(ctx context.Context, c *call) (any, error) {
	var a checkpointArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	o := branch.CommitOptions{Principal: c.p.AccessKey}
	o.Intent = func(id manifest.CommitID) error {
		return h.record(ctx, c, record.Event{Kind: record.KindCommit, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: id.String()}, Details: detail("restore checkpoint " + a.Name)})
	}
	id, err := h.b.RestoreCheckpoint(ctx, a.Repo, a.Branch, a.Name, o)
	if err != nil {
		return nil, err
	}
	return map[string]any{"commit": id.String()}, nil
}

func (h *Handler) trashList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Prefix string `json:"prefix"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	items, err := h.b.ListTrash(ctx, a.Repo, a.Prefix)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []branch.TrashEntry{}
	}
	return map[string]any{"trash": items}, nil
}

func (h *Handler) trashRestore(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo string `json:"repo"`
		Path string `json:"path"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	o := branch.CommitOptions{Principal: c.p.AccessKey}
	o.Intent = func(id manifest.CommitID) error {
		return h.record(ctx, c, record.Event{Kind: record.KindCommit, Repo: a.Repo, Subject: record.Subject{Path: a.Path, Commit: id.String()}, Details: detail("restore from the trash")})
	}
	id, err := h.b.RestoreTrash(ctx, a.Repo, a.Path, o)
	if err != nil {
		return nil, err
	}
	return map[string]any{"commit": id.String()}, nil
}
