package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// Session is an owner session (STS GetSessionToken): temporary
// credentials that act as the owner until ExpiresAt. It holds no view,
// budget or run: a request signed with it is the owner's in every door.
// It ends at its expiry, or when the owner's keys change (Owner no longer
// matches), whichever comes first.
//
// Stored as JSON under OS/<id>, about 250 bytes.
type Session struct {
	ID          string    `json:"session_id"`
	AccessKeyID string    `json:"access_key_id"`
	Owner       string    `json:"owner"` // fingerprint of the owner keys that minted it
	IssuedAt    time.Time `json:"issued_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Limits of owner sessions, as AWS has them for GetSessionToken.
const (
	MinSessionTTL     = 15 * time.Minute
	DefaultSessionTTL = 12 * time.Hour
	MaxSessionTTL     = 36 * time.Hour
)

const sessionPrefix = "ses_"

// IsSessionID reports whether a token's ID names an owner session rather
// than a lease.
func IsSessionID(id string) bool { return strings.HasPrefix(id, sessionPrefix) }

func sessionKey(id string) []byte { return []byte(keyspace.OwnerSession + id) }

// OwnerSession mints owner session credentials for p (GetSessionToken)
// living ttl. Only the owner's long-lived keys may: a lease (refused and
// recorded, as every lease refusal) or an owner session itself is
// refused with ErrDenied, so a session can never outlive itself by
// minting another.
func (a *Authority) OwnerSession(ctx context.Context, p *Principal, ttl time.Duration) (*Session, Credentials, error) {
	switch {
	case p.Lease != nil:
		v := lease.Verdict{Decision: lease.Denied, Rule: "GetSessionToken is the owner's; a lease cannot call it"}
		return nil, Credentials{}, a.refuse(ctx, p, "sts:GetSessionToken", Target{}, v, ErrDenied)
	case p.Session != "":
		return nil, Credentials{}, fmt.Errorf("%w: GetSessionToken needs the owner's long-lived keys, not session credentials", ErrDenied)
	case a.leases == nil:
		return nil, Credentials{}, fmt.Errorf("%w: temporary credentials are not enabled on this gateway", ErrDenied)
	case ttl < MinSessionTTL || ttl > MaxSessionTTL:
		return nil, Credentials{}, fmt.Errorf("session duration %s: %s-%s: %w", ttl, MinSessionTTL, MaxSessionTTL, ErrInvalid)
	}
	return a.leases.issueSession(ctx, a.leases.fingerprint(a.owner), ttl)
}

// fingerprint identifies the owner's keys without revealing them: a
// session minted under other keys (the owner rotated them) is dead.
func (s *Leases) fingerprint(o Owner) string {
	m := hmac.New(sha256.New, s.keys.Secret)
	m.Write([]byte("owner-session\x00" + o.AccessKey + "\x00" + o.SecretKey))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// issueSession stores a new owner session and returns its credentials.
func (s *Leases) issueSession(ctx context.Context, owner string, ttl time.Duration) (*Session, Credentials, error) {
	now := s.now().UTC().Truncate(time.Second)
	ses := &Session{ID: lease.NewID(sessionPrefix), AccessKeyID: newAccessKeyID(), Owner: owner, IssuedAt: now, ExpiresAt: now.Add(ttl)}
	b, err := json.Marshal(ses)
	if err != nil {
		return nil, Credentials{}, err
	}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		if err := dropExpiredSessions(txn, s.now()); err != nil {
			return err
		}
		return txn.Set(sessionKey(ses.ID), b)
	})
	if err != nil {
		return nil, Credentials{}, fmt.Errorf("store owner session: %w", err)
	}
	tok, err := s.keys.token(ses.ID, ses.AccessKeyID, ses.IssuedAt, ses.ExpiresAt)
	if err != nil {
		return nil, Credentials{}, err
	}
	return ses, Credentials{AccessKeyID: ses.AccessKeyID, SecretAccessKey: s.keys.secretFor(ses.AccessKeyID),
		SessionToken: tok, Expiration: ses.ExpiresAt}, nil
}

// dropExpiredSessions deletes the records of sessions expired at now
// (as resolveSession judges them), so they do not accumulate: only the owner mints sessions, so there
// are few, and each issue sweeps them.
func dropExpiredSessions(txn kv.Txn, now time.Time) error {
	return dropWhere(txn, keyspace.OwnerSession, func(v []byte) bool {
		var old Session
		return json.Unmarshal(v, &old) == nil && !now.Before(old.ExpiresAt)
	})
}

// dropWhere deletes the records under prefix whose value dead says are
// dead (a sweep of sessions).
func dropWhere(txn kv.Txn, prefix string, dead func(v []byte) bool) error {
	var keys [][]byte
	err := txn.Scan(kv.Prefix([]byte(prefix)), func(k, v []byte) error {
		if dead(v) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// resolveSession authenticates owner session credentials: the token must
// name a live session of this access key minted under the owner keys
// whose fingerprint is owner. An expired session answers lease.ErrExpired,
// one of old owner keys lease.ErrRevoked, any other mismatch
// lease.ErrBadToken.
func (s *Leases) resolveSession(ctx context.Context, id, ak, owner string) (*Session, string, error) {
	var ses Session
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(sessionKey(id))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &ses)
	})
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return nil, "", fmt.Errorf("owner session %s: %w", id, lease.ErrBadToken)
	case err != nil:
		return nil, "", err
	case subtle.ConstantTimeCompare([]byte(ses.AccessKeyID), []byte(ak)) != 1:
		return nil, "", lease.ErrBadToken
	case subtle.ConstantTimeCompare([]byte(ses.Owner), []byte(owner)) != 1:
		return nil, "", fmt.Errorf("owner session %s: the owner's keys changed: %w", id, lease.ErrRevoked)
	case !s.now().Before(ses.ExpiresAt):
		return nil, "", fmt.Errorf("owner session %s: %w", id, lease.ErrExpired)
	}
	return &ses, s.keys.secretFor(ak), nil
}

// ResolveTemporary authenticates temporary credentials of either kind: a
// lease (Resolve) or an owner session. Exactly one of the two results is
// set on success.
func (s *Leases) ResolveTemporary(ctx context.Context, o Owner, ak, token string) (*lease.Lease, *Session, string, error) {
	id, err := s.tokenID(ak, token)
	if err != nil {
		return nil, nil, "", err
	}
	if IsSessionID(id) {
		ses, secret, err := s.resolveSession(ctx, id, ak, s.fingerprint(o))
		return nil, ses, secret, err
	}
	l, secret, err := s.resolveLease(ctx, id, ak)
	return l, nil, secret, err
}
