package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
)

// Wider authority: a lease may ask for more than it holds (more paths or
// actions, for a while), never get it by asking. The request waits at a
// gate like a proposal, with a card that says exactly what would be
// granted; a person's approval adds those rules to the lease as grants
// (share grants, expiring with the request's deadline or the lease),
// bound to the card's digest; a lease revoked or expired by then makes the
// approval void. Nothing is granted on timeout or denial.

// OpWiden is the card action of a request for wider authority.
const OpWiden = "lease.widen"

// MaxPendingWidenings bounds the requests for wider authority one lease
// may have waiting at once.
const MaxPendingWidenings = 4

// Widening is what a lease asked for: Rules until Until, and why.
type Widening struct {
	Lease  string       `json:"lease"`
	Rules  []lease.Rule `json:"rules"`
	Until  time.Time    `json:"until"`
	Grants []string     `json:"grants,omitempty"` // what an approval granted
}

// WidenRequest is a lease's request for wider authority.
type WidenRequest struct {
	Lease  *lease.Lease
	Rules  []lease.Rule
	TTL    time.Duration // how long the grants would last; 0 is what is left of the lease
	Reason string
	Taint  label.Taint // the asking run's session taint, for the card
}

// RequestWidening puts a lease's request for wider authority at a gate.
// Asking again for exactly the same while it waits answers the same gate.
func (s *Service) RequestWidening(ctx context.Context, r WidenRequest) (*Gate, error) {
	l := r.Lease
	if s.leases == nil || l == nil {
		return nil, fmt.Errorf("no lease to widen: %w", lease.ErrInvalid)
	}
	rules, err := lease.CleanView(r.Rules)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	if !now.Before(l.ExpiresAt) || l.Revoked {
		return nil, fmt.Errorf("lease %s has ended: %w", l.ID, lease.ErrExpired)
	}
	until := l.ExpiresAt
	if r.TTL < 0 {
		return nil, fmt.Errorf("ttl must not be negative: %w", lease.ErrInvalid)
	}
	if r.TTL > 0 && now.Add(r.TTL).Before(until) {
		until = now.Add(r.TTL).Truncate(time.Second)
	}
	w := &Widening{Lease: l.ID, Rules: rules, Until: until}
	d := widenDigest(l.Repo, l.Branch, w, r.Reason)
	pending, err := s.pendingWidenings(ctx, l.ID)
	if err != nil {
		return nil, err
	}
	for i := range pending {
		if pending[i].Card.Action.DiffSHA256 == d {
			return &pending[i], nil
		}
	}
	if len(pending) >= MaxPendingWidenings {
		return nil, fmt.Errorf("lease %s already waits on %d requests for wider authority: %w", l.ID, len(pending), lease.ErrWider)
	}
	g := &Gate{ID: newID("gte_"), Repo: l.Repo, Status: "pending", Created: now, Widen: w}
	g.Card = s.widenCard(l, g, d, r.Reason)
	g.Card.Risk.SessionTaint, g.Card.Risk.Egress = r.Taint.List(), l.Egress
	if err := s.widenEvent(ctx, record.KindGateRequested, l, g, record.Decision{Effect: record.EffectAllow, Rule: "wider authority waits for a person"}); err != nil {
		return nil, err
	}
	if err := s.saveGate(ctx, g); err != nil {
		return nil, err
	}
	return g, nil
}

// widenDigest binds a card to the lease, its branch, exactly the rules
// and deadline asked for, and the reason shown.
func widenDigest(repo, br string, w *Widening, reason string) string {
	b, _ := json.Marshal(struct {
		Repo, Branch, Lease, Reason string
		Rules                       []lease.Rule
		Until                       time.Time
	}{repo, br, w.Lease, reason, w.Rules, w.Until})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (s *Service) widenCard(l *lease.Lease, g *Gate, digest, reason string) Card {
	var c Card
	c.GateID, c.Run, c.Lease = g.ID, l.Run, l.ID
	c.Action.Op, c.Action.From, c.Action.DiffSHA256 = OpWiden, l.Branch, digest
	c.Action.Requested, c.Action.Until = g.Widen.Rules, g.Widen.Until
	c.Why = reason
	c.Risk.SessionTaint, c.Risk.Sources = []string{}, []string{}
	c.Options, c.Default = []string{"approve", "deny"}, "deny"
	c.ExpiresAt = g.Created.Add(s.Timeout)
	return c
}

// pendingWidenings returns the requests of lease id that still wait.
func (s *Service) pendingWidenings(ctx context.Context, id string) ([]Gate, error) {
	gs, err := s.ListGates(ctx, "pending")
	if err != nil {
		return nil, err
	}
	var out []Gate
	for _, g := range gs {
		if g.Widen != nil && g.Widen.Lease == id {
			out = append(out, g)
		}
	}
	return out, nil
}

// decideWidening decides a request for wider authority (the caller holds
// s.decide): an approval grants the rules asked for, unless the lease
// has ended since, which makes it void.
func (s *Service) decideWidening(ctx context.Context, g *Gate, by string, approve bool, reason string) (*Gate, error) {
	g.DecidedAt, g.DecidedBy, g.Reason = s.now().UTC(), by, reason
	l, err := s.leases.Get(ctx, g.Widen.Lease)
	if err != nil {
		return nil, err
	}
	effect := record.EffectDeny
	switch {
	case !approve:
		g.Status = "denied"
	case l.Revoked || !g.DecidedAt.Before(l.ExpiresAt) || !g.DecidedAt.Before(g.Widen.Until):
		g.Status, g.Reason = "void", "the lease ended or the request's deadline passed before the approval"
	default:
		g.Status, effect = "approved", record.EffectAllow
	}
	if err := s.widenEvent(ctx, record.KindGateDecided, l, g, record.Decision{Effect: effect, Rule: "decided by " + by, Reason: g.Status}); err != nil {
		return nil, err
	}
	if g.Status == "approved" {
		if err := s.grant(ctx, l, g); err != nil {
			return nil, err
		}
	}
	if err := s.saveGate(ctx, g); err != nil {
		return nil, err
	}
	if g.Status == "void" {
		return g, ErrVoid
	}
	return g, nil
}

// grant adds an approved request's rules to its lease, one grant a rule.
func (s *Service) grant(ctx context.Context, l *lease.Lease, g *Gate) error {
	for _, r := range g.Widen.Rules {
		gr, err := s.leases.AddGrant(ctx, l.ID, lease.Grant{Path: r.Path, Actions: r.Actions, ExpiresAt: g.Widen.Until})
		if err != nil {
			return err
		}
		g.Widen.Grants = append(g.Widen.Grants, gr.ID)
		e := record.Event{Kind: record.KindShareGranted, Run: l.Run, Lease: l.ID, Principal: g.DecidedBy, Repo: l.Repo, Branch: l.Branch,
			Subject: record.Subject{Path: r.Path}, Decision: record.Decision{Effect: record.EffectAllow, Rule: "gate " + g.ID},
			Details: map[string]string{"grant": gr.ID, "gate": g.ID}}
		if s.rec != nil {
			if _, err := s.rec.Append(ctx, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) widenEvent(ctx context.Context, kind record.Kind, l *lease.Lease, g *Gate, d record.Decision) error {
	if s.rec == nil {
		return nil
	}
	e := record.Event{Kind: kind, Run: l.Run, Lease: l.ID, Principal: l.Principal, Repo: l.Repo, Branch: l.Branch, Decision: d,
		Details: map[string]string{"gate": g.ID, "op": OpWiden, "diff_sha256": g.Card.Action.DiffSHA256}}
	_, err := s.rec.Append(ctx, e)
	return err
}

// saveGate stores a gate that has no proposal.
func (s *Service) saveGate(ctx context.Context, g *Gate) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		gb, _ := json.Marshal(gateRecord{Gate: *g})
		return txn.Set([]byte(keyspace.Gate+g.ID), gb)
	})
}
