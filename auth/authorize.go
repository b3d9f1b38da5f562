package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// Target is what an operation acts on. Branch "" means the principal's
// default (Principal.Branch). Key "" asks about the repository and branch
// themselves (a listing, a commit): the lease must grant the action on
// some path. Commit, when set, names a commit the request reads through
// (a diff or log ref, a version): it must be in the history of the lease's
// branch.
type Target struct {
	Repo   string
	Branch string
	Key    string
	Commit string
}

// Authorize asks whether p may do act on t. It answers nil, or a
// *Refusal wrapping ErrNoSuchBucket, ErrNoSuchVersion or ErrNotFound
// (outside the view), or ErrDenied (visible, not granted). The refusal is
// recorded. A single-use grant that alone allows the request is consumed
// here, once per request, and every grant's use is recorded.
func (a *Authority) Authorize(ctx context.Context, p *Principal, act lease.Action, t Target) error {
	return a.authorize(ctx, p, act, t, false)
}

// Probe is Authorize for a read of metadata only (HEAD, the mount's
// stat): it does not consume a single-use grant, so the read that follows
// can use it.
func (a *Authority) Probe(ctx context.Context, p *Principal, t Target) error {
	return a.authorize(ctx, p, lease.Read, t, true)
}

// OwnerOnly refuses a lease the operation op (recorded): NoSuchBucket
// when t names a repository or branch outside the lease, AccessDenied
// otherwise.
func (a *Authority) OwnerOnly(ctx context.Context, p *Principal, op string, t Target) error {
	if p.Lease == nil {
		return nil
	}
	if t.Repo != "" && p.Outside(t.Repo, t.Branch) {
		v := lease.Verdict{Decision: lease.NotFound, Rule: "repo or branch outside the lease"}
		return a.refuse(ctx, p, op, t, v, ErrNoSuchBucket)
	}
	v := lease.Verdict{Decision: lease.Denied, Rule: op + " is an owner operation; a lease cannot call it"}
	return a.refuse(ctx, p, op, t, v, ErrDenied)
}

// Outside reports whether repo (and branch br, "" for the lease's own)
// lie outside the request's lease: for it they do not exist. Listings of
// repositories filter with it.
func (p *Principal) Outside(repo, br string) bool {
	l := p.Lease
	return l != nil && (repo != l.Repo || br != "" && br != l.Branch)
}

func (a *Authority) authorize(ctx context.Context, p *Principal, act lease.Action, t Target, probe bool) error {
	l := p.Lease
	if l == nil {
		return nil
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	v := l.Check(act, t.Repo, t.Branch, t.Key, p.now)
	if v.Decision == lease.Allow && v.Grant != "" {
		v = a.useGrant(ctx, p, v, t.Key, probe)
	}
	switch {
	case v.Decision == lease.Allow && t.Commit != "":
		return a.seen(ctx, p, act, t)
	case v.Decision == lease.Allow:
		return nil
	case v.Decision == lease.NotFound && (t.Key == "" || t.Repo != l.Repo || t.Branch != l.Branch):
		return a.refuse(ctx, p, string(act), t, v, ErrNoSuchBucket)
	case v.Decision == lease.NotFound:
		return a.refuse(ctx, p, string(act), t, v, ErrNotFound)
	}
	return a.refuse(ctx, p, string(act), t, v, ErrDenied)
}

// useGrant consumes a single-use grant before the request acts on it
// (atomically: of concurrent requests exactly one gets it) and records
// the use of any grant once per request.
func (a *Authority) useGrant(ctx context.Context, p *Principal, v lease.Verdict, key string, probe bool) lease.Verdict {
	if v.SingleUseGrant != "" && !p.consumed[v.SingleUseGrant] {
		if probe {
			return v
		}
		if _, err := a.leases.ConsumeGrant(ctx, p.Lease.ID, v.SingleUseGrant); err != nil {
			return lease.Verdict{Decision: lease.NotFound, Rule: "single-use grant already used or expired"}
		}
		if p.consumed == nil {
			p.consumed = map[string]bool{}
		}
		p.consumed[v.SingleUseGrant] = true
	}
	if !p.grants[v.Grant] {
		if p.grants == nil {
			p.grants = map[string]bool{}
		}
		p.grants[v.Grant] = true
		a.grantUsed(ctx, p, v.Grant, key)
	}
	return v
}

// seen checks that the commit t names is in the history of the lease's
// branch; any other commit does not exist for the lease.
func (a *Authority) seen(ctx context.Context, p *Principal, act lease.Action, t Target) error {
	v := lease.Verdict{Decision: lease.NotFound, Rule: "commit outside the lease's branch history"}
	id, err := manifest.ParseCommitID(t.Commit)
	if err != nil {
		return a.refuse(ctx, p, string(act), t, v, ErrNoSuchVersion)
	}
	ok, err := a.branches.Sees(ctx, t.Repo, p.Lease.Branch, id)
	if err != nil && !errors.Is(err, branch.ErrNotFound) {
		return err
	}
	if !ok {
		return a.refuse(ctx, p, string(act), t, v, ErrNoSuchVersion)
	}
	return nil
}

// refuse records a refusal and returns it as an error of kind.
func (a *Authority) refuse(ctx context.Context, p *Principal, act string, t Target, v lease.Verdict, kind error) error {
	a.obs.Refused(refusalReason(v.Decision))
	a.denied(ctx, p, act, t, v)
	return &Refusal{Decision: v.Decision, Rule: v.Rule, Action: act, Target: t, kind: kind}
}

// refusalReason names a lease decision for the metrics, in the words of
// FailureReason where they overlap.
func refusalReason(d lease.Decision) string {
	if d == lease.Denied {
		return "denied"
	}
	return d.String()
}

// Charge is bytes a request charged to its lease's budgets; Refund gives
// them back when the transfer did not happen (a failed upload, a download
// that could not start). Only the request that charged can refund, and
// only what it charged.
type Charge struct {
	a     *Authority
	p     *Principal
	n     int64
	which budget

	// Set by WriteUpTo: the reservation, and what Settle refuses with.
	up   int64
	t    Target
	rule string
}

// Refund gives the charge back, once.
func (c *Charge) Refund(ctx context.Context) {
	if c == nil || c.n == 0 {
		return
	}
	c.a.leases.refund(context.WithoutCancel(ctx), c.p.chain, c.n, c.which)
	c.a.obs.Refunded(c.which.name, c.n)
	c.n = 0
}

// Range is [Off, Off+Len) of an object.
type Range struct{ Off, Len int64 }

// valid reports whether r is a range of non-negative numbers whose end
// does not overflow.
func (r Range) valid() bool { return r.Off >= 0 && r.Len >= 0 && r.Off <= maxInt64-r.Len }

// total sums the lengths of rs, refusing negative or overflowing ranges.
func total(rs []Range) (int64, error) {
	var n int64
	for _, r := range rs {
		if !r.valid() || n > maxInt64-r.Len {
			return 0, fmt.Errorf("%w: range of %d bytes at %d", ErrInvalid, r.Len, r.Off)
		}
		n += r.Len
	}
	return n, nil
}

// Read charges the bytes of ranges rs of entry e at t to the lease as one
// charge, refusing the whole read if a budget does not cover it, and adds
// each range to the run's read manifest (at t.Commit when the read went
// through one, else at the branch head); no ranges record an open (HEAD,
// stat). Ranges must not be negative or overflow; checking them against
// the object's size is the edge's (it answers 416).
func (a *Authority) Read(ctx context.Context, p *Principal, t Target, e *manifest.Entry, rs ...Range) (*Charge, error) {
	if p.Lease == nil {
		return &Charge{}, nil
	}
	n, err := total(rs)
	if err != nil {
		return nil, err
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	l, err := a.ceiling(ctx, p, t, e)
	if err != nil {
		return nil, err
	}
	if err := a.egressGuard(ctx, p, t, l); err != nil {
		return nil, err
	}
	c, err := a.charge(ctx, p, string(lease.Read), t, n, readBudget)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		a.recordRead(ctx, p, t, e, 0, 0)
	}
	for _, r := range rs {
		a.recordRead(ctx, p, t, e, r.Off, r.Len)
	}
	a.taint(ctx, p, t, l)
	return c, nil
}

// Source is a range of an entry a server-side copy reads.
type Source struct {
	Target
	Entry *manifest.Entry
	Range
}

// Copy charges n bytes written to dst by a server-side copy (CopyObject,
// compose) that reads srcs: the bytes never reach the client, so only the
// write budget pays, as for an upload of the same size, and each source
// range goes into the run's read manifest.
func (a *Authority) Copy(ctx context.Context, p *Principal, dst Target, n int64, srcs ...Source) (*Charge, error) {
	if p.Lease == nil {
		return &Charge{}, nil
	}
	ls := make([]label.Label, len(srcs))
	for i, s := range srcs {
		if !s.Range.valid() {
			return nil, fmt.Errorf("%w: copy of %d bytes at %d", ErrInvalid, s.Len, s.Off)
		}
		t := s.Target
		t.Branch = p.Branch(t.Repo, t.Branch)
		var err error
		if ls[i], err = a.ceiling(ctx, p, t, s.Entry); err != nil {
			return nil, err
		}
		if err := a.egressGuard(ctx, p, t, ls[i]); err != nil {
			return nil, err
		}
	}
	c, err := a.Write(ctx, p, dst, n)
	if err != nil {
		return nil, err
	}
	for i, s := range srcs {
		t := s.Target
		t.Branch = p.Branch(t.Repo, t.Branch)
		a.recordRead(ctx, p, t, s.Entry, s.Off, s.Len)
		a.taint(ctx, p, t, ls[i])
	}
	return c, nil
}

// Write charges n bytes about to be written to t, refusing the write
// whole if a budget does not cover it.
func (a *Authority) Write(ctx context.Context, p *Principal, t Target, n int64) (*Charge, error) {
	if p.Lease == nil {
		return &Charge{}, nil
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: write of %d bytes", ErrInvalid, n)
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	return a.charge(ctx, p, string(lease.Write), t, n, writeBudget)
}

func (a *Authority) charge(ctx context.Context, p *Principal, act string, t Target, n int64, b budget) (*Charge, error) {
	if n == 0 {
		return &Charge{}, nil
	}
	v, err := a.leases.reserve(ctx, p.chain, n, b)
	if err != nil {
		return nil, err
	}
	if v.Decision != lease.Allow {
		return nil, a.refuse(ctx, p, act, t, v, ErrOverBudget)
	}
	a.obs.Charged(b.name, n)
	return &Charge{a: a, p: p, n: n, which: b}, nil
}

// WriteUpTo charges a write whose length is known only once it has been
// read (a POST form's file, whose form declares no length): it reserves
// what the write budgets of the lease and its ancestors have left, at
// most max bytes. The caller reads at most Reserved bytes, and one more
// to learn that the write needs more, then calls Settle with what it
// read. For the owner it reserves max.
func (a *Authority) WriteUpTo(ctx context.Context, p *Principal, t Target, max int64) (*Charge, error) {
	if max < 0 {
		return nil, fmt.Errorf("%w: write of up to %d bytes", ErrInvalid, max)
	}
	if p.Lease == nil {
		return &Charge{up: max}, nil
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	n, rule, err := a.leases.reserveUpTo(ctx, p.chain, max, writeBudget)
	if err != nil {
		return nil, err
	}
	a.obs.Charged(writeBudget.name, n)
	return &Charge{a: a, p: p, n: n, which: writeBudget, up: n, t: t, rule: rule}, nil
}

// Reserved is how many bytes a WriteUpTo charge covers.
func (c *Charge) Reserved() int64 { return c.up }

// Settle ends a WriteUpTo charge at the n bytes the write used, refunding
// the rest of the reservation. A write that needed more than was reserved
// (n > Reserved) is refused, recorded and refunded whole: ErrOverBudget,
// as Write answers. For the owner it does nothing.
func (c *Charge) Settle(ctx context.Context, n int64) error {
	if c.a == nil {
		return nil
	}
	if n > c.up {
		c.Refund(ctx)
		v := lease.Verdict{Decision: lease.OverBudget, Rule: c.rule}
		if v.Rule == "" {
			v.Rule = fmt.Sprintf("the write needs more than the %d bytes reserved", c.up)
		}
		return c.a.refuse(ctx, c.p, string(lease.Write), c.t, v, ErrOverBudget)
	}
	c.a.leases.refund(context.WithoutCancel(ctx), c.p.chain, c.n-max(n, 0), c.which)
	c.a.obs.Refunded(c.which.name, c.n-max(n, 0))
	c.n = max(n, 0)
	return nil
}

const maxInt64 = 1<<63 - 1

// ProposeInto asks whether p may propose merging its branch into into. A
// lease may name the branch its own was forked from and the branches its
// role lists in propose_into; a lease with neither may name the
// repository's default branch. Any other target does not exist for it,
// whether it exists or not (NoSuchBucket, recorded).
func (a *Authority) ProposeInto(ctx context.Context, p *Principal, repo, into string) error {
	l := p.Lease
	if l == nil {
		return nil
	}
	var allowed []string
	if l.ForkedFrom != "" {
		allowed = append(allowed, l.ForkedFrom)
	}
	if r, err := a.leases.GetRole(ctx, l.Role); err == nil && r.Repo == l.Repo {
		allowed = append(allowed, r.ProposeInto...)
	}
	if len(allowed) == 0 {
		allowed = []string{branch.DefaultBranch}
	}
	if repo == l.Repo && into != l.Branch && slices.Contains(allowed, into) {
		return nil
	}
	v := lease.Verdict{Decision: lease.NotFound, Rule: "proposal target is neither the branch the run forked from nor one its role names"}
	return a.refuse(ctx, p, string(lease.Propose), Target{Repo: repo, Branch: into}, v, ErrNoSuchBucket)
}
