package gate

import (
	"context"

	"github.com/agentnas/nas/policy"
	"github.com/agentnas/nas/record"
)

// guard applies the session invariant to a lease's proposal p: one that
// completes A+B+C is held for a person or refused, with the reason as
// its rule, unless the policy already refuses it; in log-only mode the
// decision stands and what would have happened is recorded.
func (s *Service) guard(ctx context.Context, r ProposeRequest, p *Proposal, g *policy.Guard) error {
	into, err := s.b.GetBranch(ctx, r.Repo, r.Into)
	if err != nil {
		return err
	}
	done, why := g.Completes(r.Lease.SensitivityMax, r.Taint, r.Into, into.Protected)
	if !done || p.Action == policy.Refuse {
		return nil
	}
	if g.LogOnly() {
		d := record.Decision{Effect: record.EffectAllow, Rule: policy.RuleOfTwo, Reason: "log-only: would " + string(g.Action()) + ": " + why}
		return s.event(ctx, record.KindDenied, p, d, map[string]string{"mode": policy.GuardLogOnly})
	}
	p.Action, p.Rule, p.GuardReason = g.Action(), policy.RuleOfTwo, why
	return nil
}
