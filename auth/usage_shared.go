package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// SetShared makes the store charge budgets in the metadata store itself,
// one serializable transaction per charge, instead of in this process's
// meters written behind every second: gateways that share a metadata
// store then charge each request exactly once, and no gateway can spend
// what another already spent. Call it before serving.
func (s *Leases) SetShared(log *slog.Logger) {
	s.shared = true
	s.log = log
}

// storedUsage reads the usage counters of lease id in a transaction or
// snapshot (zero when none were stored).
func storedUsage(r kv.Reader, id string) (lease.Usage, error) {
	var u lease.Usage
	b, err := r.Get(usageKey(id))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return u, nil
	case err != nil:
		return u, err
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return u, fmt.Errorf("usage of lease %s: %w", id, err)
	}
	return u, nil
}

// sharedUsage is the usage of lease id as the metadata store holds it
// now; a failed read counts as nothing used (it only informs).
func (s *Leases) sharedUsage(ctx context.Context, id string) lease.Usage {
	var u lease.Usage
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		u, err = storedUsage(r, id)
		return err
	})
	if err != nil {
		s.log.Warn("reading lease usage", "lease", id, "err", err)
	}
	return u
}

// sharedUsages reads the usage of every lease of chain in one view
// (zero for a lease whose usage cannot be read).
func (s *Leases) sharedUsages(ctx context.Context, chain []*lease.Lease) []lease.Usage {
	out := make([]lease.Usage, len(chain))
	err := s.db.View(ctx, func(r kv.Reader) error {
		for i, x := range chain {
			u, err := storedUsage(r, x.ID)
			if err != nil {
				return err
			}
			out[i] = u
		}
		return nil
	})
	if err != nil {
		s.log.Warn("reading lease usage", "leases", len(chain), "err", err)
	}
	return out
}

// chargeShared charges the chain in one transaction: fit returns how
// much of b to charge given the chain's counters (and a refusal verdict
// when nothing is to be charged). The counters are read and written in
// the same serializable transaction, so charges from gateways racing on
// one lease are applied one after the other.
func (s *Leases) chargeShared(ctx context.Context, chain []*lease.Lease, b budget, fit func([]meter) (int64, lease.Verdict)) (int64, lease.Verdict, error) {
	var got int64
	var v lease.Verdict
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		ms := make([]meter, len(chain))
		for i, x := range chain {
			u, err := storedUsage(txn, x.ID)
			if err != nil {
				return err
			}
			ms[i].Usage = u
		}
		got, v = fit(ms)
		if v.Decision != lease.Allow || got == 0 {
			return nil
		}
		for i, x := range chain {
			if p := b.used(&ms[i]); got < 0 {
				*p = max(*p+got, 0) // a refund
			} else {
				*p = sat(*p, got)
			}
			enc, err := json.Marshal(ms[i].Usage)
			if err != nil {
				return err
			}
			if err := txn.Set(usageKey(x.ID), enc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, lease.Verdict{}, fmt.Errorf("charge %s: %w", b.name, err)
	}
	return got, v, nil
}

// fitAll charges n whole or refuses (reserve).
func fitAll(chain []*lease.Lease, n int64, b budget) func([]meter) (int64, lease.Verdict) {
	return func(ms []meter) (int64, lease.Verdict) {
		for i, x := range chain {
			if v, over := overBudget(x, *b.used(&ms[i]), n, b); over {
				return 0, v
			}
		}
		return n, lease.Verdict{Decision: lease.Allow}
	}
}

// fitUpTo charges what is left, at most n (reserveUpTo); the verdict's
// rule names the lease that bounded it.
func fitUpTo(chain []*lease.Lease, n int64, b budget) func([]meter) (int64, lease.Verdict) {
	return func(ms []meter) (int64, lease.Verdict) {
		got, rule := upTo(chain, n, b, func(i int) int64 { return *b.used(&ms[i]) })
		return got, lease.Verdict{Decision: lease.Allow, Rule: rule}
	}
}

// refundShared gives back n units of b to every lease of the chain.
// A refund that cannot be written leaves the lease charged: the safe side.
func (s *Leases) refundShared(ctx context.Context, chain []*lease.Lease, n int64, b budget) {
	_, _, err := s.chargeShared(ctx, chain, b, func([]meter) (int64, lease.Verdict) {
		return -n, lease.Verdict{Decision: lease.Allow}
	})
	if err != nil {
		s.log.Warn("refunding a lease charge", "lease", chain[0].ID, "budget", b.name, "n", n, "err", err)
	}
}
