package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// meterFor returns the meter of a lease, loading it from kv once. s.mu
// must be held.
func (s *Leases) meterFor(ctx context.Context, id string) *meter {
	m, ok := s.usage[id]
	if !ok {
		m = &meter{}
		s.usage[id] = m
	}
	if !m.loaded {
		m.loaded = true
		_ = s.db.View(ctx, func(r kv.Reader) error {
			b, err := r.Get(usageKey(id))
			if err == nil {
				var u lease.Usage
				if json.Unmarshal(b, &u) == nil {
					m.Usage.BytesRead += u.BytesRead
					m.Usage.BytesWritten += u.BytesWritten
					m.Usage.Requests += u.Requests
				}
			}
			return nil
		})
	}
	return m
}

func (s *Leases) usageOf(ctx context.Context, l *lease.Lease) lease.Usage {
	if s.shared {
		return s.sharedUsage(ctx, l.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meterFor(ctx, l.ID).Usage
}

// usagesOf is usageOf for each lease of chain; on a shared store they are
// read in one snapshot.
func (s *Leases) usagesOf(ctx context.Context, chain []*lease.Lease) []lease.Usage {
	if s.shared {
		return s.sharedUsages(ctx, chain)
	}
	out := make([]lease.Usage, len(chain))
	for i, x := range chain {
		out[i] = s.usageOf(ctx, x)
	}
	return out
}

// Chain returns the lease and its ancestors, nearest first, as stored now.
func (s *Leases) Chain(ctx context.Context, l *lease.Lease) ([]*lease.Lease, error) {
	out := []*lease.Lease{l}
	for cur := l; cur.Parent != nil; {
		p, err := s.Get(ctx, *cur.Parent)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		cur = p
	}
	return out, nil
}

func left(limit, used int64) int64 {
	if limit == 0 {
		return -1
	}
	return max(limit-used, 0)
}

func minLeft(a, b int64) int64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// Remaining returns the tightest remaining budgets over the lease and its
// ancestors (of a lease other than the request's own: lease/get).
func (s *Leases) Remaining(ctx context.Context, l *lease.Lease) lease.Remaining {
	ls, err := s.Chain(ctx, l)
	if err != nil {
		return lease.Remaining{}
	}
	return s.remaining(ctx, ls)
}

// remaining is Remaining over a chain already loaded.
func (s *Leases) remaining(ctx context.Context, chain []*lease.Lease) lease.Remaining {
	r := lease.Remaining{BytesRead: -1, BytesWritten: -1, Requests: -1}
	us := s.usagesOf(ctx, chain)
	for i, x := range chain {
		u := us[i]
		r.BytesRead = minLeft(r.BytesRead, left(x.Budgets.BytesRead, u.BytesRead))
		r.BytesWritten = minLeft(r.BytesWritten, left(x.Budgets.BytesWritten, u.BytesWritten))
		r.Requests = minLeft(r.Requests, left(x.Budgets.Requests, u.Requests))
	}
	return r
}

// admit checks that every lease of the chain is live and has requests
// left, and charges one request to each. It is called once per request,
// before any other check.
func (s *Leases) admit(ctx context.Context, chain []*lease.Lease, now time.Time) (lease.Verdict, error) {
	if v, ended := chainEnded(chain, now); ended {
		return v, nil
	}
	return s.reserve(ctx, chain, 1, requestsBudget)
}

// chainEnded reports whether a lease of chain is revoked or expired at
// now, with the verdict that says which.
func chainEnded(chain []*lease.Lease, now time.Time) (lease.Verdict, bool) {
	for _, x := range chain {
		switch {
		case x.Revoked:
			return lease.Verdict{Decision: lease.Expired, Rule: "lease " + x.ID + " revoked"}, true
		case !now.Before(x.ExpiresAt):
			return lease.Verdict{Decision: lease.Expired, Rule: "lease " + x.ID + " expired"}, true
		}
	}
	return lease.Verdict{}, false
}

// budget names one budget: its limit in Budgets and its counter in a meter.
type budget struct {
	name  string
	limit func(lease.Budgets) int64
	used  func(*meter) *int64
}

var (
	requestsBudget = budget{"requests", func(b lease.Budgets) int64 { return b.Requests }, func(m *meter) *int64 { return &m.Requests }}
	readBudget     = budget{"bytes_read", func(b lease.Budgets) int64 { return b.BytesRead }, func(m *meter) *int64 { return &m.BytesRead }}
	writeBudget    = budget{"bytes_written", func(b lease.Budgets) int64 { return b.BytesWritten }, func(m *meter) *int64 { return &m.BytesWritten }}
)

// reserve checks that n more units of b fit every lease of the chain
// (whole responses are refused up front rather than cut short) and
// charges them. n must not be negative. The comparison is made against
// what is left, so a huge n cannot wrap around. An error is the shared
// metadata store's (SetShared): nothing was charged.
func (s *Leases) reserve(ctx context.Context, chain []*lease.Lease, n int64, b budget) (lease.Verdict, error) {
	if n < 0 {
		return lease.Verdict{Decision: lease.Denied, Rule: fmt.Sprintf("a negative %s charge (%d)", b.name, n)}, nil
	}
	if s.shared {
		_, v, err := s.chargeShared(ctx, chain, b, fitAll(chain, n, b))
		return v, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range chain {
		if v, over := overBudget(x, *b.used(s.meterFor(ctx, x.ID)), n, b); over {
			return v, nil
		}
	}
	for _, x := range chain {
		m := s.meterFor(ctx, x.ID)
		p := b.used(m)
		*p = sat(*p, n)
		m.dirty = true
	}
	return lease.Verdict{Decision: lease.Allow}, nil
}

// overBudget reports whether n more units of b, used already, exceed
// lease x's limit, with the verdict that says so.
func overBudget(x *lease.Lease, used, n int64, b budget) (lease.Verdict, bool) {
	lim := b.limit(x.Budgets)
	if lim <= 0 || (used < lim && n <= lim-used) {
		return lease.Verdict{}, false
	}
	if b.name == "requests" {
		return lease.Verdict{Decision: lease.OverBudget, Rule: fmt.Sprintf("lease %s: request budget of %d spent", x.ID, lim)}, true
	}
	return lease.Verdict{Decision: lease.OverBudget, Rule: fmt.Sprintf("lease %s: %s budget of %d would be exceeded by %d bytes", x.ID, b.name, lim, n)}, true
}

// reserveUpTo charges what b has left over the chain, at most n (n >= 0),
// and returns it with the rule of the lease that bounded it ("" when n
// fitted).
func (s *Leases) reserveUpTo(ctx context.Context, chain []*lease.Lease, n int64, b budget) (int64, string, error) {
	if s.shared {
		got, v, err := s.chargeShared(ctx, chain, b, fitUpTo(chain, n, b))
		return got, v.Rule, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	got, rule := upTo(chain, n, b, func(i int) int64 { return *b.used(s.meterFor(ctx, chain[i].ID)) })
	for _, x := range chain {
		m := s.meterFor(ctx, x.ID)
		p := b.used(m)
		*p = sat(*p, got)
		m.dirty = true
	}
	return got, rule, nil
}

// upTo is how much of n units of b the chain has left, given what each
// lease used (usedOf its index), with the rule of the lease that bounded
// it.
func upTo(chain []*lease.Lease, n int64, b budget, usedOf func(i int) int64) (int64, string) {
	got, rule := n, ""
	for i, x := range chain {
		lim := b.limit(x.Budgets)
		if lim <= 0 {
			continue
		}
		if l := max(lim-usedOf(i), 0); l < got {
			got, rule = l, fmt.Sprintf("lease %s: %s budget of %d would be exceeded", x.ID, b.name, lim)
		}
	}
	return got, rule
}

// refund gives back n units of b reserved by the same request and not
// used (a failed upload, a download that could not start).
func (s *Leases) refund(ctx context.Context, chain []*lease.Lease, n int64, b budget) {
	if n <= 0 {
		return
	}
	if s.shared {
		s.refundShared(ctx, chain, n, b)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range chain {
		m := s.meterFor(ctx, x.ID)
		p := b.used(m)
		*p = max(*p-n, 0)
		m.dirty = true
	}
}

// sat adds two non-negative counts, saturating instead of wrapping.
func sat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Flush writes changed usage counters to kv.
func (s *Leases) Flush(ctx context.Context) error {
	s.mu.Lock()
	dirty := map[string]lease.Usage{}
	for id, m := range s.usage {
		if m.dirty {
			dirty[id] = m.Usage
			m.dirty = false
		}
	}
	s.mu.Unlock()
	if len(dirty) == 0 {
		return nil
	}
	b := s.db.Batch(ctx)
	for id, u := range dirty {
		v, _ := json.Marshal(u)
		if err := b.Set(usageKey(id), v); err != nil {
			b.Cancel()
			return err
		}
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("flush lease usage: %w", err)
	}
	return nil
}

// Run writes usage behind every second until ctx ends, then once more.
func (s *Leases) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = s.Flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			_ = s.Flush(ctx)
		}
	}
}

// Close flushes usage.
func (s *Leases) Close() error {
	return s.Flush(context.Background())
}
