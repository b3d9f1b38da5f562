package lease

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/kv"
)

// Store keeps leases, roles and usage in kv and answers authorization
// questions. It is safe for concurrent use.
type Store struct {
	db   kv.DB
	keys *keys
	now  func() time.Time

	mu    sync.Mutex        // guards usage
	usage map[string]*meter // lease ID -> consumption, written behind to kv
}

type meter struct {
	Usage
	loaded bool
	dirty  bool
}

// Open loads (or creates) the lease keys and returns a Store.
func Open(ctx context.Context, db kv.DB) (*Store, error) {
	k, err := loadKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, keys: k, now: time.Now, usage: map[string]*meter{}}, nil
}

// SetClock replaces the clock (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

func leaseKey(id string) []byte  { return []byte("LS/" + id) }
func accessKey(ak string) []byte { return []byte("LK/" + ak) }
func childKey(parent, child string) []byte {
	return []byte("LC/" + parent + "/" + child)
}
func usageKey(id string) []byte            { return []byte("LU/" + id) }
func runKey(repo, role, run string) []byte { return []byte("LR/" + repo + "/" + role + "/" + run) }
func roleKey(name string) []byte           { return []byte("RO/" + name) }

func newID(prefix string) string {
	b := make([]byte, 10)
	rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// NewRunID returns a fresh run identifier ("run_…").
func NewRunID() string { return newID("run_") }

// Request asks for a lease.
type Request struct {
	Repo, Branch   string
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
}

// Issue validates and stores a lease and returns it with its credentials.
func (s *Store) Issue(ctx context.Context, r Request) (*Lease, Credentials, error) {
	now := s.now().UTC().Truncate(time.Second)
	askedTTL := r.TTL != 0
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if r.TTL < 0 || r.TTL > MaxTTL {
		return nil, Credentials{}, fmt.Errorf("ttl %s: must be at most %s: %w", r.TTL, MaxTTL, ErrInvalid)
	}
	view, err := cleanView(r.View)
	if err != nil {
		return nil, Credentials{}, err
	}
	if r.SensitivityMax == "" {
		r.SensitivityMax = "private"
	}
	if !slices.Contains(Sensitivities, r.SensitivityMax) {
		return nil, Credentials{}, fmt.Errorf("sensitivity %q (want %v): %w", r.SensitivityMax, Sensitivities, ErrInvalid)
	}
	if r.Run == "" && r.Parent != nil {
		r.Run = r.Parent.Run // a child works for its parent's run
	}
	if r.Run == "" {
		r.Run = NewRunID()
	}
	l := &Lease{
		ID: newID("lse_"), Run: r.Run, Role: r.Role, Principal: r.Principal, OnBehalfOf: r.OnBehalfOf,
		Purpose: r.Purpose, Repo: r.Repo, Branch: r.Branch, View: view, SensitivityMax: r.SensitivityMax,
		Egress: r.Egress, RequiresGate: r.RequiresGate, Budgets: r.Budgets, IssuedAt: now,
		ExpiresAt: now.Add(r.TTL), AccessKeyID: newAccessKeyID(),
	}
	if p := r.Parent; p != nil {
		if err := s.narrow(ctx, p, l, now); err != nil {
			return nil, Credentials{}, err
		}
		if askedTTL && now.Add(r.TTL).After(p.ExpiresAt) {
			return nil, Credentials{}, fmt.Errorf("%w: ttl %s outlives the parent, which expires at %s (in %s)",
				ErrWider, r.TTL, p.ExpiresAt.Format(time.RFC3339), p.ExpiresAt.Sub(now))
		}
	}
	l.summarize()
	b, err := json.Marshal(l)
	if err != nil {
		return nil, Credentials{}, err
	}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		if l.Parent != nil {
			// Reading the parent inside the transaction makes a concurrent
			// revocation conflict with this issue: no child escapes.
			pb, err := txn.Get(leaseKey(*l.Parent))
			if err != nil {
				return fmt.Errorf("parent lease: %w", ErrNotFound)
			}
			var p Lease
			if err := json.Unmarshal(pb, &p); err != nil {
				return err
			}
			if p.Revoked {
				return fmt.Errorf("parent lease %s: %w", p.ID, ErrRevoked)
			}
			if err := txn.Set(childKey(p.ID, l.ID), nil); err != nil {
				return err
			}
		}
		if err := txn.Set(leaseKey(l.ID), b); err != nil {
			return err
		}
		if err := txn.Set(accessKey(l.AccessKeyID), []byte(l.ID)); err != nil {
			return err
		}
		rb, _ := json.Marshal(runRecord{Branch: l.Branch, Lease: l.ID})
		return txn.Set(runKey(l.Repo, l.Role, l.Run), rb)
	})
	if err != nil {
		return nil, Credentials{}, err
	}
	tok, err := s.keys.token(l)
	if err != nil {
		return nil, Credentials{}, err
	}
	return l, Credentials{AccessKeyID: l.AccessKeyID, SecretAccessKey: s.keys.secretFor(l.AccessKeyID), SessionToken: tok, Expiration: l.ExpiresAt}, nil
}

// runRecord remembers a run's branch and latest lease.
type runRecord struct {
	Branch string `json:"branch"`
	Lease  string `json:"lease"`
}

// RunBranch returns the branch of an existing run, or "" if the run is new.
func (s *Store) RunBranch(ctx context.Context, repo, role, run string) (string, error) {
	var rr runRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(runKey(repo, role, run))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &rr)
	})
	if errors.Is(err, kv.ErrNotFound) {
		return "", nil
	}
	return rr.Branch, err
}

func cleanView(rules []Rule) ([]Rule, error) {
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
		out = append(out, Rule{Path: p, Actions: normActions(r.Actions)})
	}
	return out, nil
}

// narrow checks that child asks for nothing its parent lacks, and caps
// what the child left open (expiry, budgets) at the parent's. An expiry the
// child asked for beyond the parent's is refused by Issue.
func (s *Store) narrow(ctx context.Context, p, c *Lease, now time.Time) error {
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
	if c.Branch != p.Branch {
		return wider("branch %s is not the parent's %s", c.Branch, p.Branch)
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
	used := s.usageOf(ctx, p)
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
	pid := p.ID
	c.Parent = &pid
	// Provenance and the run are the parent's, whatever was asked.
	c.Role, c.Run, c.Principal, c.OnBehalfOf = p.Role, p.Run, p.Principal, p.OnBehalfOf
	return nil
}

// Get returns a lease's live state.
func (s *Store) Get(ctx context.Context, id string) (*Lease, error) {
	var l Lease
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(leaseKey(id))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &l)
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("lease %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// Resolve authenticates temporary credentials: it verifies the session
// token for the access key, loads the lease's live state and returns it
// with the key's secret. A revoked lease answers ErrRevoked, an expired
// one ErrExpired, a forged or foreign token ErrBadToken.
func (s *Store) Resolve(ctx context.Context, ak, token string) (*Lease, string, error) {
	if token == "" {
		return nil, "", fmt.Errorf("temporary credentials need their session token: %w", ErrBadToken)
	}
	id, err := s.keys.parse(ak, token)
	if err != nil {
		return nil, "", err
	}
	l, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, "", fmt.Errorf("lease %s: %w", id, ErrBadToken)
	}
	if err != nil {
		return nil, "", err
	}
	if l.AccessKeyID != ak {
		return nil, "", ErrBadToken
	}
	if l.Revoked {
		return nil, "", fmt.Errorf("lease %s: %w", l.ID, ErrRevoked)
	}
	if !s.now().Before(l.ExpiresAt) {
		return nil, "", fmt.Errorf("lease %s: %w", l.ID, ErrExpired)
	}
	return l, s.keys.secretFor(ak), nil
}

// IsTemporary reports whether an access key has the temporary form.
func IsTemporary(ak string) bool { return strings.HasPrefix(ak, "ASIA") }

// ListFilter selects leases.
type ListFilter struct {
	Repo, Run, Role string
	Active          bool // only unexpired, unrevoked
}

// List returns leases matching f, newest first.
func (s *Store) List(ctx context.Context, f ListFilter) ([]*Lease, error) {
	var out []*Lease
	now := s.now()
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte("LS/")), func(_, v []byte) error {
			var l Lease
			if err := json.Unmarshal(v, &l); err != nil {
				return err
			}
			if f.Repo != "" && l.Repo != f.Repo || f.Run != "" && l.Run != f.Run || f.Role != "" && l.Role != f.Role {
				return nil
			}
			if f.Active && (l.Revoked || !now.Before(l.ExpiresAt)) {
				return nil
			}
			out = append(out, &l)
			return nil
		})
	})
	slices.SortFunc(out, func(a, b *Lease) int { return b.IssuedAt.Compare(a.IssuedAt) })
	return out, err
}

// Revoke revokes a lease and every descendant in one transaction and
// returns the IDs it revoked.
func (s *Store) Revoke(ctx context.Context, id string) ([]string, error) {
	var revoked []string
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		revoked = revoked[:0]
		queue := []string{id}
		now := s.now().UTC()
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			b, err := txn.Get(leaseKey(cur))
			if errors.Is(err, kv.ErrNotFound) {
				if cur == id {
					return fmt.Errorf("lease %s: %w", id, ErrNotFound)
				}
				continue
			}
			if err != nil {
				return err
			}
			var l Lease
			if err := json.Unmarshal(b, &l); err != nil {
				return err
			}
			if !l.Revoked {
				l.Revoked, l.RevokedAt = true, now
				nb, _ := json.Marshal(&l)
				if err := txn.Set(leaseKey(cur), nb); err != nil {
					return err
				}
				revoked = append(revoked, cur)
			}
			err = txn.Scan(kv.Prefix(childKey(cur, "")), func(k, _ []byte) error {
				queue = append(queue, string(k[len(childKey(cur, "")):]))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return revoked, err
}

// AddGrant shares one more path into a lease's view until expires.
func (s *Store) AddGrant(ctx context.Context, id string, g Grant) (*Grant, error) {
	g.Path = glob.Clean(g.Path)
	if g.Path == "" || len(g.Actions) == 0 {
		return nil, fmt.Errorf("a grant needs a path and actions: %w", ErrInvalid)
	}
	g.Actions = normActions(g.Actions)
	g.ID = newID("sgt_")
	err := s.update(ctx, id, func(l *Lease) error {
		if g.ExpiresAt.After(l.ExpiresAt) {
			g.ExpiresAt = l.ExpiresAt
		}
		l.Grants = append(l.Grants, g)
		return nil
	})
	return &g, err
}

// ConsumeGrant marks a single-use grant used, atomically: of concurrent
// requests relying on it exactly one succeeds, the others get ErrNotFound
// (the path left the lease's view). Call it before acting.
func (s *Store) ConsumeGrant(ctx context.Context, leaseID, grantID string) (*Grant, error) {
	var used *Grant
	now := s.now()
	err := s.update(ctx, leaseID, func(cur *Lease) error {
		used = nil
		for i := range cur.Grants {
			g := &cur.Grants[i]
			if g.ID == grantID && g.live(now) {
				g.Used = true
				cp := *g
				used = &cp
				return nil
			}
		}
		return fmt.Errorf("grant %s: %w", grantID, ErrNotFound)
	})
	return used, err
}

func (s *Store) update(ctx context.Context, id string, fn func(*Lease) error) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		b, err := txn.Get(leaseKey(id))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("lease %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		var l Lease
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if err := fn(&l); err != nil {
			return err
		}
		nb, _ := json.Marshal(&l)
		return txn.Set(leaseKey(id), nb)
	})
}
