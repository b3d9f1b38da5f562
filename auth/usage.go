package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// Budget accounting. lease.Usage lives in memory and is written behind to kv
// every second (Run) and on Close, so a crash can forget at most about a
// second of consumption; every request of a lease is charged to the lease
// and to each of its ancestors.

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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meterFor(ctx, l.ID).Usage
}

// chain returns the lease and its ancestors, nearest first.
func (s *Leases) chain(ctx context.Context, l *lease.Lease) ([]*lease.Lease, error) {
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
// ancestors.
func (s *Leases) Remaining(ctx context.Context, l *lease.Lease) lease.Remaining {
	r := lease.Remaining{BytesRead: -1, BytesWritten: -1, Requests: -1}
	ls, err := s.chain(ctx, l)
	if err != nil {
		return lease.Remaining{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range ls {
		u := s.meterFor(ctx, x.ID).Usage
		r.BytesRead = minLeft(r.BytesRead, left(x.Budgets.BytesRead, u.BytesRead))
		r.BytesWritten = minLeft(r.BytesWritten, left(x.Budgets.BytesWritten, u.BytesWritten))
		r.Requests = minLeft(r.Requests, left(x.Budgets.Requests, u.Requests))
	}
	return r
}

// Admit charges one request to the lease and its ancestors, after checking
// that the lease is live and no budget is spent. It is called once per
// request, before any other check.
func (s *Leases) Admit(ctx context.Context, l *lease.Lease) lease.Verdict {
	if l.Revoked || !s.now().Before(l.ExpiresAt) {
		return lease.Verdict{Decision: lease.Expired, Rule: "lease expired or revoked"}
	}
	ls, err := s.chain(ctx, l)
	if err != nil {
		return lease.Verdict{Decision: lease.Expired, Rule: "ancestor lease missing"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range ls {
		if x.Revoked {
			return lease.Verdict{Decision: lease.Expired, Rule: "ancestor lease " + x.ID + " revoked"}
		}
		u := s.meterFor(ctx, x.ID).Usage
		if x.Budgets.Requests > 0 && u.Requests >= x.Budgets.Requests {
			return lease.Verdict{Decision: lease.OverBudget, Rule: fmt.Sprintf("lease %s: request budget of %d spent", x.ID, x.Budgets.Requests)}
		}
	}
	for _, x := range ls {
		m := s.meterFor(ctx, x.ID)
		m.Requests++
		m.dirty = true
	}
	return lease.Verdict{Decision: lease.Allow}
}

// ReserveRead checks that n more bytes may be read (whole responses are
// refused up front rather than cut short) and charges them.
func (s *Leases) ReserveRead(ctx context.Context, l *lease.Lease, n int64) lease.Verdict {
	return s.reserve(ctx, l, n, func(b lease.Budgets) int64 { return b.BytesRead }, func(m *meter) *int64 { return &m.BytesRead }, "bytes_read")
}

// ReserveWrite does the same for bytes written.
func (s *Leases) ReserveWrite(ctx context.Context, l *lease.Lease, n int64) lease.Verdict {
	return s.reserve(ctx, l, n, func(b lease.Budgets) int64 { return b.BytesWritten }, func(m *meter) *int64 { return &m.BytesWritten }, "bytes_written")
}

// Refund gives back bytes reserved but not transferred (a failed upload or
// an aborted download).
func (s *Leases) Refund(ctx context.Context, l *lease.Lease, read, written int64) {
	ls, err := s.chain(ctx, l)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range ls {
		m := s.meterFor(ctx, x.ID)
		m.BytesRead = max(m.BytesRead-read, 0)
		m.BytesWritten = max(m.BytesWritten-written, 0)
		m.dirty = true
	}
}

func (s *Leases) reserve(ctx context.Context, l *lease.Lease, n int64, limit func(lease.Budgets) int64, field func(*meter) *int64, name string) lease.Verdict {
	ls, err := s.chain(ctx, l)
	if err != nil {
		return lease.Verdict{Decision: lease.Expired, Rule: "ancestor lease missing"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range ls {
		if lim := limit(x.Budgets); lim > 0 && *field(s.meterFor(ctx, x.ID))+n > lim {
			return lease.Verdict{Decision: lease.OverBudget, Rule: fmt.Sprintf("lease %s: %s budget of %d would be exceeded by %d bytes", x.ID, name, lim, n)}
		}
	}
	for _, x := range ls {
		m := s.meterFor(ctx, x.ID)
		*field(m) += n
		m.dirty = true
	}
	return lease.Verdict{Decision: lease.Allow}
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
