package api

import (
	"context"
	"net/http"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/gate"
)

// Pre-merge checks: registering them, the rules that require them and
// their results are the owner's alone (a lease can neither add a check
// nor post or change a result: results come only from the checks the
// gateway runs). A lease's proposal may ask for checks by name.

// SetChecks enables the check verbs with s.
func (h *Handler) SetChecks(s *check.Service) { h.checks = s }

// checkRoutes adds the check verbs (the owner's).
func (h *Handler) checkRoutes(m map[string]verb) {
	route(m, writes, h.checkAdd)
	route(m, owner, h.checkList)
	route(m, writes, h.checkRemove)
	route(m, writes, h.checkRequire)
	route(m, owner, h.checkResults)
	route(m, writes, h.checkRerun)
}

func (h *Handler) needChecks() error {
	if h.checks == nil || h.gates == nil {
		return &Error{Status: http.StatusNotImplemented, Code: apiv1.CodeNotImplemented, Message: "pre-merge checks are not enabled on this gateway"}
	}
	return nil
}

func checkOut(c *check.Check, secret bool) apiv1.Check {
	out := apiv1.Check{Repo: c.Repo, Name: c.Name, Kind: c.Kind, URL: c.URL, Command: c.Command, Args: c.Args,
		TimeoutSeconds: int64(c.Timeout / time.Second), Created: c.Created}
	if secret {
		out.Secret = c.Secret
	}
	return out
}

func checkResultsOut(rs []check.Result) []apiv1.CheckResult {
	out := make([]apiv1.CheckResult, 0, len(rs))
	for _, r := range rs {
		out = append(out, apiv1.CheckResult{Name: r.Name, State: r.State, Message: r.Message, DiffSHA256: r.Digest,
			Required: r.Required, Attempts: r.Attempts, Started: r.Started, Finished: r.Finished, NextTry: r.NextTry})
	}
	return out
}

func (h *Handler) checkAdd(ctx context.Context, c *call, a *apiv1.CheckAddRequest) (*apiv1.CheckResponse, error) {
	if err := h.needChecks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	if a.TimeoutSeconds < 0 || a.TimeoutSeconds > int64(check.MaxTimeout/time.Second) {
		return nil, invalid("timeout_seconds must be between 0 and 1800")
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	x, err := h.checks.Add(ctx, check.Check{Repo: a.Repo, Name: a.Name, URL: a.URL, Command: a.Command, Args: a.Args,
		Timeout: time.Duration(a.TimeoutSeconds) * time.Second})
	if err != nil {
		return nil, err
	}
	return &apiv1.CheckResponse{Check: checkOut(x, true)}, nil
}

func (h *Handler) checkList(ctx context.Context, c *call, a *apiv1.CheckListRequest) (*apiv1.CheckListResponse, error) {
	if err := h.needChecks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	cs, rules, err := h.checks.List(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	out := &apiv1.CheckListResponse{Checks: []apiv1.Check{}, Rules: []apiv1.CheckRule{}}
	for i := range cs {
		out.Checks = append(out.Checks, checkOut(&cs[i], false))
	}
	for _, r := range rules {
		out.Rules = append(out.Rules, apiv1.CheckRule(r))
	}
	return out, nil
}

func (h *Handler) checkRemove(ctx context.Context, c *call, a *apiv1.CheckRemoveRequest) (*apiv1.CheckResponse, error) {
	if err := h.needChecks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	if err := h.checks.Remove(ctx, a.Repo, a.Name); err != nil {
		return nil, err
	}
	return &apiv1.CheckResponse{Check: apiv1.Check{Repo: a.Repo, Name: a.Name}}, nil
}

func (h *Handler) checkRequire(ctx context.Context, c *call, a *apiv1.CheckRequireRequest) (*apiv1.CheckRequireResponse, error) {
	if err := h.needChecks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	if _, err := h.b.GetBranch(ctx, a.Repo, a.Branch); err != nil {
		return nil, err
	}
	r, err := h.checks.Require(ctx, a.Repo, a.Branch, a.Checks)
	if err != nil {
		return nil, err
	}
	out := apiv1.CheckRule(*r)
	if out.Checks == nil {
		out.Checks = []string{}
	}
	return &apiv1.CheckRequireResponse{Rule: out}, nil
}

func (h *Handler) checkResults(ctx context.Context, c *call, a *apiv1.CheckResultsRequest) (*apiv1.CheckResultsResponse, error) {
	p, err := h.checkedProposal(ctx, a.ProposalID)
	if err != nil {
		return nil, err
	}
	rs, err := h.gates.CardChecks(ctx, p)
	if err != nil {
		return nil, err
	}
	return &apiv1.CheckResultsResponse{Results: checkResultsOut(rs)}, nil
}

// checkRerun runs a proposal's checks again: only a proposal that still
// waits at its gate, for its digest.
func (h *Handler) checkRerun(ctx context.Context, c *call, a *apiv1.CheckRerunRequest) (*apiv1.CheckResultsResponse, error) {
	p, err := h.checkedProposal(ctx, a.ProposalID)
	if err != nil {
		return nil, err
	}
	if p.Status != "pending" {
		return nil, &Error{Status: http.StatusConflict, Code: apiv1.CodeAlreadyDecided,
			Message: "proposal " + p.ID + " is " + p.Status + ": only a proposal waiting at its gate runs its checks again (propose again)"}
	}
	rs, err := h.gates.RerunChecks(ctx, p, a.Checks)
	if err != nil {
		return nil, gateError(err)
	}
	return &apiv1.CheckResultsResponse{Results: checkResultsOut(rs)}, nil
}

// checkedProposal is the proposal id names, for the check operations on
// it; one that is not there is 404.
func (h *Handler) checkedProposal(ctx context.Context, id string) (*gate.Proposal, error) {
	if err := h.needChecks(); err != nil {
		return nil, err
	}
	if err := required("proposal_id", id); err != nil {
		return nil, err
	}
	p, err := h.gates.GetProposal(ctx, id)
	if err != nil {
		return nil, gateError(err)
	}
	return p, nil
}
