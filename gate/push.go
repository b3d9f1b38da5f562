package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
)

// A request to push: a run may ask that its changes be written back to an
// attached source, never write there itself. The request waits at a gate
// whose card lists the plan (each key, added, modified or deleted) and is
// marked egress; the owner's approval runs the push of exactly that plan
// (the control API does, then calls ApprovePush), a plan that changed
// meanwhile voids it, and denial or timeout writes nothing.

// OpPush is the card action of a request to push.
const OpPush = "source.push"

// MaxPendingPushes bounds the requests to push one lease may have
// waiting at once.
const MaxPendingPushes = 4

// ErrPushByAPI is an approval of a request to push that did not come
// with the push it approves.
var ErrPushByAPI = errors.New("a request to push is approved with ApprovePush, which runs the push")

// PushAsk is what a lease asked to push; the outcome fields are the
// push an approval ran.
type PushAsk struct {
	Lease  string   `json:"lease"`
	Source string   `json:"source"`
	From   string   `json:"from"`
	Paths  []string `json:"paths,omitempty"`
	Digest string   `json:"digest"` // the plan's (source.PushReport.Digest)

	Written   int    `json:"written,omitempty"`
	Conflicts int    `json:"conflicts,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// PushRequest is a lease's request to push the plan Changes (digest
// Digest) of its branch to attachment Source.
type PushRequest struct {
	Lease   *lease.Lease
	Source  string
	Paths   []string
	Digest  string
	Changes []ChangeLine
	Reason  string
	Taint   label.Taint
}

// RequestPush puts a lease's request to push at a gate; asking again for
// the same plan while it waits answers the same gate.
func (s *Service) RequestPush(ctx context.Context, r PushRequest) (*Gate, error) {
	l := r.Lease
	if l == nil || r.Source == "" || r.Digest == "" || len(r.Changes) == 0 {
		return nil, fmt.Errorf("a request to push needs a lease, a source and a plan: %w", lease.ErrInvalid)
	}
	gs, err := s.ListGates(ctx, "pending")
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range gs {
		if p := gs[i].Push; p != nil && p.Lease == l.ID {
			if p.Digest == r.Digest && p.Source == r.Source {
				return &gs[i], nil
			}
			n++
		}
	}
	if n >= MaxPendingPushes {
		return nil, fmt.Errorf("lease %s already waits on %d requests to push: %w", l.ID, n, lease.ErrWider)
	}
	ask := &PushAsk{Lease: l.ID, Source: r.Source, From: l.Branch, Paths: slices.Clone(r.Paths), Digest: r.Digest}
	g := &Gate{ID: newID("gtp_"), Repo: l.Repo, Status: "pending", Created: s.now().UTC(), Push: ask}
	g.Card = s.pushCard(l, g, r)
	if err := s.pushEvent(ctx, record.KindGateRequested, g, record.Decision{Effect: record.EffectAllow, Rule: "a write back to a source waits for a person"}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// pushCard is the card of a request to push: the plan, as egress.
func (s *Service) pushCard(l *lease.Lease, g *Gate, r PushRequest) Card {
	var c Card
	c.GateID, c.Run, c.Lease, c.Why = g.ID, l.Run, l.ID, r.Reason
	c.Action.Op, c.Action.From, c.Action.Into, c.Action.DiffSHA256 = OpPush, l.Branch, r.Source, r.Digest
	c.Action.Paths, c.Action.Changes, c.Action.FilesChanged = r.Paths, r.Changes, len(r.Changes)
	c.Risk.SessionTaint, c.Risk.Sources = r.Taint.List(), []string{r.Source}
	c.Risk.Destructive, c.Risk.Egress = Destructive(r.Changes), true
	c.Options, c.Default = []string{"approve", "deny"}, "deny"
	c.ExpiresAt = g.Created.Add(s.Timeout)
	return c
}

// ApprovePush marks a pending request to push approved, with the push
// the approver ran.
func (s *Service) ApprovePush(ctx context.Context, id, by, reason string, done PushAsk) (*Gate, error) {
	return s.endPush(ctx, id, by, reason, "approved", func(p *PushAsk) {
		p.Written, p.Conflicts, p.Commit = done.Written, done.Conflicts, done.Commit
	})
}

// VoidPush ends a pending request to push whose plan changed before the
// approval could run it (why says how); nothing was written.
func (s *Service) VoidPush(ctx context.Context, id, by, why string) (*Gate, error) {
	return s.endPush(ctx, id, by, why, "void", nil)
}

// endPush gives a pending request to push its final status.
func (s *Service) endPush(ctx context.Context, id, by, reason, status string, fill func(*PushAsk)) (*Gate, error) {
	unlock, err := s.lockDecisions(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, err := s.GetGate(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.Push == nil || g.Status != "pending" {
		return g, fmt.Errorf("gate %s is not a pending request to push: %w", id, ErrDecided)
	}
	g.Status, g.DecidedAt, g.DecidedBy, g.Reason = status, s.now().UTC(), by, reason
	if fill != nil {
		fill(g.Push)
	}
	effect := record.EffectAllow
	if status != "approved" {
		effect = record.EffectDeny
	}
	if err := s.pushEvent(ctx, record.KindGateDecided, g, record.Decision{Effect: effect, Rule: "decided by " + by, Reason: status}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// decidePush decides a request to push by Decide: only a denial (the
// caller holds s.decide).
func (s *Service) decidePush(ctx context.Context, g *Gate, by string, approve bool, reason string) (*Gate, error) {
	if approve {
		return g, ErrPushByAPI
	}
	g.Status, g.DecidedAt, g.DecidedBy, g.Reason = "denied", s.now().UTC(), by, reason
	if err := s.pushEvent(ctx, record.KindGateDecided, g, record.Decision{Effect: record.EffectDeny, Rule: "decided by " + by, Reason: "denied"}); err != nil {
		return nil, err
	}
	return g, s.saveGate(ctx, g)
}

// pushEvent records a request to push's gate.
func (s *Service) pushEvent(ctx context.Context, kind record.Kind, g *Gate, d record.Decision) error {
	if s.rec == nil {
		return nil
	}
	e := record.Event{Kind: kind, Run: g.Card.Run, Lease: g.Push.Lease, Repo: g.Repo, Branch: g.Push.From, Decision: d,
		Details: map[string]string{"gate": g.ID, "op": OpPush, "source": g.Push.Source, "diff_sha256": g.Push.Digest}}
	_, err := s.rec.Append(ctx, e)
	return err
}
