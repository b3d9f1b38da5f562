package auth

import (
	"context"

	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/policy"
	"github.com/agentnas/nas/record"
)

// GuardOf is a repository's session invariant (its policy's guard; nil
// for the defaults).
type GuardOf func(ctx context.Context, repo string) (*policy.Guard, error)

// SetGuard tells the door where repositories' guards are (the gate's
// policies). Without one, reads are never held to the Rule of Two (only
// proposals are, by the gate).
func (a *Authority) SetGuard(g GuardOf) { a.guardOf = g }

// egressGuard refuses (recorded, AccessDenied) the read of content
// labelled l by a lease that may communicate outward when it would
// complete A+B+C; in log-only mode it records what it would have done
// and allows it.
func (a *Authority) egressGuard(ctx context.Context, p *Principal, t Target, l label.Label) error {
	if !p.Lease.Egress || a.guardOf == nil {
		return nil
	}
	g, err := a.guardOf(ctx, t.Repo)
	if err != nil {
		return err
	}
	done, why := g.CompletesByRead(p.Lease.SensitivityMax, true, l)
	if !done {
		return nil
	}
	if g.LogOnly() {
		a.denied(ctx, p, string(lease.Read), t, lease.Verdict{Decision: lease.Denied, Rule: "log-only: would refuse: " + why})
		return nil
	}
	return a.refuse(ctx, p, string(lease.Read), t, lease.Verdict{Decision: lease.Denied, Rule: why}, ErrDenied)
}

// GuardLease refuses (recorded, AccessDenied) a lease that may
// communicate outward and read B data for a run whose session already
// read unreviewed external content: issuing it would complete A+B+C. In
// log-only mode it records what it would have done and allows it.
func (a *Authority) GuardLease(ctx context.Context, p *Principal, req lease.Request) error {
	if !req.Egress || req.Run == "" || a.guardOf == nil {
		return nil
	}
	taint, err := a.leases.RunTaint(ctx, req.Run)
	if err != nil || !taint.External() {
		return err
	}
	g, err := a.guardOf(ctx, req.Repo)
	if err != nil {
		return err
	}
	done, _ := g.CompletesByRead(req.SensitivityMax, true, label.Label{Origin: label.External})
	if !done {
		return nil
	}
	why := policy.RuleOfTwo + ": run " + req.Run + " has read unreviewed external content (A); a lease of it that may read " +
		label.Label{Sensitivity: req.SensitivityMax}.Norm().Sensitivity + " data (B) cannot also communicate outward (C, egress)"
	rule := why
	if g.LogOnly() {
		rule = "log-only: would refuse: " + why
	}
	if a.rec != nil {
		e := record.Event{Kind: record.KindDenied, Run: req.Run, Principal: p.Name(), Repo: req.Repo, Branch: req.Branch,
			Decision: record.Decision{Effect: record.Effect(lease.Denied.String()), Rule: rule}, Details: map[string]string{"action": "lease/create"}}
		if _, err := a.rec.Append(context.WithoutCancel(ctx), e); err != nil {
			return err // a refusal that cannot be recorded is not given
		}
	}
	if g.LogOnly() {
		return nil
	}
	a.obs.Refused(refusalReason(lease.Denied))
	return &Refusal{Decision: lease.Denied, Rule: why, Action: "lease/create", Target: Target{Repo: req.Repo, Branch: req.Branch}, kind: ErrDenied}
}
