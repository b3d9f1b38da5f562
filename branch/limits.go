package branch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Limits bound a branch: a time to live and quotas on what it holds.
// Zero values mean no limit.
type Limits struct {
	// ExpiresAt is when the branch is recycled: from then on it does not
	// exist for reads and writes, and Expire deletes it so its unique data
	// becomes garbage.
	ExpiresAt time.Time
	// QuotaBytes bounds the sum of the sizes of the branch's current
	// objects (staged and committed); QuotaObjects bounds their number.
	QuotaBytes, QuotaObjects int64
}

// LimitsUpdate changes some of a branch's limits; nil fields stay as they
// are, and a zero value removes that limit.
type LimitsUpdate struct {
	ExpiresAt                *time.Time
	QuotaBytes, QuotaObjects *int64
}

// Usage is what a branch's current objects add up to.
type Usage struct {
	Bytes, Objects int64
}

// limited reports whether the branch has a quota.
func (br *branchRecord) limited() bool { return br.QuotaBytes > 0 || br.QuotaObjects > 0 }

// expired reports whether the branch's time to live has run out.
func (br *branchRecord) expired(now time.Time) bool {
	return br.ExpiresAt != 0 && now.UnixNano() >= br.ExpiresAt
}

func (br *branchRecord) limits() Limits {
	l := Limits{QuotaBytes: br.QuotaBytes, QuotaObjects: br.QuotaObjects}
	if br.ExpiresAt != 0 {
		l.ExpiresAt = time.Unix(0, br.ExpiresAt).UTC()
	}
	return l
}

// checkLimits refuses limits that make no sense for a branch.
func checkLimits(rr *repoRecord, br *branchRecord, l Limits, now time.Time) error {
	if l.QuotaBytes < 0 || l.QuotaObjects < 0 {
		return fmt.Errorf("quotas must not be negative: %w", ErrInvalid)
	}
	if l.ExpiresAt.IsZero() {
		return nil
	}
	if !l.ExpiresAt.After(now) {
		return fmt.Errorf("expiry %s is not in the future: %w", l.ExpiresAt.Format(time.RFC3339), ErrInvalid)
	}
	if br.Name == rr.DefaultBranch {
		return fmt.Errorf("%s/%s is the default branch: it cannot expire: %w", rr.Name, br.Name, ErrInvalid)
	}
	if br.Protected {
		return fmt.Errorf("%s/%s is protected: it cannot expire: %w", rr.Name, br.Name, ErrInvalid)
	}
	return nil
}

// SetLimits changes a branch's time to live and quotas. The default
// branch and protected branches cannot be given a time to live. Lowering a
// quota below what the branch holds is allowed: from then on only writes
// that shrink the branch succeed.
func (s *Service) SetLimits(ctx context.Context, repo, name string, u LimitsUpdate) (*Branch, error) {
	var out *Branch
	var rrID, brID uint64
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		br, err := s.branch(txn, rr, name)
		if err != nil {
			return err
		}
		now := time.Now()
		if br.expired(now) {
			return fmt.Errorf("%s/%s expired: %w", repo, name, ErrNoSuchBranch)
		}
		l := br.limits()
		if u.ExpiresAt != nil {
			l.ExpiresAt = *u.ExpiresAt
		}
		if u.QuotaBytes != nil {
			l.QuotaBytes = *u.QuotaBytes
		}
		if u.QuotaObjects != nil {
			l.QuotaObjects = *u.QuotaObjects
		}
		if err := checkLimits(rr, br, l, now); err != nil {
			return err
		}
		br.setLimits(l)
		rrID, brID = rr.ID, br.ID
		out = br.public(repo)
		return txn.Set(branchKey(rr.ID, name), br.encode())
	})
	if err == nil {
		s.forgetUsage(rrID, brID)
	}
	return out, err
}

func (br *branchRecord) setLimits(l Limits) {
	br.ExpiresAt = 0
	if !l.ExpiresAt.IsZero() {
		br.ExpiresAt = l.ExpiresAt.UnixNano()
	}
	br.QuotaBytes, br.QuotaObjects = l.QuotaBytes, l.QuotaObjects
}

// Usage returns what a branch's current objects add up to (staged changes
// included). It reads the whole branch the first time it is asked about a
// branch after a restart.
func (s *Service) Usage(ctx context.Context, repo, name string) (Usage, error) {
	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		v, err = s.openView(ctx, r, repo, name)
		return err
	})
	if err != nil {
		return Usage{}, err
	}
	e := s.usage.entry(v.rr.ID, v.br.ID)
	if s.sharedQuotas {
		e = &usageEntry{} // other gateways write too: count now
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.fillUsage(ctx, v, e); err != nil {
		return Usage{}, err
	}
	return e.u, nil
}

// ExpiredBranch names a branch Expire recycled.
type ExpiredBranch struct {
	Repo, Name string
	ExpiredAt  time.Time
}

// Expire deletes every branch whose time to live ran out before now, with
// its staging area, and calls done for each (to record it). Commits only
// an expired branch referenced become garbage for the next collection.
func (s *Service) Expire(ctx context.Context, now time.Time, done func(ExpiredBranch)) (int, error) {
	repos, err := s.ListRepos(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range repos {
		var due []string
		err := s.db.View(ctx, func(rd kv.Reader) error {
			rr, err := s.repo(rd, r.Name)
			if err != nil {
				return err
			}
			return rd.Scan(kv.Prefix(branchPrefix(rr.ID)), func(_, v []byte) error {
				br, err := decodeBranch(v)
				if err != nil {
					return err
				}
				if br.expired(now) {
					due = append(due, br.Name)
				}
				return nil
			})
		})
		if err != nil {
			return n, err
		}
		for _, name := range due {
			at, err := s.deleteExpired(ctx, r.Name, name, now)
			if err != nil {
				return n, fmt.Errorf("recycle %s/%s: %w", r.Name, name, err)
			}
			if at.IsZero() {
				continue // its limits changed meanwhile
			}
			n++
			if done != nil {
				done(ExpiredBranch{Repo: r.Name, Name: name, ExpiredAt: at})
			}
		}
	}
	return n, nil
}

// deleteExpired deletes a branch if it is still expired, and returns when
// it expired (zero if it was not deleted).
func (s *Service) deleteExpired(ctx context.Context, repo, name string, now time.Time) (time.Time, error) {
	var at time.Time
	var rrID, brID uint64
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		at = time.Time{}
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		br, err := s.branch(txn, rr, name)
		if err != nil {
			return err
		}
		if !br.expired(now) || br.Protected || name == rr.DefaultBranch {
			return nil
		}
		at, rrID, brID = time.Unix(0, br.ExpiresAt).UTC(), rr.ID, br.ID
		return txn.Delete(branchKey(rr.ID, name))
	})
	if err != nil || at.IsZero() {
		return time.Time{}, err
	}
	s.forgetUsage(rrID, brID)
	return at, s.clearStaging(ctx, rrID, brID)
}

// usageTracker keeps, per branch with a quota, what its current objects
// add up to: counted once by reading the branch, then kept up to date by
// every write as it commits.
type usageTracker struct {
	mu sync.Mutex
	m  map[[2]uint64]*usageEntry
}

type usageEntry struct {
	mu    sync.Mutex
	ready bool
	u     Usage
}

func (t *usageTracker) entry(repo, branch uint64) *usageEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[[2]uint64]*usageEntry{}
	}
	k := [2]uint64{repo, branch}
	e := t.m[k]
	if e == nil {
		e = &usageEntry{}
		t.m[k] = e
	}
	return e
}

// forget drops what is known of a branch, after a change that did not go
// through a quota transaction (a merge, a restore, an import) or a change
// of its limits; the next write counts again.
func (t *usageTracker) forget(repo, branch uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, [2]uint64{repo, branch})
}

// fillUsage counts the branch's objects if e does not know them yet. The
// caller holds e.mu.
func (s *Service) fillUsage(ctx context.Context, v *view, e *usageEntry) error {
	return s.countUsage(ctx, s.db, v, e)
}

// countUsage counts the branch's objects through db if e does not know
// them yet.
func (s *Service) countUsage(ctx context.Context, db viewer, v *view, e *usageEntry) error {
	if e.ready {
		return nil
	}
	m := s.newMerged(ctx, db, v)
	m.seek("")
	var u Usage
	for {
		_, val, ok := m.peek()
		if !ok {
			break
		}
		size, err := entrySize(val)
		if err != nil {
			return err
		}
		u.Bytes += size
		u.Objects++
		m.next()
	}
	if err := m.err(); err != nil {
		return fmt.Errorf("count branch usage: %w", err)
	}
	e.u, e.ready = u, true
	return nil
}

func entrySize(b []byte) (int64, error) {
	if b == nil {
		return 0, nil
	}
	e, err := manifest.DecodeEntry(b)
	if err != nil {
		return 0, err
	}
	return e.Size, nil
}

// quotaTxn accounts one write transaction's changes against its branch's
// quota. Changes are reserved as they are checked, so concurrent writers
// cannot together pass the quota; release gives the reservation back when
// the transaction fails or is retried. A nil quotaTxn (a branch without a
// quota) accepts everything.
type quotaTxn struct {
	e    *usageEntry
	lim  Limits
	name string
	d    Usage // reserved by this transaction
	// shared, with several gateways (SetSharedQuotas), keeps the usage
	// in the store, read and written by the write's own transaction.
	shared *sharedQuota
}

// sharedQuota is a branch's usage as the store holds it, in one write
// transaction.
type sharedQuota struct {
	txn kv.Txn
	key []byte
}

// quotaFor starts accounting a write on v; nil when the branch has no
// quota.
func (s *Service) quotaFor(ctx context.Context, txn kv.Txn, v *view) (*quotaTxn, error) {
	if !v.br.limited() {
		return nil, nil
	}
	if s.sharedQuotas {
		return s.sharedQuotaFor(ctx, txn, v)
	}
	e := s.usage.entry(v.rr.ID, v.br.ID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.fillUsage(ctx, v, e); err != nil {
		return nil, err
	}
	return &quotaTxn{e: e, lim: v.br.limits(), name: v.rr.Name + "/" + v.br.Name}, nil
}

// change checks replacing old with new (encoded entries; nil for absent)
// against the quota and reserves it. A change that does not grow the
// branch is always allowed, so an over-quota branch can still be cleaned.
func (q *quotaTxn) change(old, new []byte) error {
	if q == nil {
		return nil
	}
	oldSize, err := entrySize(old)
	if err != nil {
		return err
	}
	newSize, err := entrySize(new)
	if err != nil {
		return err
	}
	var d Usage
	d.Bytes = newSize - oldSize
	if new != nil {
		d.Objects++
	}
	if old != nil {
		d.Objects--
	}
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	u := q.e.u
	if err := q.fits(u, d); err != nil {
		return err
	}
	q.e.u.Bytes += d.Bytes
	q.e.u.Objects += d.Objects
	q.d.Bytes += d.Bytes
	q.d.Objects += d.Objects
	if q.shared != nil {
		return q.shared.store(q.e.u)
	}
	return nil
}

// fits checks that d more on top of u stays within the quota.
func (q *quotaTxn) fits(u, d Usage) error {
	if q.lim.QuotaBytes > 0 && d.Bytes > 0 && u.Bytes+d.Bytes > q.lim.QuotaBytes {
		return fmt.Errorf("%s holds %d bytes; %d more would exceed its quota of %d bytes: %w",
			q.name, u.Bytes, d.Bytes, q.lim.QuotaBytes, ErrQuotaExceeded)
	}
	if q.lim.QuotaObjects > 0 && d.Objects > 0 && u.Objects+d.Objects > q.lim.QuotaObjects {
		return fmt.Errorf("%s holds %d objects, its quota: %w", q.name, u.Objects, ErrQuotaExceeded)
	}
	return nil
}

// release gives back what the transaction reserved.
func (q *quotaTxn) release() {
	if q == nil || q.shared != nil { // the store's copy goes with the transaction
		return
	}
	q.e.mu.Lock()
	q.e.u.Bytes -= q.d.Bytes
	q.e.u.Objects -= q.d.Objects
	q.e.mu.Unlock()
	q.d = Usage{}
}
