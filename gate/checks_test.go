package gate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentnas/nas/check"
)

// fakeChecks requires Required of every merge into main and answers the
// results a test sets.
type fakeChecks struct {
	mu       sync.Mutex // guards results and started
	required []string
	results  map[string][]check.Result
	started  []check.Payload
}

func (f *fakeChecks) Plan(_ context.Context, _, into string, asked []string) ([]check.Planned, error) {
	var out []check.Planned
	if into == "main" {
		for _, n := range f.required {
			out = append(out, check.Planned{Name: n, Required: true})
		}
	}
	for _, n := range asked {
		if !slices.Contains(f.required, n) {
			out = append(out, check.Planned{Name: n})
		}
	}
	return out, nil
}

func (f *fakeChecks) Start(_ context.Context, p check.Payload, plan []check.Planned) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, p)
	for _, pl := range plan {
		f.results[p.ProposalID] = append(f.results[p.ProposalID], check.Result{Name: pl.Name, State: check.StatePending, Digest: p.DiffSHA256})
	}
	return nil
}

func (f *fakeChecks) Results(_ context.Context, proposal string) ([]check.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.results[proposal]), nil
}

func (f *fakeChecks) set(proposal string, r ...check.Result) {
	f.mu.Lock()
	f.results[proposal] = r
	f.mu.Unlock()
}

// TestChecksBindToDigest: a proposal into a branch that requires checks
// is held at its gate even when a rule would merge it, its checks start
// with its digest, and the approval merges only once every required
// check passed on that digest: pending, a pass for another digest, and a
// fail all refuse it and leave the gate pending.
func TestChecksBindToDigest(t *testing.T) {
	e := newEnv(t, true)
	fc := &fakeChecks{required: []string{"ci"}, results: map[string][]check.Result{}}
	e.s.SetChecks(fc)
	if err := e.s.SetPolicy(e.ctx, repo, &Policy{Rules: []Rule{{Name: "auto", Then: Merge}}}); err != nil {
		t.Fatal(err)
	}
	e.put("work", "docs/a.md", "v2")
	p, err := e.s.Propose(e.ctx, ProposeRequest{Repo: repo, From: "work", Into: "main", Actor: "owner-key", Checks: []string{"docs"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "pending" || p.Action != Hold || !slices.Equal(p.Checks, []string{"ci", "docs"}) {
		t.Fatalf("a proposal with checks: %+v", p)
	}
	if len(fc.started) != 1 || fc.started[0].DiffSHA256 != p.Digest || fc.started[0].GateID != p.GateID || len(fc.started[0].Changes) != 1 {
		t.Fatalf("started: %+v", fc.started)
	}
	for _, tc := range []struct {
		name string
		res  []check.Result
		want error
	}{
		{"pending", nil, ErrChecksPending},
		{"a pass for another digest", []check.Result{{Name: "ci", State: check.StatePass, Digest: "0123"}}, ErrChecksPending},
		{"failed", []check.Result{{Name: "ci", State: check.StateFail, Digest: p.Digest}}, ErrChecksFailed},
		{"error", []check.Result{{Name: "ci", State: check.StateError, Digest: p.Digest}}, ErrChecksFailed},
		{"only the asked one passed", []check.Result{{Name: "docs", State: check.StatePass, Digest: p.Digest}}, ErrChecksPending},
	} {
		if tc.res != nil {
			fc.set(p.ID, tc.res...)
		}
		if _, err := e.s.Decide(e.ctx, p.GateID, "owner", true, ""); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if g, _ := e.s.GetGate(e.ctx, p.GateID); g.Status != "pending" {
			t.Fatalf("%s: the gate is %s", tc.name, g.Status)
		}
	}
	fc.set(p.ID, check.Result{Name: "ci", State: check.StatePass, Digest: p.Digest}, check.Result{Name: "docs", State: check.StateFail, Digest: p.Digest})
	g, err := e.s.GetGate(e.ctx, p.GateID)
	if err != nil || len(g.Card.Checks) != 2 || !g.Card.Checks[0].Required || g.Card.Checks[1].Required {
		t.Fatalf("card checks: %+v %v", g.Card.Checks, err)
	}
	if g, err := e.s.Decide(e.ctx, p.GateID, "owner", true, ""); err != nil || g.Status != "approved" || g.Merge == "" {
		t.Fatalf("approval after the required check passed: %+v %v", g, err)
	}
}

// TestChecksAutoMerge: a proposal a rule would merge merges once all its
// checks passed (asked ones too), as the policy's merge; one with a
// failed check waits for a person.
func TestChecksAutoMerge(t *testing.T) {
	e := newEnv(t, true)
	fc := &fakeChecks{required: []string{"ci"}, results: map[string][]check.Result{}}
	e.s.SetChecks(fc)
	if err := e.s.SetPolicy(e.ctx, repo, &Policy{Rules: []Rule{{Name: "auto", Then: Merge}}}); err != nil {
		t.Fatal(err)
	}
	e.put("work", "docs/a.md", "v2")
	p, err := e.s.Propose(e.ctx, ProposeRequest{Repo: repo, From: "work", Into: "main", Actor: "owner-key", Checks: []string{"docs"}})
	if err != nil || !p.AutoMerge {
		t.Fatalf("propose: %+v %v", p, err)
	}
	fc.set(p.ID, check.Result{Name: "ci", State: check.StatePass, Digest: p.Digest}, check.Result{Name: "docs", State: check.StateFail, Digest: p.Digest})
	if err := e.s.ChecksDone(e.ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if g, _ := e.s.GetGate(e.ctx, p.GateID); g.Status != "pending" {
		t.Fatalf("an asked check failed, yet the gate is %s", g.Status)
	}
	fc.set(p.ID, check.Result{Name: "ci", State: check.StatePass, Digest: p.Digest}, check.Result{Name: "docs", State: check.StatePass, Digest: p.Digest})
	if err := e.s.ChecksDone(e.ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	g, _ := e.s.GetGate(e.ctx, p.GateID)
	after, _ := e.s.GetProposal(e.ctx, p.ID)
	if g.Status != "approved" || g.DecidedBy != "policy" || after.Status != "merged" || e.etag("main", "docs/a.md") != "v2" {
		t.Fatalf("after the checks passed: gate %+v, proposal %s", g, after.Status)
	}
	if err := e.s.ChecksDone(e.ctx, p.ID); err != nil {
		t.Fatalf("told twice: %v", err)
	}
}
