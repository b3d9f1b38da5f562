package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/apiv1"
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
		return &Error{Status: http.StatusConflict, Code: apiv1.CodeAlreadyDecided, Message: err.Error()}
	case errors.Is(err, gate.ErrVoid):
		return &Error{Status: http.StatusConflict, Code: apiv1.CodeApprovalVoid, Message: err.Error()}
	case errors.Is(err, gate.ErrNarrow):
		return invalid(err.Error())
	case errors.Is(err, gate.ErrStaleCard):
		return &Error{Status: http.StatusConflict, Code: apiv1.CodeConflict, Message: err.Error()}
	}
	return err
}

// mergeCreate is the owner's direct merge (`nas merge`).
func (h *Handler) mergeCreate(ctx context.Context, c *call, a *apiv1.MergeCreateRequest) (*apiv1.MergeCreateResponse, error) {
	if err := required("repo", a.Repo, "from", a.From, "into", a.Into); err != nil {
		return nil, err
	}
	o := branch.MergeOptions{Ours: a.Ours, Theirs: a.Theirs, AllowProtected: true, DryRun: a.DryRun,
		CommitOptions: branch.CommitOptions{Message: a.Message, Principal: c.p.AccessKey}}
	o.Intent = func(id manifest.CommitID) error {
		e := record.Event{Kind: record.KindMerge, Repo: a.Repo, Branch: a.Into, Subject: record.Subject{Commit: id.String()}, Details: detail("from " + a.From)}
		return h.record(ctx, c, e)
	}
	if err := h.mergeChecks(ctx, a, &o); err != nil {
		return nil, err
	}
	res, err := h.b.Merge(ctx, a.Repo, a.From, a.Into, o)
	out := &apiv1.MergeCreateResponse{Result: mergeOut(res)}
	if errors.Is(err, branch.ErrMergeConflict) {
		return nil, &Error{Status: http.StatusConflict, Code: apiv1.CodeMergeConflict, Message: err.Error(), Details: map[string]any{"result": out.Result}}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mergeChecks binds the owner's direct merge into a branch that requires
// checks to the heads of a diff whose checks passed, or refuses it; a
// merge that would conflict is only reported (the dry run of o).
func (h *Handler) mergeChecks(ctx context.Context, a *apiv1.MergeCreateRequest, o *branch.MergeOptions) error {
	if h.gates == nil || a.DryRun {
		return nil
	}
	src, dst, ok, err := h.gates.MergeChecks(ctx, a.Repo, a.From, a.Into, *o)
	switch {
	case errors.Is(err, branch.ErrMergeConflict):
		o.DryRun = true
		return nil
	case err != nil:
		return err
	case ok:
		o.ExpectSource, o.ExpectTarget = src, dst
	}
	return nil
}

// proposeCreate is `nas propose`: open to a lease for its own branch.
func (h *Handler) proposeCreate(ctx context.Context, c *call, a *apiv1.ProposeCreateRequest) (*apiv1.ProposeCreateResponse, error) {
	if err := h.needGates(); err != nil {
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
	taint, err := h.auth.Taint(ctx, c.p)
	if err != nil {
		return nil, err
	}
	p, err := h.gates.Propose(ctx, gate.ProposeRequest{Repo: a.Repo, From: a.Branch, Into: a.Into, Intent: a.Intent, Lease: c.p.Lease,
		Actor: c.p.AccessKey, Taint: taint, Checks: a.Checks})
	if errors.Is(err, branch.ErrNoSuchBranch) && !c.p.IsOwner() {
		return nil, missing
	}
	if err != nil {
		return nil, gateError(err)
	}
	out, err := h.visibleProposal(ctx, c, proposalOut(p))
	if err != nil {
		return nil, err
	}
	return &apiv1.ProposeCreateResponse{Proposal: out}, nil
}

// visibleProposal is p as the caller may see it: for a lease, the
// changes, conflicts and counts of keys the door admits on the sides of
// the diff (the diff of a run's branch can hold what the owner wrote
// there, inside or outside the lease's view or ceiling).
func (h *Handler) visibleProposal(ctx context.Context, c *call, p apiv1.Proposal) (apiv1.Proposal, error) {
	if c.p.IsOwner() {
		return p, nil
	}
	sides, err := commits(p.SourceHead, p.TargetHead)
	if err != nil {
		return p, err
	}
	if p.Changes, p.Counts, err = h.visibleLines(ctx, c, p.Repo, sides, p.Changes); err != nil {
		return p, err
	}
	all, err := commits(p.Base, p.SourceHead, p.TargetHead)
	if err != nil {
		return p, err
	}
	var conflicts []string
	for _, k := range p.Conflicts {
		ok, err := h.auth.AdmitsAt(ctx, c.p, p.Repo, k, all...)
		if err != nil {
			return p, err
		}
		if ok {
			conflicts = append(conflicts, k)
		}
	}
	p.Conflicts = conflicts
	return p, nil
}

// visibleLines keeps the change lines the door admits as of the diff's
// sides (the new entry at the source head, the old at the target head),
// with their counts.
func (h *Handler) visibleLines(ctx context.Context, c *call, repo string, sides []manifest.CommitID, lines []apiv1.ChangeLine) ([]apiv1.ChangeLine, map[string]int, error) {
	out := []apiv1.ChangeLine{}
	counts := map[string]int{"added": 0, "modified": 0, "deleted": 0}
	for _, l := range lines {
		ok, err := h.auth.AdmitsAt(ctx, c.p, repo, l.Key, sides...)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		out = append(out, l)
		counts[map[string]string{"A": "added", "M": "modified", "D": "deleted"}[l.Kind]]++
	}
	return out, counts, nil
}

// commits parses the commit ids of a proposal ("" where it has none).
func commits(ids ...string) ([]manifest.CommitID, error) {
	var out []manifest.CommitID
	for _, s := range ids {
		if s == "" {
			continue
		}
		id, err := manifest.ParseCommitID(s)
		if err != nil {
			return nil, fmt.Errorf("proposal commit %q: %w", s, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// visibleCard keeps, for a lease, the change lines of gate g's card the
// door admits as of its proposal's heads, and what they tell: the count
// and whether the card is destructive by the lines it shows (a delete of
// a hidden key is not the lease's to learn).
func (h *Handler) visibleCard(ctx context.Context, c *call, g *apiv1.Gate) error {
	if c.p.IsOwner() || g.Proposal == "" {
		return nil
	}
	p, err := h.gates.GetProposal(ctx, g.Proposal)
	if err != nil {
		return fmt.Errorf("proposal of gate %s: %w", g.ID, err)
	}
	sides, err := commits(p.SourceHead, p.TargetHead)
	if err != nil {
		return err
	}
	a := &g.Card.Action
	if a.Changes, _, err = h.visibleLines(ctx, c, g.Repo, sides, a.Changes); err != nil {
		return err
	}
	a.FilesChanged = len(a.Changes)
	g.Card.Risk.Destructive = gate.Destructive(gateLines(a.Changes))
	for i := range g.Card.Checks {
		g.Card.Checks[i].Message = "" // a check sees the whole diff; its words may name what the lease cannot see
	}
	return nil
}

// gateList lists gates; a lease sees only the gates of its own branch's
// proposals (so a run learns that it waits for a person), never decides,
// and sees only the changes inside its view.
func (h *Handler) gateList(ctx context.Context, c *call, a *apiv1.GateListRequest) (*apiv1.GateListResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	gs, err := h.gates.ListGates(ctx, a.Status)
	if err != nil {
		return nil, err
	}
	out := &apiv1.GateListResponse{Gates: []apiv1.Gate{}}
	for i := range gs {
		g := gateOut(&gs[i])
		if l := c.p.Lease; l != nil {
			if g.Repo != l.Repo || g.Card.Action.From != l.Branch {
				continue
			}
			if err := h.visibleCard(ctx, c, &g); err != nil {
				return nil, err
			}
		}
		out.Gates = append(out.Gates, g)
	}
	return out, nil
}

func (h *Handler) gateGet(ctx context.Context, c *call, a *apiv1.GateGetRequest) (*apiv1.GateResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	g, err := h.gates.GetGate(ctx, a.GateID)
	if err != nil {
		return nil, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, nil
}

func (h *Handler) gateApprove(ctx context.Context, c *call, a *apiv1.GateApproveRequest) (*apiv1.GateResponse, error) {
	return h.decide(ctx, c, apiv1.GateDecision(*a), true)
}

func (h *Handler) gateDeny(ctx context.Context, c *call, a *apiv1.GateDenyRequest) (*apiv1.GateResponse, error) {
	return h.decide(ctx, c, apiv1.GateDecision(*a), false)
}

// decide approves or denies: the owner's alone, never a lease's.
func (h *Handler) decide(ctx context.Context, c *call, a apiv1.GateDecision, approve bool) (*apiv1.GateResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	bound := a.DiffSHA256 != ""
	switch {
	case (bound || len(a.Paths) > 0) && !approve:
		return nil, invalid("paths and diff_sha256 bind an approval; a denial takes neither")
	case len(a.Paths) > 0 && !bound:
		return nil, invalid("a narrowed approval needs the card's diff_sha256")
	}
	if approve && !bound {
		if g, ok, err := h.approveForget(ctx, c, a); ok || err != nil {
			return g, err
		}
		if g, ok, err := h.approvePush(ctx, c, a); ok || err != nil {
			return g, err
		}
	}
	var g *gate.Gate
	var err error
	if bound {
		g, err = h.gates.ApproveNarrowed(ctx, a.GateID, c.p.AccessKey, gate.Narrowed{Digest: a.DiffSHA256, Paths: a.Paths}, a.Reason)
	} else {
		g, err = h.gates.Decide(ctx, a.GateID, c.p.AccessKey, approve, a.Reason)
	}
	if err != nil {
		if errors.Is(err, gate.ErrVoid) && g != nil {
			return nil, &Error{Status: http.StatusConflict, Code: apiv1.CodeApprovalVoid, Message: err.Error(), Details: map[string]any{"gate": gateOut(g)}}
		}
		return nil, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, nil
}

func (h *Handler) gateStats(ctx context.Context, c *call, a *apiv1.GateStatsRequest) (*apiv1.GateStatsResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	st, err := h.gates.GateStats(ctx)
	if err != nil {
		return nil, err
	}
	return &apiv1.GateStatsResponse{Stats: apiv1.GateStats{Total: st.Total, Pending: st.Pending, Approved: st.Approved,
		Denied: st.Denied, Expired: st.Expired, Void: st.Void, ApprovalRate: st.ApprovalRate, MedianSecondsToDecide: st.MedianSecondsToDecide}}, nil
}

func (h *Handler) policyGet(ctx context.Context, c *call, a *apiv1.PolicyGetRequest) (*apiv1.PolicyResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	p, err := h.gates.Policy(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return &apiv1.PolicyResponse{Policy: policyOut(p)}, nil
}

func (h *Handler) policySet(ctx context.Context, c *call, a *apiv1.PolicySetRequest) (*apiv1.PolicyResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	p := policyIn(a.Policy)
	if err := h.gates.SetPolicy(ctx, a.Repo, p); err != nil {
		return nil, err
	}
	return &apiv1.PolicyResponse{Policy: policyOut(p)}, nil
}

// Checkpoints: the owner names and restores any branch's; a lease only
// its own branch's (write on it), and its restore may change only keys
// it may write or delete: one it cannot see refuses the restore without
// naming the key, as a revert does.

func (h *Handler) checkpointCreate(ctx context.Context, c *call, a *apiv1.CheckpointCreateRequest) (*apiv1.CheckpointResponse, error) {
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	if err := required("repo", a.Repo, "branch", a.Branch, "name", a.Name); err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	by := ""
	if c.p.Lease != nil {
		by = c.p.Lease.ID
	}
	cp, err := h.b.CreateCheckpoint(ctx, a.Repo, a.Branch, a.Name, by)
	if err != nil {
		return nil, err
	}
	e := record.Event{Kind: record.KindCheckpoint, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: cp.CommitH}, Details: detail("checkpoint " + a.Name)}
	if err := h.record(ctx, c, e); err != nil {
		return nil, err
	}
	return &apiv1.CheckpointResponse{Checkpoint: checkpointOut(cp)}, nil
}

func (h *Handler) checkpointList(ctx context.Context, c *call, a *apiv1.CheckpointListRequest) (*apiv1.CheckpointListResponse, error) {
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.List, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	cps, err := h.b.ListCheckpoints(ctx, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	out := &apiv1.CheckpointListResponse{Checkpoints: []apiv1.Checkpoint{}}
	for i := range cps {
		out.Checkpoints = append(out.Checkpoints, checkpointOut(&cps[i]))
	}
	return out, nil
}

func (h *Handler) checkpointRestore(ctx context.Context, c *call, a *apiv1.CheckpointRestoreRequest) (*apiv1.RestoreResponse, error) {
	a.Branch = c.p.Branch(a.Repo, a.Branch)
	if err := required("repo", a.Repo, "branch", a.Branch, "name", a.Name); err != nil {
		return nil, err
	}
	o := branch.CommitOptions{Principal: c.p.AccessKey}
	o.Intent = func(id manifest.CommitID) error {
		e := record.Event{Kind: record.KindCommit, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: id.String()}, Details: detail("restore checkpoint " + a.Name)}
		return h.record(ctx, c, e)
	}
	if !c.p.IsOwner() {
		return h.runRestore(ctx, c, a, o)
	}
	id, err := h.b.RestoreCheckpoint(ctx, a.Repo, a.Branch, a.Name, o)
	if err != nil {
		return nil, err
	}
	return &apiv1.RestoreResponse{Commit: id.String()}, nil
}

// runRestore is a lease's checkpoint/restore: a commit on its branch with
// the checkpoint's tree, every changed key allowed by the door first.
func (h *Handler) runRestore(ctx context.Context, c *call, a *apiv1.CheckpointRestoreRequest, o branch.CommitOptions) (*apiv1.RestoreResponse, error) {
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	po := branch.PickOptions{CommitOptions: commitOptions(c, "restore checkpoint "+a.Name), Allow: h.pickAllow(ctx, c, a.Repo, a.Branch)}
	po.Intent = o.Intent
	res, err := h.b.RestoreRunCheckpoint(ctx, a.Repo, a.Branch, a.Name, po)
	if err != nil {
		return nil, err
	}
	return &apiv1.RestoreResponse{Commit: res.Commit.String()}, nil
}

func (h *Handler) trashList(ctx context.Context, c *call, a *apiv1.TrashListRequest) (*apiv1.TrashListResponse, error) {
	items, err := h.b.ListTrash(ctx, a.Repo, a.Prefix)
	if err != nil {
		return nil, err
	}
	out := &apiv1.TrashListResponse{Trash: []apiv1.TrashEntry{}}
	for i := range items {
		out.Trash = append(out.Trash, trashOut(&items[i]))
	}
	return out, nil
}

func (h *Handler) trashRestore(ctx context.Context, c *call, a *apiv1.TrashRestoreRequest) (*apiv1.RestoreResponse, error) {
	o := branch.CommitOptions{Principal: c.p.AccessKey}
	o.Intent = func(id manifest.CommitID) error {
		e := record.Event{Kind: record.KindCommit, Repo: a.Repo, Subject: record.Subject{Path: a.Path, Commit: id.String()}, Details: detail("restore from the trash")}
		return h.record(ctx, c, e)
	}
	id, err := h.b.RestoreTrash(ctx, a.Repo, a.Path, o)
	if err != nil {
		return nil, err
	}
	return &apiv1.RestoreResponse{Commit: id.String()}, nil
}

// approveForget approves a pending request to forget by running the
// forget it asks for, as the approver; ok is false for any other gate. A
// forget the holds refuse leaves the request pending.
func (h *Handler) approveForget(ctx context.Context, c *call, a apiv1.GateDecision) (*apiv1.GateResponse, bool, error) {
	g, err := h.gates.GetGate(ctx, a.GateID)
	if err != nil || g.Forget == nil || g.Status != "pending" {
		return nil, false, nil // Decide answers it
	}
	rep, err := h.forgetRun(ctx, c, &apiv1.ForgetRequest{Repo: g.Repo, Paths: g.Forget.Paths, Subject: g.Forget.Subject})
	if err != nil {
		return nil, true, err
	}
	g, err = h.gates.ApproveForget(ctx, a.GateID, c.p.AccessKey, a.Reason, rep.ForgetID)
	if err != nil {
		return nil, true, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, true, nil
}

// forgetRequest answers forget/request: a lease's request to forget, at
// a gate.
func (h *Handler) forgetRequest(ctx context.Context, c *call, a *apiv1.ForgetAskRequest) (*apiv1.GateResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	l := c.p.Lease
	if l == nil {
		return nil, invalid("the owner forgets with forget/run; forget/request is a lease's request")
	}
	if err := required("reason", a.Reason); err != nil {
		return nil, err
	}
	if err := h.auth.AuthorizeForgetRequest(ctx, c.p, a.Paths); err != nil {
		return nil, err
	}
	taint, err := h.auth.Taint(ctx, c.p)
	if err != nil {
		return nil, err
	}
	g, err := h.gates.RequestForget(ctx, gate.ForgetRequest{Lease: l, Paths: a.Paths, Subject: a.Subject, Reason: a.Reason, Taint: taint})
	if err != nil {
		return nil, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, nil
}
