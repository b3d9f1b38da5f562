package gate

import (
	"context"
	"fmt"

	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
)

// Guard is a policy's session invariant, the Rule of Two: a session may
// not hold all three of A (it has read unreviewed external content), B
// (its lease may read data at or above SensitiveAt) and C (it changes
// protected state: a proposal that would merge into a protected branch).
// The proposal that would complete A+B+C goes to a person (gate) or is
// refused, never merged by policy; in log-only mode it is only recorded.
// Evaluation is pure: the taint, the lease and the target decide.
type Guard struct {
	// OnWouldCompleteABC is gate (the default) or refuse; merge is refused
	// by Validate.
	OnWouldCompleteABC Action `json:"on_would_complete_ABC,omitempty"`
	// Mode is enforce (the default) or log-only.
	Mode string `json:"mode,omitempty"`
	// SensitiveAt is B's threshold: private (the default) or secret.
	SensitiveAt string `json:"sensitive_at,omitempty"`
}

// Guard modes.
const (
	GuardEnforce = "enforce"
	GuardLogOnly = "log-only"
)

// RuleOfTwo names the guard's decisions in cards and records.
const RuleOfTwo = "rule-of-two"

// validate checks the guard's fields.
func (g *Guard) validate() error {
	switch {
	case g.OnWouldCompleteABC != "" && g.OnWouldCompleteABC != Hold && g.OnWouldCompleteABC != Refuse:
		return fmt.Errorf("guard: on_would_complete_ABC must be gate or refuse (never merge), not %q", g.OnWouldCompleteABC)
	case g.Mode != "" && g.Mode != GuardEnforce && g.Mode != GuardLogOnly:
		return fmt.Errorf("guard: mode must be enforce or log-only, not %q", g.Mode)
	case g.SensitiveAt != "" && g.SensitiveAt != label.Private && g.SensitiveAt != label.Secret:
		return fmt.Errorf("guard: sensitive_at must be private or secret, not %q", g.SensitiveAt)
	}
	return nil
}

// action is what the guard does with a proposal that completes A+B+C.
func (g *Guard) action() Action {
	if g == nil || g.OnWouldCompleteABC == "" {
		return Hold
	}
	return g.OnWouldCompleteABC
}

// logOnly reports whether the guard only records.
func (g *Guard) logOnly() bool { return g != nil && g.Mode == GuardLogOnly }

// completes reports whether a proposal by l, whose session is tainted t,
// into a protected branch into (protected says whether it is) completes
// A+B+C, and why, in words a reviewer reads on the card.
func (g *Guard) completes(l *lease.Lease, t label.Taint, into string, protected bool) (bool, string) {
	at := label.Private
	if g != nil && g.SensitiveAt != "" {
		at = g.SensitiveAt
	}
	ceiling := label.Label{Sensitivity: l.SensitivityMax}.Norm().Sensitivity
	if !t.External() || !label.AtLeast(ceiling, at) || !protected {
		return false, ""
	}
	return true, fmt.Sprintf("%s: the session read unreviewed external content (A), its lease may read %s data (B), and this would merge into protected %s (C)",
		RuleOfTwo, ceiling, into)
}

// guard applies the session invariant to a lease's proposal p: one that
// completes A+B+C is held for a person or refused, with the reason as
// its rule, unless the policy already refuses it; in log-only mode the
// decision stands and what would have happened is recorded.
func (s *Service) guard(ctx context.Context, r ProposeRequest, p *Proposal, g *Guard) error {
	into, err := s.b.GetBranch(ctx, r.Repo, r.Into)
	if err != nil {
		return err
	}
	done, why := g.completes(r.Lease, r.Taint, r.Into, into.Protected)
	if !done || p.Action == Refuse {
		return nil
	}
	if g.logOnly() {
		d := record.Decision{Effect: record.EffectAllow, Rule: RuleOfTwo, Reason: "log-only: would " + string(g.action()) + ": " + why}
		return s.event(ctx, record.KindDenied, p, d, map[string]string{"mode": GuardLogOnly})
	}
	p.Action, p.Rule, p.GuardReason = g.action(), RuleOfTwo, why
	return nil
}
