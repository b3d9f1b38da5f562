package auth

import (
	"context"
	"slices"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// The veil over writes. A lease never learns that an entry above its
// sensitivity ceiling exists, and a write can ask: If-None-Match: * would
// fail on it, If-Match would succeed, a delete would answer with a delete
// marker. So the branch evaluates the lease's preconditions and deletes
// as if such an entry were missing, inside the write's transaction (no
// race with a write that labels it), and the door records every entry it
// hid when the request finishes.

// Condition is cond (its preconditions) with who writes filled in and,
// for a lease, the veil: branch.Condition's Hidden hides from the write
// every entry in t.Repo above the lease's sensitivity ceiling.
func (a *Authority) Condition(ctx context.Context, p *Principal, t Target, cond branch.Condition) (branch.Condition, error) {
	cond.By = p.Writer()
	if p.Lease == nil {
		return cond, nil
	}
	if _, err := a.rulesOf(ctx, p, t.Repo); err != nil {
		return cond, err // read here, not inside the write's transaction
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	cond.Hidden = func(key string, e *manifest.Entry) bool {
		if a.Admits(ctx, p, t.Repo, key, e) {
			return false
		}
		h := Target{Repo: t.Repo, Branch: t.Branch, Key: key}
		if !slices.Contains(p.hidden, h) {
			p.hidden = append(p.hidden, h)
		}
		return true
	}
	return cond, nil
}

// recordHidden records, as refusals answered NotFound, the entries the
// veil hid from p's writes.
func (a *Authority) recordHidden(ctx context.Context, p *Principal) {
	hs := p.hidden
	p.hidden = nil
	for _, t := range hs {
		v := lease.Verdict{Decision: lease.NotFound, Rule: "the entry is above the lease's sensitivity ceiling: the write saw no entry"}
		_ = a.refuse(ctx, p, string(lease.Write), t, v, ErrNotFound)
	}
}
