package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/sigv4"
)

// Web sessions are the control room's owner sign-in (/_nas/ui/). The
// owner signs in with the owner's access key and secret key (compared in
// constant time; no lease or temporary credential can sign in) and gets a
// session cookie, SessionCookie, that carries only a random token:
// "nasweb_" and 43 characters of unpadded base64url, 256 bits from
// crypto/rand. The gateway keeps the token's SHA-256 (under WS/), never
// the token, so a copy of the store signs nobody in; every gateway of a
// deployment shares the store, so a session works on any of them and
// survives a restart.
//
// A session ends WebSessionTTL after sign-in, after WebSessionIdle without
// a request, at sign-out, or when the owner's keys change (it is bound to
// their fingerprint). It acts as the owner on the control API only: the
// S3 and STS doors refuse a request that carries the cookie, and so does
// the control API when the request also carries an Authorization header.
//
// Every cookie request must prove it comes from the control room's own
// page: its CSRF token (x-nas-csrf, an HMAC of the session under the
// gateway's secret key, compared in constant time) and a same-origin
// Origin or Sec-Fetch-Site header. The page learns the token at sign-in
// and from WebSession.

// SessionCookie is the name of the control room's session cookie.
const SessionCookie = "nas_session"

// CSRFHeader carries a cookie request's CSRF token.
const CSRFHeader = "x-nas-csrf"

// Limits of web sessions.
const (
	WebSessionTTL  = 12 * time.Hour
	WebSessionIdle = 2 * time.Hour
	// webSeenEvery is how stale a session's last-seen time may get before
	// a request writes it again: one write a minute, not one a request.
	webSeenEvery = time.Minute
)

// webTokenPrefix starts every session token.
const webTokenPrefix = "nasweb_"

// webTokenBytes is the token's randomness: 256 bits.
const webTokenBytes = 32

var webTokenLen = len(webTokenPrefix) + base64.RawURLEncoding.EncodedLen(webTokenBytes)

// Sign-in pacing: a failed sign-in answers after signInDelay, and every
// attempt waits its turn at signInRate (burst signInBurst); an attempt
// that would wait longer than signInMaxWait is refused with
// ErrSignInLimited.
const (
	signInDelay   = 300 * time.Millisecond
	signInRate    = 2 // per second
	signInBurst   = 10
	signInMaxWait = 10 * time.Second
)

// Errors of the control room's door.
var (
	// ErrSignIn is returned when a sign-in's keys are not the owner's; it
	// never says which of the two was wrong (401).
	ErrSignIn = errors.New("auth: the access key and secret key are not the owner's")
	// ErrSignInLimited is returned when sign-in attempts come faster than
	// the gateway answers them (429).
	ErrSignInLimited = errors.New("auth: too many sign-in attempts; wait and try again")
	// ErrNoSession is returned (wrapping sigv4.ErrInvalidToken) when a
	// cookie names no live session: malformed, unknown, signed out,
	// expired, idle too long or of old owner keys (403 Unauthenticated).
	ErrNoSession = fmt.Errorf("auth: no live control-room session: %w", sigv4.ErrInvalidToken)
	// ErrCSRF is returned (wrapping ErrDenied) when a cookie request lacks
	// the session's CSRF token or does not come from the gateway's own
	// origin (403).
	ErrCSRF = fmt.Errorf("auth: the request is not from the control room's page: %w", ErrDenied)
	// ErrCookieRefused is returned (wrapping ErrDenied) when the session
	// cookie reaches a door other than the control API, or comes with an
	// Authorization header (403).
	ErrCookieRefused = fmt.Errorf("auth: the control-room session cookie is refused here: %w", ErrDenied)
)

// webSession is the value under WS/<hex SHA-256 of the token>: the hash
// again (compared in constant time), the fingerprint of the owner keys it
// was signed in with, and its times. JSON, about 200 bytes.
type webSession struct {
	Hash      []byte    `json:"sha256"`
	Owner     string    `json:"owner"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	SeenAt    time.Time `json:"seen_at"`
}

// WebSignIn is a signed-in session as the control room learns it: the
// cookie's token (only at sign-in), its CSRF token and its expiry.
type WebSignIn struct {
	Token     string
	CSRF      string
	ExpiresAt time.Time
}

func webSessionKey(sum [sha256.Size]byte) []byte {
	return []byte(keyspace.WebSession + hex.EncodeToString(sum[:]))
}

// ParseSessionCookie checks a session cookie's value: exactly a
// well-formed token, else ErrNoSession. It never returns the value in an
// error.
func ParseSessionCookie(v string) (string, error) {
	if len(v) != webTokenLen || !strings.HasPrefix(v, webTokenPrefix) {
		return "", fmt.Errorf("%w: malformed cookie", ErrNoSession)
	}
	body := v[len(webTokenPrefix):]
	if strings.IndexFunc(body, notBase64URL) >= 0 {
		return "", fmt.Errorf("%w: malformed cookie", ErrNoSession)
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(body); err != nil {
		return "", fmt.Errorf("%w: malformed cookie", ErrNoSession)
	}
	return v, nil
}

// sessionCookie returns r's session cookie values (normally none or
// one).
func sessionCookies(r *http.Request) []string {
	var out []string
	for _, c := range r.CookiesNamed(SessionCookie) {
		out = append(out, c.Value)
	}
	return out
}

// HasSessionCookie reports whether r carries the control room's cookie.
func HasSessionCookie(r *http.Request) bool { return len(sessionCookies(r)) > 0 }

// SignIn signs the owner in to the control room: accessKey and secretKey
// must both be the owner's (each compared in constant time, both always
// compared). A failure answers ErrSignIn after a pause and is recorded;
// attempts beyond the gateway's pace answer ErrSignInLimited.
func (a *Authority) SignIn(ctx context.Context, r *http.Request, accessKey, secretKey string) (*WebSignIn, error) {
	if a.leases == nil {
		return nil, fmt.Errorf("%w: sessions are not enabled on this gateway", ErrDenied)
	}
	res := a.signins.Reserve()
	if d := res.Delay(); d > signInMaxWait {
		res.Cancel()
		return nil, ErrSignInLimited
	} else if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	ak := subtle.ConstantTimeCompare([]byte(accessKey), []byte(a.owner.AccessKey))
	sk := subtle.ConstantTimeCompare([]byte(secretKey), []byte(a.owner.SecretKey))
	if ak&sk != 1 {
		a.obs.Refused("sign_in")
		a.authFailedAs(ctx, r, "control-room sign-in", ErrSignIn)
		if err := sleep(ctx, signInDelay); err != nil {
			return nil, err
		}
		return nil, ErrSignIn
	}
	// Record first, then act: a sign-in the recorder cannot hold does not
	// happen.
	tok := newWebToken()
	sum := sha256.Sum256([]byte(tok))
	e := record.Event{Kind: record.KindSessionIssued, Details: map[string]string{"via": "control room sign-in",
		"session": webSessionName(sum), "remote": r.RemoteAddr}}
	if err := a.Record(ctx, &Principal{AccessKey: a.owner.AccessKey, now: a.now()}, e); err != nil {
		return nil, fmt.Errorf("record the sign-in: %w", err)
	}
	return a.leases.openWebSession(ctx, a.leases.fingerprint(a.owner), tok)
}

// newWebToken draws a session token.
func newWebToken() string {
	b := make([]byte, webTokenBytes)
	rand.Read(b)
	return webTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// webSessionName names a session in records and logs: a prefix of its
// token's hash, which reveals nothing of the token.
func webSessionName(sum [sha256.Size]byte) string { return "web_" + hex.EncodeToString(sum[:6]) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newSignInLimiter paces sign-in attempts.
func newSignInLimiter() *rate.Limiter { return rate.NewLimiter(signInRate, signInBurst) }

// openWebSession stores session tok of the owner keys whose fingerprint
// is owner.
func (s *Leases) openWebSession(ctx context.Context, owner, tok string) (*WebSignIn, error) {
	sum := sha256.Sum256([]byte(tok))
	now := s.now().UTC()
	ws := webSession{Hash: sum[:], Owner: owner, IssuedAt: now, ExpiresAt: now.Add(WebSessionTTL), SeenAt: now}
	v, _ := json.Marshal(ws)
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		if err := dropDeadWebSessions(txn, now); err != nil {
			return err
		}
		return txn.Set(webSessionKey(sum), v)
	})
	if err != nil {
		return nil, fmt.Errorf("store control-room session: %w", err)
	}
	return &WebSignIn{Token: tok, CSRF: s.csrfOf(sum), ExpiresAt: ws.ExpiresAt}, nil
}

// dropDeadWebSessions deletes the records of sessions that expired or
// idled out by now, so they do not accumulate: only the owner signs in,
// so there are few, and each sign-in sweeps them.
func dropDeadWebSessions(txn kv.Txn, now time.Time) error {
	return dropWhere(txn, keyspace.WebSession, func(v []byte) bool {
		var ws webSession
		return json.Unmarshal(v, &ws) != nil || !now.Before(ws.ExpiresAt) || !now.Before(ws.SeenAt.Add(WebSessionIdle))
	})
}

// csrfOf is the CSRF token of the session whose token hashes to sum.
func (s *Leases) csrfOf(sum [sha256.Size]byte) string {
	m := hmac.New(sha256.New, s.keys.Secret)
	m.Write([]byte("control-room csrf\x00"))
	m.Write(sum[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// resolveWebSession returns the live session of token tok, refreshing its
// last-seen time when stale.
func (s *Leases) resolveWebSession(ctx context.Context, tok, owner string) (*webSession, [sha256.Size]byte, error) {
	sum := sha256.Sum256([]byte(tok))
	var ws webSession
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(webSessionKey(sum))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &ws)
	})
	now := s.now()
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return nil, sum, fmt.Errorf("%w: unknown or signed out", ErrNoSession)
	case err != nil:
		return nil, sum, err
	case subtle.ConstantTimeCompare(ws.Hash, sum[:]) != 1:
		return nil, sum, fmt.Errorf("%w: unknown", ErrNoSession)
	case subtle.ConstantTimeCompare([]byte(ws.Owner), []byte(owner)) != 1:
		return nil, sum, fmt.Errorf("%w: the owner's keys changed", ErrNoSession)
	case !now.Before(ws.ExpiresAt):
		return nil, sum, fmt.Errorf("%w: expired", ErrNoSession)
	case !now.Before(ws.SeenAt.Add(WebSessionIdle)):
		return nil, sum, fmt.Errorf("%w: idle too long", ErrNoSession)
	}
	if now.Sub(ws.SeenAt) >= webSeenEvery {
		ws.SeenAt = now.UTC()
		v, _ := json.Marshal(ws)
		if err := s.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(webSessionKey(sum), v) }); err != nil {
			return nil, sum, fmt.Errorf("refresh control-room session: %w", err)
		}
	}
	return &ws, sum, nil
}

// webSessionOf resolves r's one session cookie.
func (a *Authority) webSessionOf(r *http.Request) (*webSession, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if a.leases == nil {
		return nil, sum, fmt.Errorf("%w: sessions are not enabled on this gateway", ErrNoSession)
	}
	vals := sessionCookies(r)
	if len(vals) != 1 {
		return nil, sum, fmt.Errorf("%w: want one session cookie, got %d", ErrNoSession, len(vals))
	}
	tok, err := ParseSessionCookie(vals[0])
	if err != nil {
		return nil, sum, err
	}
	return a.leases.resolveWebSession(r.Context(), tok, a.leases.fingerprint(a.owner))
}

// WebSession returns r's live session (its CSRF token and expiry, not its
// token), for the control room's page to learn its CSRF token again
// after a reload. r must come from the gateway's own origin.
func (a *Authority) WebSession(r *http.Request) (*WebSignIn, error) {
	if err := SameOrigin(r); err != nil {
		return nil, err
	}
	ws, sum, err := a.webSessionOf(r)
	if err != nil {
		return nil, err
	}
	return &WebSignIn{CSRF: a.leases.csrfOf(sum), ExpiresAt: ws.ExpiresAt}, nil
}

// SignOut ends r's session: its record is deleted, so the cookie signs
// nobody in again, on any gateway. A cookie that names no session is
// fine (nothing to end); the request must come from the control room
// (same origin, CSRF token).
func (a *Authority) SignOut(r *http.Request) error {
	if _, err := a.cookiePrincipal(r); err != nil && !errors.Is(err, ErrNoSession) {
		return err
	} else if err != nil {
		return nil
	}
	tok, _ := ParseSessionCookie(sessionCookies(r)[0])
	sum := sha256.Sum256([]byte(tok))
	return a.leases.db.Update(r.Context(), func(txn kv.Txn) error { return txn.Delete(webSessionKey(sum)) })
}

// authenticateCookie is the door of a request that carries the session
// cookie: only the control API takes it, never with an Authorization
// header or a presigned query.
func (a *Authority) authenticateCookie(r *http.Request, d Door) (*Principal, error) {
	var err error
	q := r.URL.Query()
	switch {
	case d != Control:
		err = fmt.Errorf("%w: only the control API takes it", ErrCookieRefused)
	case r.Header.Get("Authorization") != "" || q.Has("X-Amz-Signature") || q.Has("Signature"):
		err = fmt.Errorf("%w: a request carries a cookie or a signature, not both", ErrCookieRefused)
	}
	var p *Principal
	if err == nil {
		p, err = a.cookiePrincipal(r)
	}
	if err != nil {
		a.obs.Refused(FailureReason(err))
		a.authFailedAs(r.Context(), r, "control-room session", err)
		return nil, err
	}
	return p, nil
}

// cookiePrincipal checks that r comes from the control room (same
// origin, the session's CSRF token) of a live session, and returns the
// owner's principal for it.
func (a *Authority) cookiePrincipal(r *http.Request) (*Principal, error) {
	if err := SameOrigin(r); err != nil {
		return nil, err
	}
	_, sum, err := a.webSessionOf(r)
	if err != nil {
		return nil, err
	}
	want := a.leases.csrfOf(sum)
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(want)) != 1 {
		return nil, fmt.Errorf("%w: missing or wrong %s", ErrCSRF, CSRFHeader)
	}
	res := &sigv4.Result{AccessKey: a.owner.AccessKey, Mode: sigv4.SignedPayload, DecodedLength: r.ContentLength, Body: r.Body}
	return &Principal{AccessKey: a.owner.AccessKey, Session: webSessionName(sum), Signed: res, now: a.now()}, nil
}

// SameOrigin refuses (ErrCSRF) a browser request that another site made:
// it must carry Sec-Fetch-Site "same-origin" or an Origin equal to the
// gateway's own (scheme and Host), and neither may say otherwise.
func SameOrigin(r *http.Request) error {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	if site == "" && origin == "" {
		return fmt.Errorf("%w: neither Origin nor Sec-Fetch-Site", ErrCSRF)
	}
	if site != "" && site != "same-origin" {
		return fmt.Errorf("%w: Sec-Fetch-Site is %q", ErrCSRF, site)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if origin != "" && origin != scheme+"://"+r.Host {
		return fmt.Errorf("%w: another origin", ErrCSRF)
	}
	return nil
}
