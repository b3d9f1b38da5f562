package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
)

// A request to forget: an agent may ask that files be forgotten, never
// forget them (the specification's AN-09). The request waits at a gate
// with a card naming the paths and the subject; the owner's approval
// runs the forget (the control API does, then calls ApproveForget), and
// denial or timeout forgets nothing.

// OpForget is the card action of a request to forget.
const OpForget = "forget"

// MaxPendingForgets bounds the requests to forget one lease may have
// waiting at once.
const MaxPendingForgets = 4

// ErrForgetByAPI is an approval of a request to forget that did not come
// with the forget it approves.
var ErrForgetByAPI = errors.New("a request to forget is approved with ApproveForget, which runs the forget")

// ForgetAsk is what a lease asked to forget; ForgetID names the forget an
// approval ran.
type ForgetAsk struct {
	Lease    string   `json:"lease"`
	Paths    []string `json:"paths"`
	Subject  string   `json:"subject,omitempty"`
	ForgetID string   `json:"forget_id,omitempty"`
}

// ForgetRequest is a lease's request to forget.
type ForgetRequest struct {
	Lease   *lease.Lease
	Paths   []string
	Subject string
	Reason  string
	Taint   label.Taint
}

// RequestForget puts a lease's request to forget at a gate; asking again
// for the same while it waits answers the same gate.
func (s *Service) RequestForget(ctx context.Context, r ForgetRequest) (*Gate, error) {
	l := r.Lease
	if l == nil || len(r.Paths) == 0 || slices.Contains(r.Paths, "") {
		return nil, fmt.Errorf("a request to forget needs a lease and paths: %w", lease.ErrInvalid)
	}
	ask := &ForgetAsk{Lease: l.ID, Paths: r.Paths, Subject: r.Subject}
	b, _ := json.Marshal(struct {
		Repo, Lease, Reason string
		Ask                 *ForgetAsk
	}{l.Repo, l.ID, r.Reason, ask})
	sum := sha256.Sum256(b)
	d := hex.EncodeToString(sum[:])
	gs, err := s.ListGates(ctx, "pending")
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range gs {
		if f := gs[i].Forget; f != nil && f.Lease == l.ID {
			if gs[i].Card.Action.DiffSHA256 == d {
				return &gs[i], nil
			}
			n++
		}
	}
	if n >= MaxPendingForgets {
		return nil, fmt.Errorf("lease %s already waits on %d requests to forget: %w", l.ID, n, lease.ErrWider)
	}
	g := &Gate{ID: newID("gtf_"), Repo: l.Repo, Status: "pending", Created: s.now().UTC(), Forget: ask}
	g.Card = s.forgetCard(l, g, d, r)
	if err := s.forgetEvent(ctx, record.KindGateRequested, g, record.Decision{Effect: record.EffectAllow, Rule: "a request to forget waits for a person"}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// forgetCard is the card of a request to forget.
func (s *Service) forgetCard(l *lease.Lease, g *Gate, digest string, r ForgetRequest) Card {
	var c Card
	c.GateID, c.Run, c.Lease, c.Why = g.ID, l.Run, l.ID, r.Reason
	c.Action.Op, c.Action.From, c.Action.DiffSHA256 = OpForget, l.Branch, digest
	c.Action.Paths, c.Action.Subject = r.Paths, r.Subject
	c.Risk.SessionTaint, c.Risk.Sources, c.Risk.Destructive = r.Taint.List(), []string{}, true
	c.Options, c.Default = []string{"approve", "deny"}, "deny"
	c.ExpiresAt = g.Created.Add(s.Timeout)
	return c
}

// ApproveForget marks a pending request to forget approved, naming the
// forget the approver ran.
func (s *Service) ApproveForget(ctx context.Context, id, by, reason, forgetID string) (*Gate, error) {
	unlock, err := s.lockDecisions(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, err := s.GetGate(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.Forget == nil || g.Status != "pending" {
		return g, fmt.Errorf("gate %s is not a pending request to forget: %w", id, ErrDecided)
	}
	g.Status, g.DecidedAt, g.DecidedBy, g.Reason, g.Forget.ForgetID = "approved", s.now().UTC(), by, reason, forgetID
	if err := s.forgetEvent(ctx, record.KindGateDecided, g, record.Decision{Effect: record.EffectAllow, Rule: "decided by " + by, Reason: "forget " + forgetID}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// decideForget decides a request to forget by Decide: only a denial (the
// caller holds s.decide).
func (s *Service) decideForget(ctx context.Context, g *Gate, by string, approve bool, reason string) (*Gate, error) {
	if approve {
		return g, ErrForgetByAPI
	}
	g.Status, g.DecidedAt, g.DecidedBy, g.Reason = "denied", s.now().UTC(), by, reason
	if err := s.forgetEvent(ctx, record.KindGateDecided, g, record.Decision{Effect: record.EffectDeny, Rule: "decided by " + by, Reason: "denied"}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// forgetEvent records a request to forget's gate.
func (s *Service) forgetEvent(ctx context.Context, kind record.Kind, g *Gate, d record.Decision) error {
	if s.rec == nil {
		return nil
	}
	e := record.Event{Kind: kind, Run: g.Card.Run, Lease: g.Forget.Lease, Repo: g.Repo, Decision: d,
		Details: map[string]string{"gate": g.ID, "op": OpForget, "diff_sha256": g.Card.Action.DiffSHA256}}
	_, err := s.rec.Append(ctx, e)
	return err
}
