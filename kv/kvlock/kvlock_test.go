package kvlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvlock"
)

func openDB(t *testing.T) kv.DB {
	t.Helper()
	db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMutualExclusion: two Locks over one store (two gateways) never
// let two holders of one name run at once, and every caller gets a turn.
func TestMutualExclusion(t *testing.T) {
	db := openDB(t)
	a := kvlock.New(db, "L/", kvlock.Options{})
	b := kvlock.New(db, "L/", kvlock.Options{})
	var inside, peak, turns atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			for range 5 {
				unlock, err := l.Lock(context.Background(), "repo\x00main")
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				peak.Store(max(peak.Load(), n))
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				turns.Add(1)
				unlock()
			}
		})
	}
	wg.Wait()
	if peak.Load() != 1 || turns.Load() != 40 {
		t.Fatalf("peak %d holders at once, %d turns (want 1, 40)", peak.Load(), turns.Load())
	}
}

// TestExpiry: a holder that stops renewing (a killed gateway) blocks
// the name for its TTL, then another takes it; a waiter gives up with
// its context.
func TestExpiry(t *testing.T) {
	db := openDB(t)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	dead := kvlock.New(db, "L/", kvlock.Options{TTL: time.Hour, Now: clock})
	live := kvlock.New(db, "L/", kvlock.Options{TTL: time.Hour, Now: clock})
	if _, err := dead.Lock(context.Background(), "x"); err != nil { // never unlocked
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := live.Lock(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a held lock was taken: %v", err)
	}
	if _, err := live.TryIf(context.Background(), "x", nil); !errors.Is(err, kvlock.ErrHeld) {
		t.Fatalf("TryIf on a held lock: %v", err)
	}
	now.Add(int64(2 * time.Hour))
	unlock, err := live.Lock(context.Background(), "x")
	if err != nil {
		t.Fatalf("an expired lock was not taken over: %v", err)
	}
	unlock()
}

// TestTryIf: the condition runs in the taking transaction and its error
// takes nothing; Held sees a taken lock.
func TestTryIf(t *testing.T) {
	db := openDB(t)
	l := kvlock.New(db, "L/", kvlock.Options{})
	no := errors.New("not now")
	if _, err := l.TryIf(context.Background(), "gc", func(kv.Reader) error { return no }); !errors.Is(err, no) {
		t.Fatalf("a failing condition: %v", err)
	}
	held := func() bool {
		var h bool
		if err := db.View(context.Background(), func(r kv.Reader) error {
			var err error
			h, err = l.Held(r, "gc")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if held() {
		t.Fatal("a refused TryIf left the lock held")
	}
	unlock, err := l.TryIf(context.Background(), "gc", func(kv.Reader) error { return nil })
	if err != nil || !held() {
		t.Fatalf("TryIf: %v, held %v", err, held())
	}
	unlock()
	unlock() // twice is harmless
	if held() {
		t.Fatal("released lock still held")
	}
}
