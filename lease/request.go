package lease

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentnas/nas/glob"
)

// Request asks for a lease.
type Request struct {
	Repo, Branch   string
	ForkedFrom     string // the branch Branch was forked from, if it was
	Run            string // empty: a new run
	Role           string
	Principal      string
	OnBehalfOf     string
	Purpose        string
	View           []Rule
	TTL            time.Duration // 0: DefaultTTL (capped by the parent)
	Budgets        Budgets       // zero fields: unlimited (or the parent's remaining)
	SensitivityMax string
	Egress         bool
	RequiresGate   []string
	Parent         *Lease // the lease minting a child, nil for the owner
	// WebIdentity is who assumed the role with a web identity token.
	WebIdentity *WebIdentity
}

// Gated actions: what requires_gate may name. "merge" sends every
// proposal of the lease to a person, "delete" every proposal that deletes
// a key; "share" is accepted for the specification's lease.json (a lease
// cannot share today: grants are the owner's).
var Gated = []string{"merge", "delete", "share"}

// Build validates r and returns the lease it asks for, issued at now,
// without its ID, access key and credentials (the store assigns them). A
// child is checked against its parent (never wider in paths, actions,
// expiry, budgets, branch, sensitivity or egress); parentUsed is what the
// parent has consumed, so a child's budgets never exceed what is left.
func (r Request) Build(now time.Time, parentUsed Usage) (*Lease, error) {
	askedTTL := r.TTL != 0
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if r.TTL < 0 || r.TTL > MaxTTL {
		return nil, fmt.Errorf("ttl %s: must be positive and at most %s: %w", r.TTL, MaxTTL, ErrInvalid)
	}
	view, err := CleanView(r.View)
	if err != nil {
		return nil, err
	}
	if err := r.Budgets.Validate(); err != nil {
		return nil, err
	}
	if r.SensitivityMax == "" {
		r.SensitivityMax = "private"
	}
	if !slices.Contains(Sensitivities, r.SensitivityMax) {
		return nil, fmt.Errorf("sensitivity %q (want %v): %w", r.SensitivityMax, Sensitivities, ErrInvalid)
	}
	gates, err := cleanGates(r.RequiresGate)
	if err != nil {
		return nil, err
	}
	if r.Run == "" && r.Parent != nil {
		r.Run = r.Parent.Run // a child works for its parent's run
	}
	if r.Run == "" {
		r.Run = NewRunID()
	}
	l := &Lease{
		Run: r.Run, Role: r.Role, Principal: r.Principal, OnBehalfOf: r.OnBehalfOf,
		Purpose: r.Purpose, Repo: r.Repo, Branch: r.Branch, ForkedFrom: r.ForkedFrom, View: view, SensitivityMax: r.SensitivityMax,
		Egress: r.Egress, RequiresGate: gates, Budgets: r.Budgets, IssuedAt: now,
		ExpiresAt: now.Add(r.TTL), WebIdentity: r.WebIdentity,
	}
	if p := r.Parent; p != nil {
		if err := narrow(p, parentUsed, l, now); err != nil {
			return nil, err
		}
		if askedTTL && now.Add(r.TTL).After(p.ExpiresAt) {
			return nil, fmt.Errorf("%w: ttl %s outlives the parent, which expires at %s (in %s)",
				ErrWider, r.TTL, p.ExpiresAt.Format(time.RFC3339), p.ExpiresAt.Sub(now))
		}
	}
	l.summarize()
	return l, nil
}

// Validate refuses negative budgets (zero means unlimited).
func (b Budgets) Validate() error {
	if b.BytesRead < 0 || b.BytesWritten < 0 || b.Requests < 0 {
		return fmt.Errorf("budgets must not be negative (0 means no limit): %w", ErrInvalid)
	}
	return nil
}

func cleanGates(gs []string) ([]string, error) {
	out := []string{}
	for _, g := range gs {
		g = strings.ToLower(strings.TrimSpace(g))
		if !slices.Contains(Gated, g) {
			return nil, fmt.Errorf("requires_gate %q (want some of %v): %w", g, Gated, ErrInvalid)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out, nil
}

// CleanView checks a view's rules and puts their globs and actions in
// canonical form.
func CleanView(rules []Rule) ([]Rule, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("a lease needs at least one path: %w", ErrInvalid)
	}
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		p := glob.Clean(r.Path)
		if p == "" {
			return nil, fmt.Errorf("empty path glob (use ** for everything): %w", ErrInvalid)
		}
		if len(r.Actions) == 0 {
			return nil, fmt.Errorf("path %q has no actions: %w", r.Path, ErrInvalid)
		}
		for _, a := range r.Actions {
			if !slices.Contains(Actions, a) {
				return nil, fmt.Errorf("action %q: %w", a, ErrInvalid)
			}
		}
		out = append(out, Rule{Path: p, Actions: NormActions(r.Actions)})
	}
	return out, nil
}

// narrow checks that child asks for nothing its parent lacks, and caps
// what the child left open (expiry, budgets) at the parent's. A child
// works on the parent's branch, or on a fork PARENT/NAME of it made for
// the child (ForkedFrom the parent's branch), which holds nothing the
// parent's branch did not. An expiry the
// child asked for beyond the parent's is refused by Build.
func narrow(p *Lease, used Usage, c *Lease, now time.Time) error {
	wider := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrWider, fmt.Sprintf(format, a...))
	}
	if p.Revoked {
		return fmt.Errorf("parent lease %s: %w", p.ID, ErrRevoked)
	}
	if !now.Before(p.ExpiresAt) {
		return fmt.Errorf("parent lease %s: %w", p.ID, ErrExpired)
	}
	if c.Repo != p.Repo {
		return wider("repository %s is not the parent's %s", c.Repo, p.Repo)
	}
	forked := c.Branch != p.Branch && c.ForkedFrom == p.Branch && strings.HasPrefix(c.Branch, p.Branch+"/")
	if c.Branch != p.Branch && !forked {
		return wider("branch %s is neither the parent's %s nor a fork of it", c.Branch, p.Branch)
	}
	for _, r := range c.View {
		for _, a := range r.Actions {
			ok := false
			for _, pr := range p.View {
				if slices.Contains(pr.Actions, a) && glob.Covers(pr.Path, r.Path) {
					ok = true
					break
				}
			}
			if !ok {
				return wider("%s on %q is not granted by the parent", a, r.Path)
			}
		}
	}
	if c.ExpiresAt.After(p.ExpiresAt) {
		c.ExpiresAt = p.ExpiresAt
	}
	for _, b := range []struct {
		name         string
		parent, used int64
		child        *int64
	}{
		{"bytes_read", p.Budgets.BytesRead, used.BytesRead, &c.Budgets.BytesRead},
		{"bytes_written", p.Budgets.BytesWritten, used.BytesWritten, &c.Budgets.BytesWritten},
		{"requests", p.Budgets.Requests, used.Requests, &c.Budgets.Requests},
	} {
		if b.parent == 0 {
			continue
		}
		left := max(b.parent-b.used, 0)
		if *b.child == 0 {
			*b.child = left
			if left == 0 {
				return wider("the parent's %s budget is spent", b.name)
			}
		} else if *b.child > left {
			return wider("%s budget %d exceeds the parent's remaining %d", b.name, *b.child, left)
		}
	}
	if slices.Index(Sensitivities, c.SensitivityMax) > slices.Index(Sensitivities, p.SensitivityMax) {
		return wider("sensitivity %s exceeds the parent's %s", c.SensitivityMax, p.SensitivityMax)
	}
	if c.Egress && !p.Egress {
		return wider("egress is not allowed to the parent")
	}
	for _, g := range p.RequiresGate {
		if !slices.Contains(c.RequiresGate, g) {
			c.RequiresGate = append(c.RequiresGate, g)
		}
	}
	slices.Sort(c.RequiresGate)
	pid := p.ID
	c.Parent = &pid
	if !forked {
		// A child on the parent's branch proposes where the parent does;
		// one on a fork keeps the parent's branch, where its work goes back.
		c.ForkedFrom = p.ForkedFrom
	}
	// Provenance and the run are the parent's, whatever was asked.
	c.Role, c.Run, c.Principal, c.OnBehalfOf, c.WebIdentity = p.Role, p.Run, p.Principal, p.OnBehalfOf, p.WebIdentity
	return nil
}

// NewID returns a fresh identifier with the given prefix ("lse_", "sgt_").
func NewID(prefix string) string {
	b := make([]byte, 10)
	rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// NewRunID returns a fresh run identifier ("run_…").
func NewRunID() string { return NewID("run_") }
