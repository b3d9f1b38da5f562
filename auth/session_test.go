package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentnas/nas/lease"
)

// TestOwnerSession: a session resolves as the owner's until it expires,
// dies when the owner's keys change, cannot mint another, and a lease's
// token never resolves as a session (nor a session's as a lease).
func TestOwnerSession(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	o := Owner{AccessKey: "AKIAOWNER", SecretKey: "owner-secret"}
	a := New(Config{Owner: o, Leases: s})
	owner := &Principal{AccessKey: o.AccessKey}
	ses, cred, err := a.OwnerSession(ctx, owner, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	l, got, secret, err := s.ResolveTemporary(ctx, o, cred.AccessKeyID, cred.SessionToken)
	if err != nil || l != nil || got == nil || got.ID != ses.ID || secret != cred.SecretAccessKey {
		t.Fatalf("resolve: %v %v %v", l, got, err)
	}
	if _, _, err := s.Resolve(ctx, cred.AccessKeyID, cred.SessionToken); !errors.Is(err, lease.ErrBadToken) {
		t.Errorf("a session token resolved as a lease: %v", err)
	}
	if _, _, _, err := s.ResolveTemporary(ctx, Owner{AccessKey: o.AccessKey, SecretKey: "rotated"}, cred.AccessKeyID, cred.SessionToken); !errors.Is(err, lease.ErrRevoked) {
		t.Errorf("rotated owner keys: %v", err)
	}
	if _, _, _, err := s.ResolveTemporary(ctx, o, "ASIAOTHERKEY", cred.SessionToken); !errors.Is(err, lease.ErrBadToken) {
		t.Errorf("another access key: %v", err)
	}
	if _, _, err := a.OwnerSession(ctx, &Principal{AccessKey: cred.AccessKeyID, Session: ses.ID}, time.Hour); !errors.Is(err, ErrDenied) {
		t.Errorf("a session minted a session: %v", err)
	}
	for _, ttl := range []time.Duration{MinSessionTTL - time.Second, MaxSessionTTL + time.Second} {
		if _, _, err := a.OwnerSession(ctx, owner, ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
	}
	s.SetClock(func() time.Time { return time.Now().Add(time.Hour) })
	if _, _, _, err := s.ResolveTemporary(ctx, o, cred.AccessKeyID, cred.SessionToken); !errors.Is(err, lease.ErrExpired) {
		t.Errorf("after expiry: %v", err)
	}
	// The next issue sweeps the expired session's record.
	if _, _, err := a.OwnerSession(ctx, owner, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.resolveSession(ctx, ses.ID, cred.AccessKeyID, s.fingerprint(o)); !errors.Is(err, lease.ErrBadToken) {
		t.Errorf("the expired session's record is still there: %v", err)
	}
	_, lc, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "main", Role: "r", View: rw("**")})
	if err != nil {
		t.Fatal(err)
	}
	if l, ses, _, err := s.ResolveTemporary(ctx, o, lc.AccessKeyID, lc.SessionToken); err != nil || l == nil || ses != nil {
		t.Errorf("a lease resolved as %v %v %v", l, ses, err)
	}
}

// TestRationer: a burst, then one per interval.
func TestRationer(t *testing.T) {
	r := newRationer(2, 10*time.Second)
	now := time.Unix(1000, 0)
	for i, want := range []bool{true, true, false} {
		if r.take(now) != want {
			t.Fatalf("take %d of a burst of 2: %v", i, !want)
		}
	}
	if r.take(now.Add(5 * time.Second)) {
		t.Fatal("half an interval later")
	}
	later := now.Add(11 * time.Second)
	if !r.take(later) {
		t.Fatal("one per interval")
	}
	if r.take(later) {
		t.Fatal("only one per interval")
	}
}
