package gate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// clock is a settable time source for gate timeouts and stats.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a gate service over real Badger, a real chunk directory, the
// branch service, the lease store and the flight recorder.
type env struct {
	t      *testing.T
	ctx    context.Context
	b      *branch.Service
	leases *auth.Leases
	rec    *record.Recorder
	s      *Service
	clock  *clock
}

const repo = "gates"

// newEnv returns a service with a repository whose main (protected or not)
// holds docs/a.md, docs/old.md and src/main.go, and branch work is forked
// from it.
func newEnv(t *testing.T, protected bool) *env {
	t.Helper()
	ctx := context.Background()
	chunks, db, _ := castest.Open(t)
	b := branch.New(db, chunks, nil)
	leases, err := auth.OpenLeases(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.New(db, record.Options{})
	e := &env{t: t, ctx: ctx, b: b, leases: leases, rec: rec, s: New(b, db, leases, rec),
		clock: &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}}
	e.s.now = e.clock.now
	leases.SetClock(e.clock.now)
	if _, err := b.CreateRepo(ctx, repo, branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"docs/a.md", "docs/old.md", "src/main.go"} {
		e.put("main", k, "v1")
	}
	e.commit("main")
	if protected {
		if err := b.SetProtected(ctx, repo, "main", true); err != nil {
			t.Fatal(err)
		}
	}
	e.fork("work")
	return e
}

func (e *env) put(br, key, etag string) {
	e.t.Helper()
	if _, err := e.b.Put(e.ctx, repo, br, key, &manifest.Entry{Size: int64(len(etag)), ETag: etag}, branch.Condition{}); err != nil {
		e.t.Fatalf("put %s %s: %v", br, key, err)
	}
}

func (e *env) del(br, key string) {
	e.t.Helper()
	if _, err := e.b.Delete(e.ctx, repo, br, key, branch.Condition{}); err != nil {
		e.t.Fatalf("delete %s %s: %v", br, key, err)
	}
}

func (e *env) commit(br string) manifest.CommitID {
	e.t.Helper()
	id, err := e.b.Commit(e.ctx, repo, br, branch.CommitOptions{Message: "test"})
	if err != nil {
		e.t.Fatalf("commit %s: %v", br, err)
	}
	return id
}

func (e *env) fork(br string) {
	e.t.Helper()
	if _, err := e.b.CreateBranch(e.ctx, repo, br, "main"); err != nil {
		e.t.Fatal(err)
	}
}

// etag returns key's etag on br, "-" when absent.
func (e *env) etag(br, key string) string {
	e.t.Helper()
	got, err := e.b.Get(e.ctx, repo, br, key)
	if errors.Is(err, branch.ErrNoSuchKey) {
		return "-"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return got.ETag
}

func (e *env) head(br string) manifest.CommitID {
	e.t.Helper()
	b, err := e.b.GetBranch(e.ctx, repo, br)
	if err != nil {
		e.t.Fatal(err)
	}
	return b.Head
}

func (e *env) propose(from string, l *lease.Lease) *Proposal {
	e.t.Helper()
	p, err := e.s.Propose(e.ctx, ProposeRequest{Repo: repo, From: from, Into: "main", Intent: "test " + from, Lease: l, Actor: "owner-key"})
	if err != nil {
		e.t.Fatalf("propose %s: %v", from, err)
	}
	return p
}

// issue returns a lease for role on branch work with these actions on **.
func (e *env) issue(role string, actions ...lease.Action) *lease.Lease {
	e.t.Helper()
	l, _, err := e.leases.Issue(e.ctx, lease.Request{Repo: repo, Branch: "work", Role: role, Principal: "agent",
		View: []lease.Rule{{Path: "**", Actions: actions}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// events returns the kinds of the recorder's events about the test repository.
func (e *env) events() []record.Kind {
	e.t.Helper()
	var out []record.Kind
	if err := e.rec.List(e.ctx, record.Filter{Repo: repo}, func(ev record.Event) error {
		out = append(out, ev.Kind)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func count(kinds []record.Kind, k record.Kind) int {
	n := 0
	for _, x := range kinds {
		if x == k {
			n++
		}
	}
	return n
}

func TestProposeGateApprove(t *testing.T) {
	e := newEnv(t, true)
	e.put("work", "docs/a.md", "v2")
	e.put("work", "docs/new.md", "n1")
	e.del("work", "docs/old.md")
	mainBefore := e.head("main")

	p := e.propose("work", nil)
	if p.Status != "pending" || p.Action != Hold || p.Rule != "default: a person decides" || p.GateID == "" {
		t.Fatalf("proposal: %+v", p)
	}
	// Propose committed the staged changes of work: the heads are real.
	if p.SourceHead != e.head("work").String() || p.TargetHead != mainBefore.String() || p.Base != mainBefore.String() {
		t.Fatalf("heads: source %s target %s base %s; work %s main %s", p.SourceHead, p.TargetHead, p.Base, e.head("work"), mainBefore)
	}
	if p.Counts["added"] != 1 || p.Counts["modified"] != 1 || p.Counts["deleted"] != 1 || len(p.Changes) != 3 {
		t.Fatalf("counts %v changes %+v", p.Counts, p.Changes)
	}
	if want := digest(repo, p.SourceHead, p.TargetHead, "", p.Changes); p.Digest != want {
		t.Fatalf("digest %s, want %s", p.Digest, want)
	}
	if e.head("main") != mainBefore || e.etag("main", "docs/a.md") != "v1" {
		t.Fatal("main moved before a person decided")
	}

	g, err := e.s.GetGate(e.ctx, p.GateID)
	if err != nil {
		t.Fatal(err)
	}
	c := g.Card
	if g.Status != "pending" || g.Proposal != p.ID || c.Action.DiffSHA256 != p.Digest || c.Action.FilesChanged != 3 ||
		c.Action.From != "work" || c.Action.Into != "main" || !c.Risk.Destructive || c.Default != "deny" ||
		!c.ExpiresAt.Equal(e.clock.now().Add(e.s.Timeout)) || c.Why != "test work" {
		t.Fatalf("gate: %+v", g)
	}

	e.clock.advance(90 * time.Second)
	g, err = e.s.Decide(e.ctx, p.GateID, "owner-key", true, "looks right")
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if g.Status != "approved" || g.Merge == "" || g.DecidedBy != "owner-key" || g.Reason != "looks right" ||
		!g.DecidedAt.Equal(e.clock.now()) {
		t.Fatalf("approved gate: %+v", g)
	}
	if got := [3]string{e.etag("main", "docs/a.md"), e.etag("main", "docs/new.md"), e.etag("main", "docs/old.md")}; got != [3]string{"v2", "n1", "-"} {
		t.Fatalf("main after the merge: %v", got)
	}
	if e.head("main").String() != g.Merge {
		t.Fatalf("main is at %s, the gate says it merged %s", e.head("main"), g.Merge)
	}
	stored, err := e.s.GetProposal(e.ctx, p.ID)
	if err != nil || stored.Status != "merged" || stored.Merge != g.Merge {
		t.Fatalf("stored proposal: %+v %v", stored, err)
	}
	// The merge deleted from protected main: the old version is in the trash.
	trash, err := e.b.ListTrash(e.ctx, repo, "")
	if err != nil || len(trash) != 1 || trash[0].Key != "docs/old.md" {
		t.Fatalf("trash: %+v %v", trash, err)
	}

	// Deciding again changes nothing.
	for _, approve := range []bool{true, false} {
		again, err := e.s.Decide(e.ctx, p.GateID, "owner-key", approve, "")
		if !errors.Is(err, ErrDecided) || again == nil || again.Status != "approved" {
			t.Fatalf("deciding again (approve %v): %+v %v", approve, again, err)
		}
	}
	if e.head("main").String() != g.Merge {
		t.Fatal("deciding again moved main")
	}
	ev := e.events()
	if count(ev, record.KindGateRequested) != 1 || count(ev, record.KindGateDecided) != 1 || count(ev, record.KindMerge) != 1 {
		t.Fatalf("recorded events: %v", ev)
	}
}

// TestApprovalVoid: an approval is bound to the digest. When the source or
// the target moved after the card was made, or the proposing lease was
// revoked, the approval is void and nothing merges.
func TestApprovalVoid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(e *env, l *lease.Lease)
	}{
		{"source moved", func(e *env, _ *lease.Lease) {
			e.put("work", "docs/sneaky.md", "s1")
			e.commit("work")
		}},
		{"source rewrote a carded key", func(e *env, _ *lease.Lease) {
			e.put("work", "docs/a.md", "v3")
			e.commit("work")
		}},
		{"target moved", func(e *env, _ *lease.Lease) {
			e.put("main", "src/main.go", "v2")
			e.commit("main")
		}},
		{"lease revoked", func(e *env, l *lease.Lease) {
			if _, err := e.leases.Revoke(e.ctx, l.ID); err != nil {
				e.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			l := e.issue("cleo", lease.List, lease.Read, lease.Write, lease.Propose)
			e.put("work", "docs/a.md", "v2")
			p := e.propose("work", l)
			if p.Status != "pending" || p.Lease != l.ID || p.Run != l.Run {
				t.Fatalf("proposal: %+v", p)
			}
			tc.change(e, l)
			mainBefore := e.head("main")

			g, err := e.s.Decide(e.ctx, p.GateID, "owner-key", true, "")
			if !errors.Is(err, ErrVoid) {
				t.Fatalf("approve after %s: %+v %v", tc.name, g, err)
			}
			if g == nil || g.Status != "void" || g.Merge != "" {
				t.Fatalf("void gate: %+v", g)
			}
			if e.head("main") != mainBefore || e.etag("main", "docs/a.md") != "v1" {
				t.Fatal("a void approval merged")
			}
			if stored, _ := e.s.GetGate(e.ctx, p.GateID); stored.Status != "void" {
				t.Fatalf("stored gate: %+v", stored)
			}
			if stored, _ := e.s.GetProposal(e.ctx, p.ID); stored.Status != "void" {
				t.Fatalf("stored proposal: %+v", stored)
			}
			if _, err := e.s.Decide(e.ctx, p.GateID, "owner-key", true, ""); !errors.Is(err, ErrDecided) {
				t.Fatalf("approving a void gate again: %v", err)
			}
		})
	}
}

func TestDeny(t *testing.T) {
	e := newEnv(t, true)
	e.put("work", "docs/a.md", "v2")
	p := e.propose("work", nil)
	mainBefore := e.head("main")
	g, err := e.s.Decide(e.ctx, p.GateID, "owner-key", false, "not now")
	if err != nil || g.Status != "denied" || g.Merge != "" || g.Reason != "not now" {
		t.Fatalf("deny: %+v %v", g, err)
	}
	if e.head("main") != mainBefore {
		t.Fatal("a denied proposal merged")
	}
	if stored, _ := e.s.GetProposal(e.ctx, p.ID); stored.Status != "denied" {
		t.Fatalf("stored proposal: %+v", stored)
	}
	if g, err := e.s.Decide(e.ctx, p.GateID, "owner-key", true, ""); !errors.Is(err, ErrDecided) || g.Status != "denied" {
		t.Fatalf("approving a denied gate: %+v %v", g, err)
	}
	if e.head("main") != mainBefore {
		t.Fatal("approving a denied gate merged")
	}
	if _, err := e.s.Decide(e.ctx, "gt_nosuch", "owner-key", true, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deciding an unknown gate: %v", err)
	}
	if _, err := e.s.GetProposal(e.ctx, "pr_nosuch"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown proposal: %v", err)
	}
}

// TestDecideConcurrently: of several people deciding one gate at once,
// one decides it and the others learn it was decided; what is stored
// agrees with what happened to main, also when a proposal of a changed
// diff supersedes the gate at the same moment.
func TestDecideConcurrently(t *testing.T) {
	for _, supersede := range []bool{false, true} {
		for round := range 3 {
			e := newEnv(t, false)
			e.put("work", "docs/a.md", "v2")
			p := e.propose("work", nil)
			if supersede {
				e.put("work", "docs/b.md", "b1")
			}
			const n = 4
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, errs[i] = e.s.Decide(e.ctx, p.GateID, "owner-key", i%2 == 0, "")
				})
			}
			if supersede {
				wg.Go(func() { e.propose("work", nil) })
			}
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, ErrDecided) && !(supersede && errors.Is(err, ErrVoid)):
					t.Errorf("supersede %v, round %d, decider %d: %v", supersede, round, i, err)
				}
			}
			if won > 1 || (!supersede && won != 1) {
				t.Fatalf("supersede %v, round %d: %d deciders won: %v", supersede, round, won, errs)
			}
			g, err := e.s.GetGate(e.ctx, p.GateID)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := e.s.GetProposal(e.ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			merged := e.etag("main", "docs/a.md") == "v2"
			if merged != (g.Status == "approved") || merged != (stored.Status == "merged") {
				t.Fatalf("supersede %v, round %d: the gate is %s, the proposal %s, and main merged: %v",
					supersede, round, g.Status, stored.Status, merged)
			}
		}
	}
}

// TestProposeConcurrently: an agent retrying a proposal at once queues one
// gate, not one per retry.
func TestProposeConcurrently(t *testing.T) {
	e := newEnv(t, false)
	e.put("work", "docs/a.md", "v2")
	e.commit("work")
	ids := make([]string, 4)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			p, err := e.s.Propose(e.ctx, ProposeRequest{Repo: repo, From: "work", Into: "main", Actor: "owner-key"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = p.GateID
		})
	}
	wg.Wait()
	gs, err := e.s.ListGates(e.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, g := range gs {
		open = append(open, g.ID)
	}
	if len(open) != 1 || slices.ContainsFunc(ids, func(id string) bool { return id != open[0] }) {
		t.Fatalf("gates %v for proposals answered with %v", open, ids)
	}
}

func TestGateTimeout(t *testing.T) {
	e := newEnv(t, true)
	e.s.Timeout = time.Hour
	e.put("work", "docs/a.md", "v2")
	p := e.propose("work", nil)

	e.clock.advance(time.Hour) // the deadline itself still waits
	if g, _ := e.s.GetGate(e.ctx, p.GateID); g.Status != "pending" {
		t.Fatalf("at the deadline: %s", g.Status)
	}
	e.clock.advance(time.Second)
	g, err := e.s.GetGate(e.ctx, p.GateID)
	if err != nil || g.Status != "expired" || g.Reason == "" {
		t.Fatalf("past the deadline: %+v %v", g, err)
	}
	if gs, _ := e.s.ListGates(e.ctx, "pending"); len(gs) != 0 {
		t.Fatalf("pending gates after the timeout: %+v", gs)
	}
	if gs, _ := e.s.ListGates(e.ctx, "expired"); len(gs) != 1 || gs[0].ID != p.GateID {
		t.Fatalf("expired gates: %+v", gs)
	}
	mainBefore := e.head("main")
	if g, err := e.s.Decide(e.ctx, p.GateID, "owner-key", true, ""); !errors.Is(err, ErrDecided) || g.Status != "expired" {
		t.Fatalf("approving an expired gate: %+v %v", g, err)
	}
	if e.head("main") != mainBefore {
		t.Fatal("an expired gate merged")
	}
	// Proposing again opens a new gate rather than returning the dead one.
	p2 := e.propose("work", nil)
	if p2.GateID == p.GateID || p2.Status != "pending" {
		t.Fatalf("proposing after the timeout: %+v", p2)
	}
	st, err := e.s.GateStats(e.ctx)
	if err != nil || st.Total != 2 || st.Expired != 1 || st.Pending != 1 || st.ApprovalRate != 0 {
		t.Fatalf("stats: %+v %v", st, err)
	}
}

func TestProposeAgain(t *testing.T) {
	e := newEnv(t, false)
	e.put("work", "docs/a.md", "v2")
	p1 := e.propose("work", nil)
	p2 := e.propose("work", nil)
	if p2.ID != p1.ID || p2.GateID != p1.GateID {
		t.Fatalf("proposing the same diff again: %s/%s then %s/%s", p1.ID, p1.GateID, p2.ID, p2.GateID)
	}
	e.put("work", "docs/b.md", "b1")
	p3 := e.propose("work", nil)
	if p3.GateID == p1.GateID || p3.Status != "pending" {
		t.Fatalf("proposing a changed diff: %+v", p3)
	}
	if old, _ := e.s.GetGate(e.ctx, p1.GateID); old.Status != "void" || old.DecidedBy != "gateway" {
		t.Fatalf("the superseded gate: %+v", old)
	}
	if gs, _ := e.s.ListGates(e.ctx, "pending"); len(gs) != 1 || gs[0].ID != p3.GateID {
		t.Fatalf("pending gates: %+v", gs)
	}
	if _, err := e.s.Decide(e.ctx, p3.GateID, "owner-key", true, ""); err != nil {
		t.Fatal(err)
	}
	if e.etag("main", "docs/a.md") != "v2" || e.etag("main", "docs/b.md") != "b1" {
		t.Fatal("the new gate's approval did not merge")
	}
}

func TestProposeConflictAndUpToDate(t *testing.T) {
	e := newEnv(t, false)
	if p := e.propose("work", nil); p.Status != "up_to_date" || p.GateID != "" {
		t.Fatalf("nothing to merge: %+v", p)
	} else if _, err := e.s.GetProposal(e.ctx, p.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an up-to-date proposal was stored: %v", err)
	}
	e.put("work", "docs/a.md", "work")
	e.put("main", "docs/a.md", "main")
	e.commit("main")
	p := e.propose("work", nil)
	if p.Status != "conflict" || len(p.Conflicts) != 1 || p.Conflicts[0] != "docs/a.md" || p.GateID != "" {
		t.Fatalf("conflict: %+v", p)
	}
	if stored, err := e.s.GetProposal(e.ctx, p.ID); err != nil || stored.Status != "conflict" {
		t.Fatalf("stored conflict: %+v %v", stored, err)
	}
	if gs, _ := e.s.ListGates(e.ctx, ""); len(gs) != 0 {
		t.Fatalf("a conflict opened a gate: %+v", gs)
	}
}

// TestProposeByPolicy: the repository's policy merges, refuses or gates at
// once, with the rule that decided; a lease without propose only asks.
func TestProposeByPolicy(t *testing.T) {
	e := newEnv(t, true)
	pol := &Policy{Rules: []Rule{
		{Name: "no-src", Touches: []string{"src/**"}, Then: Refuse},
		{Name: "ops-gated", Roles: []string{"ops"}, Then: Hold},
		{Name: "small-docs", Within: []string{"docs/**"}, MaxChanges: 2, Then: Merge},
	}}
	if err := e.s.SetPolicy(e.ctx, repo, pol); err != nil {
		t.Fatal(err)
	}
	if got, err := e.s.Policy(e.ctx, repo); err != nil || len(got.Rules) != 3 || got.Rules[2].MaxChanges != 2 {
		t.Fatalf("stored policy: %+v %v", got, err)
	}
	if err := e.s.SetPolicy(e.ctx, repo, &Policy{Rules: []Rule{{Name: "bad", Then: "yes"}}}); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("an invalid policy: %v", err)
	}
	if got, _ := e.s.Policy(e.ctx, repo); len(got.Rules) != 3 {
		t.Fatalf("an invalid policy replaced the stored one: %+v", got)
	}
	if got, err := e.s.Policy(e.ctx, "other"); err != nil || len(got.Rules) != 0 {
		t.Fatalf("a repository without a policy: %+v %v", got, err)
	}

	t.Run("refuse", func(t *testing.T) {
		e.put("work", "src/main.go", "v2")
		mainBefore := e.head("main")
		p := e.propose("work", nil)
		if p.Status != "refused" || p.Action != Refuse || p.Rule != "no-src" || p.GateID != "" {
			t.Fatalf("proposal: %+v", p)
		}
		if e.head("main") != mainBefore {
			t.Fatal("a refused proposal merged")
		}
		if stored, err := e.s.GetProposal(e.ctx, p.ID); err != nil || stored.Status != "refused" {
			t.Fatalf("stored: %+v %v", stored, err)
		}
		if count(e.events(), record.KindDenied) != 1 {
			t.Fatalf("events: %v", e.events())
		}
	})
	t.Run("merge", func(t *testing.T) {
		e.fork("docs")
		e.put("docs", "docs/a.md", "v2")
		p := e.propose("docs", nil)
		if p.Status != "merged" || p.Action != Merge || p.Rule != "small-docs" || p.Merge == "" || p.GateID != "" {
			t.Fatalf("proposal: %+v", p)
		}
		if e.etag("main", "docs/a.md") != "v2" || e.head("main").String() != p.Merge {
			t.Fatal("a merged proposal did not merge")
		}
	})
	t.Run("too many changes for the rule", func(t *testing.T) {
		e.fork("many")
		for _, k := range []string{"docs/1", "docs/2", "docs/3"} {
			e.put("many", k, "x")
		}
		if p := e.propose("many", nil); p.Status != "pending" || p.Rule != "default: a person decides" {
			t.Fatalf("proposal: %+v", p)
		}
	})
	t.Run("the lease's role", func(t *testing.T) {
		e.fork("ops")
		e.put("ops", "docs/b.md", "x")
		l := e.issue("ops", lease.Write, lease.Propose)
		if p := e.propose("ops", l); p.Status != "pending" || p.Rule != "ops-gated" {
			t.Fatalf("proposal: %+v", p)
		}
	})
	t.Run("a lease without propose only asks", func(t *testing.T) {
		e.fork("ask")
		e.put("ask", "docs/c.md", "x")
		l := e.issue("cleo", lease.Write)
		if p := e.propose("ask", l); p.Status != "pending" || p.Action != Hold || p.Rule != "the lease does not grant propose" {
			t.Fatalf("proposal: %+v", p)
		}
		if e.etag("main", "docs/c.md") != "-" {
			t.Fatal("a lease without propose merged")
		}
	})
}

// TestListGatesAndStats: gates list newest first, by status, and the stats
// count them and measure the time a person took.
func TestListGatesAndStats(t *testing.T) {
	e := newEnv(t, false)
	// Four branches, four gates, a minute apart.
	var ids []string
	for _, br := range []string{"w1", "w2", "w3", "w4"} {
		e.fork(br)
		e.put(br, "docs/"+br, "x")
		ids = append(ids, e.propose(br, nil).GateID)
		e.clock.advance(time.Minute)
	}
	all, err := e.s.ListGates(e.ctx, "")
	if err != nil || len(all) != 4 {
		t.Fatalf("all gates: %+v %v", all, err)
	}
	for i, g := range all {
		if g.ID != ids[3-i] {
			t.Fatalf("gate %d is %s, want %s (newest first)", i, g.ID, ids[3-i])
		}
	}
	// Now is 4 minutes after the first gate: w1 is approved after 4m, w2
	// denied after 3m10s; w3's approval after 2m30s is void, since the merge
	// of w1 moved main after w3's card was made; w4 waits.
	if _, err := e.s.Decide(e.ctx, ids[0], "owner-key", true, ""); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(10 * time.Second)
	if _, err := e.s.Decide(e.ctx, ids[1], "owner-key", false, ""); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(20 * time.Second)
	if _, err := e.s.Decide(e.ctx, ids[2], "owner-key", true, ""); !errors.Is(err, ErrVoid) {
		t.Fatalf("approving w3 after main moved: %v", err)
	}
	if e.etag("main", "docs/w3") != "-" {
		t.Fatal("w3 merged")
	}
	for status, want := range map[string][]string{
		"pending":  {ids[3]},
		"approved": {ids[0]},
		"denied":   {ids[1]},
		"void":     {ids[2]},
		"expired":  nil,
	} {
		gs, err := e.s.ListGates(e.ctx, status)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range gs {
			if g.Status != status {
				t.Errorf("ListGates(%s) returned a %s gate", status, g.Status)
			}
			got = append(got, g.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListGates(%s) = %v, want %v", status, got, want)
		}
	}
	st, err := e.s.GateStats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Total: 4, Pending: 1, Approved: 1, Denied: 1, Void: 1, ApprovalRate: 1.0 / 3, MedianSecondsToDecide: 190}
	if *st != want {
		t.Fatalf("stats = %+v, want %+v", *st, want)
	}
}
