package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/source"
)

// pushRequest answers source/push-request: a lease's request that the
// changes of its branch be written back to a source, at a gate. The plan
// holds only keys the door lets the lease write; a change it may not
// make refuses the request without naming the key.
func (s *sourceHandler) pushRequest(ctx context.Context, c *call, a *apiv1.SourcePushAskRequest) (*apiv1.GateResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := s.h.needGates(); err != nil {
		return nil, err
	}
	l := c.p.Lease
	if l == nil {
		return nil, invalid("the owner pushes with source/push; source/push-request is a lease's request")
	}
	if err := required("reason", a.Reason); err != nil {
		return nil, err
	}
	if a.Repo != "" && a.Repo != l.Repo {
		return nil, errNoPush
	}
	id, err := s.attachmentOf(ctx, r, l.Repo, a.ID, a.Prefix)
	if err != nil {
		return nil, err
	}
	allow := s.h.pickAllow(ctx, c, l.Repo, l.Branch)
	plan, err := r.Push(ctx, id, source.PushOptions{From: l.Branch, Paths: a.Paths, DryRun: true, Own: true,
		Allow: func(key string, deleted bool) error { return allow(key, deleted, nil) }})
	if err != nil {
		return nil, sourceError(err)
	}
	var changes []gate.ChangeLine
	for _, x := range plan.Actions {
		if x.Result == "would write" {
			changes = append(changes, gate.ChangeLine{Kind: x.Kind, Key: x.Key})
		}
	}
	if len(changes) == 0 {
		return nil, errNoPush // as a source that is not there: a lease learns nothing of attachments outside its changes
	}
	taint, err := s.h.auth.Taint(ctx, c.p)
	if err != nil {
		return nil, err
	}
	g, err := s.h.gates.RequestPush(ctx, gate.PushRequest{Lease: l, Source: id, Paths: a.Paths, Digest: plan.Digest,
		Changes: changes, Reason: a.Reason, Taint: taint})
	if err != nil {
		return nil, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, nil
}

// errNoPush answers a request to push that names no source of the
// lease's repository, or one under which the lease changed nothing it may
// write back: the same answer, so the request is no oracle of attachments.
var errNoPush = &Error{Status: http.StatusNotFound, Code: apiv1.CodeNotFound,
	Message: "no source there holds changes of this lease's branch to write back"}

// attachmentOf is the attachment of repo named by id or attached at
// prefix; another repository's is not found, as a missing one.
func (s *sourceHandler) attachmentOf(ctx context.Context, r *source.Registry, repo, id, prefix string) (string, error) {
	if (id == "") == (prefix == "") {
		return "", invalid("name the source by id or by prefix (one of them)")
	}
	infos, err := r.List(ctx, repo)
	if err != nil {
		return "", sourceError(err)
	}
	for _, i := range infos {
		if i.Repo == repo && (i.ID == id || prefix != "" && (i.Prefix == prefix || i.Prefix == prefix+"/")) {
			return i.ID, nil
		}
	}
	return "", errNoPush
}

// approvePush approves a pending request to push by running the push of
// exactly the plan on its card, as the approver; ok is false for any
// other gate. A plan that changed (the branch or the attachment moved)
// voids the gate and writes nothing; a push that fails before writing
// leaves it pending.
func (h *Handler) approvePush(ctx context.Context, c *call, a apiv1.GateDecision) (*apiv1.GateResponse, bool, error) {
	g, err := h.gates.GetGate(ctx, a.GateID)
	if err != nil || g.Push == nil || g.Status != "pending" {
		return nil, false, nil // Decide answers it
	}
	if h.sources == nil {
		return nil, true, &Error{Status: http.StatusNotImplemented, Code: apiv1.CodeNotImplemented, Message: "sources are not enabled on this gateway"}
	}
	p := g.Push
	why := ""
	if l, err := h.leaseOf(ctx, p.Lease); err == nil && l.Revoked {
		why = "the requesting lease " + p.Lease + " was revoked"
	}
	var rep *source.PushReport
	if why == "" {
		s := &sourceHandler{h: h}
		rep, err = s.runPush(ctx, c, p.Source, source.PushOptions{From: p.From, Paths: p.Paths, Own: true, Expect: p.Digest, Principal: c.p.AccessKey})
		if errors.Is(err, source.ErrPlanChanged) {
			why = "the plan changed since the card was made (the branch or the source moved)"
		} else if err != nil {
			return nil, true, sourceError(err)
		}
	}
	if why != "" {
		g, err = h.gates.VoidPush(ctx, a.GateID, c.p.AccessKey, why)
		if err != nil {
			return nil, true, gateError(err)
		}
		return nil, true, &Error{Status: http.StatusConflict, Code: apiv1.CodeApprovalVoid, Message: why, Details: map[string]any{"gate": gateOut(g)}}
	}
	g, err = h.gates.ApprovePush(ctx, a.GateID, c.p.AccessKey, a.Reason, gate.PushAsk{Written: rep.Written, Conflicts: rep.Conflicts, Commit: rep.Commit})
	if err != nil {
		return nil, true, gateError(err)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, true, nil
}

// leaseOf is lease id, when leases are on.
func (h *Handler) leaseOf(ctx context.Context, id string) (*lease.Lease, error) {
	if h.leases == nil {
		return nil, errors.New("leases are off")
	}
	return h.leases.Get(ctx, id)
}
