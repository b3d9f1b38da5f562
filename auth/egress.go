package auth

import (
	"context"

	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/policy"
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
