package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// Leases keeps leases, roles, grants and usage in kv. It is safe for
// concurrent use.
type Leases struct {
	db    kv.DB
	keys  *keys
	clock atomic.Pointer[func() time.Time] // SetClock may run while requests do

	mu    sync.Mutex        // guards usage
	usage map[string]*meter // lease ID -> consumption, written behind to kv

	// shared charges in kv directly (SetShared); usage then stays empty.
	shared bool
	log    *slog.Logger

	decoded decodeCache // leases decoded from the bytes read last time
	tokens  tokenCache  // session tokens already verified
}

type meter struct {
	lease.Usage
	loaded bool
	dirty  bool
}

// OpenLeases loads (or creates) the lease keys and returns the store.
func OpenLeases(ctx context.Context, db kv.DB) (*Leases, error) {
	k, err := loadKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	s := &Leases{db: db, keys: k, usage: map[string]*meter{}, log: slog.New(slog.DiscardHandler)}
	s.SetClock(time.Now)
	return s, nil
}

// SetClock replaces the clock (tests); it is safe while requests run.
func (s *Leases) SetClock(now func() time.Time) { s.clock.Store(&now) }

// now reads the clock.
func (s *Leases) now() time.Time { return (*s.clock.Load())() }

func leaseKey(id string) []byte  { return []byte(keyspace.Lease + id) }
func accessKey(ak string) []byte { return []byte(keyspace.AccessKey + ak) }
func childKey(parent, child string) []byte {
	return []byte(keyspace.LeaseChild + parent + "/" + child)
}
func usageKey(id string) []byte { return []byte(keyspace.LeaseUsage + id) }
func runKey(repo, role, run string) []byte {
	return []byte(keyspace.LeaseRun + repo + "/" + role + "/" + run)
}
func roleKey(name string) []byte { return []byte(keyspace.Role + name) }

// Issue validates and stores a lease and returns it with its credentials.
func (s *Leases) Issue(ctx context.Context, r lease.Request) (*lease.Lease, Credentials, error) {
	now := s.now().UTC().Truncate(time.Second)
	var used lease.Usage
	if r.Parent != nil {
		used = s.usageOf(ctx, r.Parent)
	}
	l, err := r.Build(now, used)
	if err != nil {
		return nil, Credentials{}, err
	}
	l.ID, l.AccessKeyID = lease.NewID("lse_"), newAccessKeyID()
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
				return fmt.Errorf("parent lease: %w", lease.ErrNotFound)
			}
			var p lease.Lease
			if err := json.Unmarshal(pb, &p); err != nil {
				return err
			}
			if p.Revoked {
				return fmt.Errorf("parent lease %s: %w", p.ID, lease.ErrRevoked)
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
		return s.setRun(txn, l)
	})
	if err != nil {
		return nil, Credentials{}, err
	}
	tok, err := s.keys.token(l.ID, l.AccessKeyID, l.IssuedAt, l.ExpiresAt)
	if err != nil {
		return nil, Credentials{}, err
	}
	return l, Credentials{AccessKeyID: l.AccessKeyID, SecretAccessKey: s.keys.secretFor(l.AccessKeyID), SessionToken: tok, Expiration: l.ExpiresAt}, nil
}

// runRecord remembers a run's branch and latest lease, and the web
// identity that started it ("" when the owner did).
type runRecord struct {
	Branch   string `json:"branch"`
	Lease    string `json:"lease"`
	Identity string `json:"identity,omitempty"`
}

// setRun points the run of l at l, inside the transaction that stores
// l. A run a web identity started is continued only by that identity
// (or by the owner, who keeps it the identity's); a web identity never
// continues a run the owner or another identity started, so two
// workloads trusted by one role cannot share a session name's branch.
func (s *Leases) setRun(txn kv.Txn, l *lease.Lease) error {
	key := runKey(l.Repo, l.Role, l.Run)
	rr := runRecord{Branch: l.Branch, Lease: l.ID, Identity: l.WebIdentity.String()}
	b, err := txn.Get(key)
	switch {
	case errors.Is(err, kv.ErrNotFound):
	case err != nil:
		return err
	default:
		var old runRecord
		if err := json.Unmarshal(b, &old); err != nil {
			return err
		}
		if l.Parent != nil && old.Branch != l.Branch {
			return nil // a child on a fork of the run's branch does not move the run
		}
		if l.Parent == nil && l.WebIdentity != nil && old.Identity != rr.Identity {
			return fmt.Errorf("run %s of role %s: %w", l.Run, l.Role, ErrRunTaken)
		}
		if rr.Identity == "" {
			rr.Identity = old.Identity
		}
	}
	rb, _ := json.Marshal(rr)
	return txn.Set(key, rb)
}

// RunBranch returns the branch of an existing run, or "" if the run is new.
func (s *Leases) RunBranch(ctx context.Context, repo, role, run string) (string, error) {
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

// Get returns a lease's live state.
//
// The stored record is read every time (revocation and grants take effect
// at once); only its decoding is skipped when the bytes are the ones
// decoded last time.
func (s *Leases) Get(ctx context.Context, id string) (*lease.Lease, error) {
	var l *lease.Lease
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(leaseKey(id))
		if err != nil {
			return err
		}
		l, err = s.decoded.decode(id, b)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("lease %s: %w", id, lease.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// decodeCache keeps the last decoding of each lease record, keyed by the
// exact bytes, so an unchanged lease is not decoded again on every
// request. A hit is a copy: callers may change the lease they get.
type decodeCache struct {
	mu sync.Mutex // guards m
	m  map[string]decoded
}

type decoded struct {
	raw []byte
	l   lease.Lease
}

// maxCached bounds the leases (and tokens) kept decoded.
const maxCached = 4096

func (c *decodeCache) decode(id string, b []byte) (*lease.Lease, error) {
	c.mu.Lock()
	d, ok := c.m[id]
	c.mu.Unlock()
	if ok && bytes.Equal(d.raw, b) {
		l := d.l
		return &l, nil
	}
	var l lease.Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]decoded{}
	}
	c.m[id] = decoded{raw: bytes.Clone(b), l: l}
	c.mu.Unlock()
	out := l
	return &out, nil
}

// tokenCache remembers session tokens whose signature verified, with the
// lease they name; the lease's live state is still read every time.
type tokenCache struct {
	mu sync.Mutex // guards m
	m  map[[2]string]string
}

func (c *tokenCache) get(ak, token string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.m[[2]string{ak, token}]
	return id, ok
}

func (c *tokenCache) put(ak, token, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[[2]string]string{}
	}
	c.m[[2]string{ak, token}] = id
}

// Resolve authenticates temporary credentials: it verifies the session
// token for the access key, loads the lease's live state and returns it
// with the key's secret. A revoked lease answers lease.ErrRevoked, an expired
// one lease.ErrExpired, a forged or foreign token lease.ErrBadToken.
func (s *Leases) Resolve(ctx context.Context, ak, token string) (*lease.Lease, string, error) {
	id, err := s.tokenID(ak, token)
	if err != nil {
		return nil, "", err
	}
	if IsSessionID(id) {
		return nil, "", fmt.Errorf("owner session %s: %w", id, lease.ErrBadToken)
	}
	return s.resolveLease(ctx, id, ak)
}

// resolveLease loads lease id, whose token verified for ak, and checks
// that it is live.
func (s *Leases) resolveLease(ctx context.Context, id, ak string) (*lease.Lease, string, error) {
	l, err := s.Get(ctx, id)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, "", fmt.Errorf("lease %s: %w", id, lease.ErrBadToken)
	}
	if err != nil {
		return nil, "", err
	}
	if l.AccessKeyID != ak {
		return nil, "", lease.ErrBadToken
	}
	if l.Revoked {
		return nil, "", fmt.Errorf("lease %s: %w", l.ID, lease.ErrRevoked)
	}
	if !s.now().Before(l.ExpiresAt) {
		return nil, "", fmt.Errorf("lease %s: %w", l.ID, lease.ErrExpired)
	}
	return l, s.keys.secretFor(ak), nil
}

// tokenID verifies a session token for an access key (once; then from
// the cache) and returns the lease or owner session it names.
func (s *Leases) tokenID(ak, token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("temporary credentials need their session token: %w", lease.ErrBadToken)
	}
	if id, ok := s.tokens.get(ak, token); ok {
		return id, nil
	}
	id, err := s.keys.parse(ak, token)
	if err != nil {
		return "", err
	}
	s.tokens.put(ak, token, id)
	return id, nil
}

// IsTemporary reports whether an access key has the temporary form.
func IsTemporary(ak string) bool { return strings.HasPrefix(ak, "ASIA") }

// ListFilter selects leases.
type ListFilter struct {
	Repo, Run, Role string
	Active          bool // only unexpired, unrevoked
}

// List returns leases matching f, newest first.
func (s *Leases) List(ctx context.Context, f ListFilter) ([]*lease.Lease, error) {
	var out []*lease.Lease
	now := s.now()
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.Lease)), func(_, v []byte) error {
			var l lease.Lease
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
	slices.SortFunc(out, func(a, b *lease.Lease) int { return b.IssuedAt.Compare(a.IssuedAt) })
	return out, err
}

// Revoke revokes a lease and every descendant in one transaction and
// returns the IDs it revoked.
func (s *Leases) Revoke(ctx context.Context, id string) ([]string, error) {
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
					return fmt.Errorf("lease %s: %w", id, lease.ErrNotFound)
				}
				continue
			}
			if err != nil {
				return err
			}
			var l lease.Lease
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
func (s *Leases) AddGrant(ctx context.Context, id string, g lease.Grant) (*lease.Grant, error) {
	g.Path = glob.Clean(g.Path)
	if g.Path == "" || len(g.Actions) == 0 {
		return nil, fmt.Errorf("a grant needs a path and actions: %w", lease.ErrInvalid)
	}
	g.Actions = lease.NormActions(g.Actions)
	g.ID = lease.NewID("sgt_")
	err := s.update(ctx, id, func(l *lease.Lease) error {
		if g.ExpiresAt.After(l.ExpiresAt) {
			g.ExpiresAt = l.ExpiresAt
		}
		l.Grants = append(l.Grants, g)
		return nil
	})
	return &g, err
}

// RevokeGrant ends a grant of a lease at once, used or not.
func (s *Leases) RevokeGrant(ctx context.Context, leaseID, grantID string) (*lease.Grant, error) {
	var out *lease.Grant
	err := s.update(ctx, leaseID, func(cur *lease.Lease) error {
		for i := range cur.Grants {
			if g := &cur.Grants[i]; g.ID == grantID {
				g.Revoked = true
				cp := *g
				out = &cp
				return nil
			}
		}
		return fmt.Errorf("grant %s of lease %s: %w", grantID, leaseID, lease.ErrNotFound)
	})
	return out, err
}

// ConsumeGrant marks a single-use grant used, atomically: of concurrent
// requests relying on it exactly one succeeds, the others get lease.ErrNotFound
// (the path left the lease's view). Call it before acting.
func (s *Leases) ConsumeGrant(ctx context.Context, leaseID, grantID string) (*lease.Grant, error) {
	var used *lease.Grant
	now := s.now()
	err := s.update(ctx, leaseID, func(cur *lease.Lease) error {
		used = nil
		for i := range cur.Grants {
			g := &cur.Grants[i]
			if g.ID == grantID && g.Live(now) {
				g.Used = true
				cp := *g
				used = &cp
				return nil
			}
		}
		return fmt.Errorf("grant %s: %w", grantID, lease.ErrNotFound)
	})
	return used, err
}

func (s *Leases) update(ctx context.Context, id string, fn func(*lease.Lease) error) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		b, err := txn.Get(leaseKey(id))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("lease %s: %w", id, lease.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var l lease.Lease
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
