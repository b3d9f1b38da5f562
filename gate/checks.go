package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Pre-merge checks: a proposal into a branch that requires checks, or
// one that asks for some, starts them when its gate opens; they run in
// the background (package check). An approval, and the owner's direct
// merge of the same diff, wait until every check the target requires
// passed on the proposal's digest: a result for another digest does not
// count. A proposal with checks is never merged by a policy rule at
// once: it waits at its gate, where the card shows the results, and
// one the rule would have merged merges when all its checks passed
// (ChecksDone).

// Errors of the checks.
var (
	// ErrChecksPending is a merge whose target requires checks that have
	// not passed yet on its digest (or never ran on it).
	ErrChecksPending = errors.New("gate: required checks are pending")
	// ErrChecksFailed is a merge whose target requires a check that
	// failed (or ended in error) on its digest.
	ErrChecksFailed = errors.New("gate: required checks failed")
)

// Checker is the checks as the gate uses them (check.Service).
type Checker interface {
	Plan(ctx context.Context, repo, into string, asked []string) ([]check.Planned, error)
	Start(ctx context.Context, p check.Payload, plan []check.Planned) error
	Results(ctx context.Context, proposal string) ([]check.Result, error)
}

var _ Checker = (*check.Service)(nil)

// SetChecks enables pre-merge checks with c.
func (s *Service) SetChecks(c Checker) { s.checks = c }

// plan returns the checks r's proposal runs.
func (s *Service) plan(ctx context.Context, r ProposeRequest) ([]check.Planned, error) {
	if s.checks == nil {
		if len(r.Checks) > 0 {
			return nil, fmt.Errorf("checks are not enabled on this gateway: %w", check.ErrInvalid)
		}
		return nil, nil
	}
	return s.checks.Plan(ctx, r.Repo, r.Into, r.Checks)
}

// holdForChecks keeps a proposal with checks from merging by a rule: it
// waits at a gate for them and for a person.
func holdForChecks(p *Proposal, plan []check.Planned) {
	for _, pl := range plan {
		p.Checks = append(p.Checks, pl.Name)
	}
	if len(plan) > 0 && p.Action == Merge {
		p.Action, p.AutoMerge = Hold, true
		p.Rule += " (held: pre-merge checks " + strings.Join(p.Checks, ",") + " run first; it merges when they all pass)"
	}
}

// startChecks starts p's checks once its gate is open, and indexes p by
// its heads for a direct merge of the same diff.
func (s *Service) startChecks(ctx context.Context, p *Proposal, plan []check.Planned) error {
	if len(plan) == 0 || p.GateID == "" {
		return nil
	}
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		return txn.Set(headsKey(p.Repo, p.Into, p.SourceHead, p.TargetHead), []byte(p.ID))
	})
	if err != nil {
		return err
	}
	return s.checks.Start(ctx, payload(p), plan)
}

func headsKey(repo, into, source, target string) []byte {
	return []byte(keyspace.ProposalHeads + repo + "/" + into + "/" + source + "/" + target)
}

// payload is what p's checks are sent.
func payload(p *Proposal) check.Payload {
	out := check.Payload{ProposalID: p.ID, GateID: p.GateID, Repo: p.Repo, Branch: p.From, Into: p.Into, Base: p.Base,
		SourceHead: p.SourceHead, TargetHead: p.TargetHead, DiffSHA256: p.Digest, Intent: p.Intent, Run: p.Run, Lease: p.Lease,
		Counts: p.Counts, Changes: make([]check.Change, 0, min(len(p.Changes), check.MaxChanges))}
	for _, c := range p.Changes[:min(len(p.Changes), check.MaxChanges)] {
		out.Changes = append(out.Changes, check.Change(c))
	}
	out.Truncated = len(p.Changes) > check.MaxChanges
	return out
}

// CardChecks returns p's results as its card shows them: every check it
// ran, and every check its target requires now (pending when it never
// ran on p), each marked required by the target's current rule.
func (s *Service) CardChecks(ctx context.Context, p *Proposal) ([]check.Result, error) {
	if s.checks == nil {
		return nil, nil
	}
	req, err := s.checks.Plan(ctx, p.Repo, p.Into, nil)
	if err != nil {
		return nil, err
	}
	res, err := s.checks.Results(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	for i := range res {
		res[i].Required = slices.ContainsFunc(req, func(pl check.Planned) bool { return pl.Name == res[i].Name })
		res[i].Claim, res[i].Try = time.Time{}, "" // the runner's own
	}
	for _, pl := range req {
		if !slices.ContainsFunc(res, func(r check.Result) bool { return r.Name == pl.Name }) {
			res = append(res, check.Result{Name: pl.Name, State: check.StatePending, Required: true,
				Message: "not run on this proposal (nas check rerun " + p.ID + " " + pl.Name + ")"})
		}
	}
	return res, nil
}

// checksPass refuses a merge of p while a check its target requires
// (all: any check of p) has not passed on p's digest.
func (s *Service) checksPass(ctx context.Context, p *Proposal, all bool) error {
	res, err := s.CardChecks(ctx, p)
	if err != nil {
		return err
	}
	var failed, pending []string
	for _, r := range res {
		switch {
		case !r.Required && !all:
		case r.Digest != p.Digest:
			pending = append(pending, r.Name+" (no result for this digest)")
		case r.State == check.StateFail, r.State == check.StateError:
			failed = append(failed, r.Name+" ("+r.State+")")
		case r.State != check.StatePass:
			pending = append(pending, r.Name)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%w: %s, on digest %.12s: fix the branch and propose again, or nas check rerun %s", ErrChecksFailed, strings.Join(failed, ", "), p.Digest, p.ID)
	case len(pending) > 0:
		return fmt.Errorf("%w: %s, on digest %.12s", ErrChecksPending, strings.Join(pending, ", "), p.Digest)
	}
	return nil
}

// MergeChecks is the checks' word on the owner's direct merge of from
// into into: when into requires checks, the merge must be of a diff a
// proposal's checks passed on, and its heads are returned for the merge
// to be bound to (ok); otherwise ok is false and the merge is free.
func (s *Service) MergeChecks(ctx context.Context, repo, from, into string, o branch.MergeOptions) (src, dst manifest.CommitID, ok bool, err error) {
	if s.checks == nil {
		return src, dst, false, nil
	}
	req, err := s.checks.Plan(ctx, repo, into, nil)
	if err != nil || len(req) == 0 {
		return src, dst, false, err
	}
	o.DryRun, o.AllowProtected = true, true
	res, err := s.b.Merge(ctx, repo, from, into, o)
	if err != nil || res.UpToDate {
		return src, dst, false, err
	}
	var id []byte
	err = s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(headsKey(repo, into, res.Theirs.String(), res.Ours.String()))
		id = v
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return src, dst, false, fmt.Errorf("%w: %s requires checks and none ran on this diff (propose it, then merge once they pass)", ErrChecksPending, into)
	}
	if err != nil {
		return src, dst, false, err
	}
	p, err := s.GetProposal(ctx, string(id))
	if err != nil {
		return src, dst, false, err
	}
	if err := s.checksPass(ctx, p, false); err != nil {
		return src, dst, false, err
	}
	return res.Theirs, res.Ours, true, nil
}

// RerunChecks runs the named checks of pending proposal p again (none:
// every check it ran and every check its target requires now), on p's
// digest; an attempt under way is dropped.
func (s *Service) RerunChecks(ctx context.Context, p *Proposal, names []string) ([]check.Result, error) {
	if s.checks == nil {
		return nil, fmt.Errorf("checks are not enabled on this gateway: %w", check.ErrInvalid)
	}
	if err := s.stillValid(ctx, p); err != nil {
		return nil, fmt.Errorf("%w: %v: propose again, which runs the checks on the new diff", ErrVoid, err)
	}
	asked := names
	if len(names) == 0 {
		asked = p.Checks
	}
	plan, err := s.checks.Plan(ctx, p.Repo, p.Into, asked)
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		plan = slices.DeleteFunc(plan, func(pl check.Planned) bool { return !slices.Contains(names, pl.Name) })
	}
	if err := s.startChecks(ctx, p, plan); err != nil {
		return nil, err
	}
	return s.CardChecks(ctx, p)
}

// ChecksDone is told that a check of proposal id came to its final
// result: a proposal the policy would have merged (AutoMerge) merges now
// when every one of its checks passed on its digest, as the policy's
// merge (not reviewed); one whose branches moved meanwhile is void. Any
// other proposal waits for a person.
func (s *Service) ChecksDone(ctx context.Context, id string) error {
	unlock, err := s.lockDecisions(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	p, err := s.GetProposal(ctx, id)
	if err != nil || !p.AutoMerge || p.GateID == "" {
		return err
	}
	g, err := s.GetGate(ctx, p.GateID)
	if err != nil || g.Status != "pending" || s.checksPass(ctx, p, true) != nil {
		return err
	}
	g.DecidedAt, g.DecidedBy = s.now().UTC(), "policy"
	g.Status, g.Reason = "approved", "the policy merges it once its checks pass: they passed"
	if err := s.stillValid(ctx, p); err != nil {
		g.Status, g.Reason = "void", err.Error()
	}
	effect := record.EffectAllow
	if g.Status == "void" {
		effect = record.EffectDeny
	}
	if err := s.event(ctx, record.KindGateDecided, p, record.Decision{Effect: effect, Rule: "policy: " + p.Rule, Reason: g.Reason},
		map[string]string{"gate": g.ID, "diff_sha256": p.Digest}); err != nil {
		return err
	}
	if g.Status == "approved" {
		if err := s.merge(ctx, p, "policy, checks passed", false, nil); err != nil {
			if !errors.Is(err, ErrVoid) {
				return err
			}
			g.Status, g.Reason = "void", err.Error()
		}
		g.Merge = p.Merge
	}
	p.Status = g.Status
	if g.Status == "approved" {
		p.Status = "merged"
	}
	if s.OnOutcome != nil {
		s.OnOutcome("decision", g.Status)
	}
	return s.save(ctx, p, g)
}
