package policy

import (
	"fmt"

	"github.com/agentnas/nas/label"
)

// Guard is a policy's session invariant, the Rule of Two: a session may
// not hold all three of A (it has read unreviewed external content), B
// (its lease may read data at or above SensitiveAt) and C (it changes
// protected state: a proposal that would merge into a protected branch;
// or its lease may communicate outward, egress). The proposal that would
// complete A+B+C goes to a person (gate) or is refused, never merged by
// policy; the read that would complete it for a lease with egress is
// refused (a read cannot wait for a person); in log-only mode either is
// only recorded.
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

// Action is what the guard does with a proposal that completes A+B+C.
func (g *Guard) Action() Action {
	if g == nil || g.OnWouldCompleteABC == "" {
		return Hold
	}
	return g.OnWouldCompleteABC
}

// LogOnly reports whether the guard only records.
func (g *Guard) LogOnly() bool { return g != nil && g.Mode == GuardLogOnly }

// Completes reports whether a proposal by a lease whose sensitivity
// ceiling is ceiling ("" is the default, private) and whose session is
// tainted t, into branch into (protected says whether it is), completes
// A+B+C, and why, in words a reviewer reads on the card.
func (g *Guard) Completes(ceiling string, t label.Taint, into string, protected bool) (bool, string) {
	at := label.Private
	if g != nil && g.SensitiveAt != "" {
		at = g.SensitiveAt
	}
	ceiling = label.Label{Sensitivity: ceiling}.Norm().Sensitivity
	if !t.External() || !label.AtLeast(ceiling, at) || !protected {
		return false, ""
	}
	return true, fmt.Sprintf("%s: the session read unreviewed external content (A), its lease may read %s data (B), and this would merge into protected %s (C)",
		RuleOfTwo, ceiling, into)
}

// CompletesByRead reports whether reading content labelled l completes
// A+B+C for a lease whose ceiling is ceiling and that may communicate
// outward (egress): C is the egress, B the ceiling, and the read brings
// A. Why is in a reviewer's words.
func (g *Guard) CompletesByRead(ceiling string, egress bool, l label.Label) (bool, string) {
	at := label.Private
	if g != nil && g.SensitiveAt != "" {
		at = g.SensitiveAt
	}
	ceiling = label.Label{Sensitivity: ceiling}.Norm().Sensitivity
	l = l.Norm()
	if !egress || l.Reviewed || l.Origin != label.External || !label.AtLeast(ceiling, at) {
		return false, ""
	}
	return true, fmt.Sprintf("%s: this read would bring unreviewed external content (A) into a session whose lease may read %s data (B) and communicate outward (C, egress)",
		RuleOfTwo, ceiling)
}
