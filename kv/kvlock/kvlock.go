// Package kvlock is a mutual-exclusion lock held in a kv store, for the
// work that gateways sharing one metadata store must do one at a time
// (a branch's commit, merge or restore).
//
// A lock is one record, PREFIX + name, holding its holder's random token
// and an expiry. Lock takes it in a transaction when it is free or its
// expiry has passed, and a goroutine renews it every TTL/3 until the
// unlock function is called, which deletes it if the token is still
// ours. A gateway killed while holding a lock therefore blocks the others
// for at most TTL. Within one process, callers of one name queue on a
// local mutex first, so only one of them polls the store.
//
// The lock is advisory, not a fence: a holder paused past its TTL (a
// stopped process, a lost database) can find its lock taken. The work it
// guards must still be safe then; for branches it is, because a head
// moves only by compare-and-set. Expiry is judged by each gateway's own
// clock, so clocks must agree to well within TTL (NTP does).
package kvlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentnas/nas/kv"
)

// DefaultTTL is how long a lock outlives its holder's last renewal.
const DefaultTTL = 30 * time.Second

// Options tunes Locks; the zero value is the default.
type Options struct {
	TTL time.Duration    // default DefaultTTL
	Now func() time.Time // default time.Now
	Log *slog.Logger
	// MaxPoll bounds the wait between two tries of a held lock (default
	// 250 ms); a long-held lock that waiters may take over late (a duty)
	// wants a longer one, to spare the store.
	MaxPoll time.Duration
}

// Locks hands out the locks under one key prefix of a store.
type Locks struct {
	db     kv.DB
	prefix string
	o      Options

	mu    sync.Mutex
	local map[string]*localLock // name -> the process's queue for it
}

// localLock is a context-aware mutex with a count of its users.
type localLock struct {
	ch    chan struct{}
	users int
}

// record is a held lock as stored.
type record struct {
	Token   string `json:"token"`
	Expires int64  `json:"expires_unix_nano"`
}

// New returns the locks under prefix in db.
func New(db kv.DB, prefix string, o Options) *Locks {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxPoll <= 0 {
		o.MaxPoll = 250 * time.Millisecond
	}
	return &Locks{db: db, prefix: prefix, o: o, local: map[string]*localLock{}}
}

// Lock blocks until it holds the lock name or ctx ends, and returns the
// function that releases it.
func (l *Locks) Lock(ctx context.Context, name string) (unlock func(), err error) {
	ll := l.enter(name)
	select {
	case ll.ch <- struct{}{}:
	case <-ctx.Done():
		l.leave(name, ll)
		return nil, ctx.Err()
	}
	token := newToken()
	if err := l.acquire(ctx, name, token); err != nil {
		<-ll.ch
		l.leave(name, ll)
		return nil, err
	}
	return l.hold(name, token, ll), nil
}

// hold starts renewing the lock token has taken and returns its release.
func (l *Locks) hold(name, token string, ll *localLock) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go l.renew(name, token, stop, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			l.release(name, token)
			<-ll.ch
			l.leave(name, ll)
		})
	}
}

// enter returns the local queue of name, counting the caller as a user.
func (l *Locks) enter(name string) *localLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	ll, ok := l.local[name]
	if !ok {
		ll = &localLock{ch: make(chan struct{}, 1)}
		l.local[name] = ll
	}
	ll.users++
	return ll
}

// leave drops a user of name's queue, and the queue with its last user.
func (l *Locks) leave(name string, ll *localLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ll.users--; ll.users == 0 {
		delete(l.local, name)
	}
}

// acquire polls the store, with backoff, until the lock is free or
// expired and this call has written its token.
func (l *Locks) acquire(ctx context.Context, name, token string) error {
	wait := 5 * time.Millisecond
	for {
		got, err := l.try(ctx, name, token)
		if err != nil {
			return fmt.Errorf("lock %s: %w", name, err)
		}
		if got {
			return nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("lock %s: %w", name, ctx.Err())
		}
		wait = min(wait*2, l.o.MaxPoll)
	}
}

// try takes the lock if it is free, expired or already token's (a
// renewal), in one transaction.
func (l *Locks) try(ctx context.Context, name, token string) (bool, error) {
	return l.tryIf(ctx, name, token, nil)
}

// tryIf is try with a condition run in the same transaction (nil: none).
func (l *Locks) tryIf(ctx context.Context, name, token string, cond func(kv.Reader) error) (bool, error) {
	key := []byte(l.prefix + name)
	got := false
	err := l.db.Update(ctx, func(txn kv.Txn) error {
		got = false
		if cond != nil {
			if err := cond(txn); err != nil {
				return err
			}
		}
		now := l.o.Now()
		b, err := txn.Get(key)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		default:
			var r record
			if json.Unmarshal(b, &r) == nil && r.Token != token && now.UnixNano() < r.Expires {
				return nil // held by another
			}
		}
		enc, err := json.Marshal(record{Token: token, Expires: now.Add(l.o.TTL).UnixNano()})
		if err != nil {
			return err
		}
		got = true
		return txn.Set(key, enc)
	})
	return got, err
}

// renew extends the lock every TTL/3 until stop is closed.
func (l *Locks) renew(name, token string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(l.o.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.o.TTL/3)
		got, err := l.try(ctx, name, token)
		cancel()
		switch {
		case err != nil:
			l.o.Log.Warn("renewing a lock", "lock", name, "err", err)
		case !got:
			l.o.Log.Error("a lock expired while held: another holder took it", "lock", name)
		}
	}
}

// release deletes the lock if it is still token's.
func (l *Locks) release(name, token string) {
	key := []byte(l.prefix + name)
	ctx, cancel := context.WithTimeout(context.Background(), l.o.TTL)
	defer cancel()
	err := l.db.Update(ctx, func(txn kv.Txn) error {
		b, err := txn.Get(key)
		if err != nil {
			return err
		}
		var r record
		if json.Unmarshal(b, &r) != nil || r.Token != token {
			return nil
		}
		return txn.Delete(key)
	})
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		// It expires on its own.
		l.o.Log.Warn("releasing a lock", "lock", name, "err", err)
	}
}

// newToken is a random holder token.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ErrHeld is returned by TryIf when another holder has the lock.
var ErrHeld = errors.New("kvlock: held by another")

// TryIf takes the lock name without waiting, in a transaction that also
// runs cond: a cond error is returned and nothing taken, so the lock is
// taken only in a state cond accepts (no other gateway live, for a
// collection). A held lock is ErrHeld.
func (l *Locks) TryIf(ctx context.Context, name string, cond func(kv.Reader) error) (unlock func(), err error) {
	ll := l.enter(name)
	select {
	case ll.ch <- struct{}{}:
	default:
		l.leave(name, ll)
		return nil, fmt.Errorf("lock %s: %w", name, ErrHeld)
	}
	token := newToken()
	got, err := l.tryIf(ctx, name, token, cond)
	if err == nil && !got {
		err = fmt.Errorf("lock %s: %w", name, ErrHeld)
	}
	if err != nil {
		<-ll.ch
		l.leave(name, ll)
		return nil, err
	}
	return l.hold(name, token, ll), nil
}

// Held reports, inside a transaction or snapshot, whether someone holds
// the lock name now: a transaction that must not run beside its holder
// reads it (and so conflicts with a TryIf that takes it).
func (l *Locks) Held(r kv.Reader, name string) (bool, error) {
	b, err := r.Get([]byte(l.prefix + name))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	var rec record
	if json.Unmarshal(b, &rec) != nil {
		return false, nil
	}
	return l.o.Now().UnixNano() < rec.Expires, nil
}

// Remaining reports, inside a transaction or snapshot, how long the lock
// name stays held without a renewal (0: it is free or expired). A holder
// that must stop before others see its lock lapse checks it against a
// margin for the clocks.
func (l *Locks) Remaining(r kv.Reader, name string) (time.Duration, error) {
	b, err := r.Get([]byte(l.prefix + name))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	var rec record
	if json.Unmarshal(b, &rec) != nil {
		return 0, nil
	}
	return max(0, time.Duration(rec.Expires-l.o.Now().UnixNano())), nil
}

// TTL returns how long a lock outlives its holder's last renewal.
func (l *Locks) TTL() time.Duration { return l.o.TTL }
