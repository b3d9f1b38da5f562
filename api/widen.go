package api

import (
	"context"
	"unicode/utf8"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/gate"
)

// maxReasonBytes bounds the reason a request for wider authority shows a
// person.
const maxReasonBytes = 2048

// leaseWiden puts a lease's request for wider authority at a gate: it is
// asked for, never taken; the owner decides it with gate/approve or
// gate/deny like a proposal, and an approval adds grants to the lease.
func (h *Handler) leaseWiden(ctx context.Context, c *call, a *apiv1.LeaseWidenRequest) (*apiv1.GateResponse, error) {
	l := c.p.Lease
	if l == nil {
		return nil, invalid("the owner needs no wider authority; lease/widen is a lease's request")
	}
	if err := h.needGates(); err != nil {
		return nil, err
	}
	if a.Reason == "" || len(a.Reason) > maxReasonBytes || !utf8.ValidString(a.Reason) {
		return nil, invalid("reason is required: up to 2048 bytes of UTF-8 telling the person why")
	}
	req, err := leaseRequest(&apiv1.LeaseCreateRequest{Paths: a.Paths, Actions: a.Actions, View: a.View, TTL: a.TTL})
	if err != nil {
		return nil, err
	}
	taint, err := h.auth.Taint(ctx, c.p)
	if err != nil {
		return nil, err
	}
	g, err := h.gates.RequestWidening(ctx, gate.WidenRequest{Lease: l, Rules: req.View, TTL: req.TTL, Reason: a.Reason, Taint: taint})
	if err != nil {
		return nil, gateError(err)
	}
	if h.gates.OnOutcome != nil {
		h.gates.OnOutcome("widen", g.Status)
	}
	return &apiv1.GateResponse{Gate: gateOut(g)}, nil
}
