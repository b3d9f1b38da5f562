package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/sigv2"
	"github.com/agentnas/nas/sigv4"
	"golang.org/x/time/rate"
)

// Owner is the owner's long-lived credentials.
type Owner struct {
	AccessKey string
	SecretKey string
}

// Recorder is the flight recorder as the door writes to it.
type Recorder interface {
	Append(ctx context.Context, e record.Event) (record.Event, error)
}

// ReadManifests keeps each run's read manifest.
type ReadManifests interface {
	Add(ctx context.Context, run string, rd record.Read) error
	Flush(ctx context.Context, run string) error
}

// Config assembles an Authority.
type Config struct {
	Owner Owner
	// Leases, when set, accepts lease credentials; without it only the
	// owner gets in.
	Leases *Leases
	// Branches answers which commits a lease's branch has seen and the
	// head a read was made at.
	Branches *branch.Service
	// Recorder and Reads, when set, receive denials, grant uses, auth
	// failures, events with provenance and reads.
	Recorder Recorder
	Reads    ReadManifests
	// Now is the clock of signature and lease checks (nil: time.Now).
	Now func() time.Time
	// Domains are the S3 endpoint's virtual-host domains, which SigV2
	// signs as a "/bucket" prefix of the path.
	Domains []string
	Log     *slog.Logger
	// Observer, when set, is told of every refusal and charge (the
	// gateway's metrics).
	Observer Observer
}

// Observer is told what the door decides, for the gateway's metrics. It
// receives bounded names and counts, never a key, repository or lease.
// Its methods must be cheap and safe for concurrent use.
type Observer interface {
	// Refused is called once per refusal with its reason: a FailureReason
	// for a request refused at the door, or the lease's decision
	// ("not_found", "denied", "over_budget", "expired") for an operation,
	// or for a refused web identity "expired", "denied", "idp" or
	// "malformed".
	Refused(reason string)
	// Charged is called when n units of a lease budget ("requests",
	// "bytes_read", "bytes_written") are charged, and Refunded when they
	// are given back.
	Charged(budget string, n int64)
	Refunded(budget string, n int64)
}

// nopObserver is the Observer of an Authority configured without one.
type nopObserver struct{}

func (nopObserver) Refused(string)         {}
func (nopObserver) Charged(string, int64)  {}
func (nopObserver) Refunded(string, int64) {}

// Authority is the gateway's one door. Every interface authenticates a
// request with Authenticate, authorizes every operation with Authorize,
// charges bytes with Read and Write, records with Record and ends with
// Finish. It is safe for concurrent use.
type Authority struct {
	owner    Owner
	leases   *Leases
	branches *branch.Service
	rec      Recorder
	reads    ReadManifests
	now      func() time.Time
	log      *slog.Logger
	verify   sigv4.Verifier
	verify2  sigv2.Verifier
	limit    *limiter // bounds the records of refusals
	obs      Observer
	web      *webKeys      // the key sets of web identity issuers
	guardOf  GuardOf       // repositories' guards (SetGuard); nil: reads are not guarded
	signins  *rate.Limiter // paces control-room sign-in attempts
}

// New returns an Authority.
func New(c Config) *Authority {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	a := &Authority{owner: c.Owner, leases: c.Leases, branches: c.Branches, rec: c.Recorder, reads: c.Reads,
		now: c.Now, log: c.Log, limit: newLimiter(refusalsPerSecond), obs: c.Observer, web: newWebKeys(c.Now),
		signins: newSignInLimiter()}
	a.verify.Now = c.Now
	a.verify2 = sigv2.Verifier{Now: c.Now, Domains: c.Domains} // zero MaxSkew: sigv4's default, as for SigV4
	return a
}

// Leases returns the lease store (nil when leases are off).
func (a *Authority) Leases() *Leases { return a.leases }

// Door names the interface a request arrives through; each has its rules
// for what the signature must cover.
type Door int

// The doors.
const (
	// S3 accepts presigned URLs and unsigned or streaming payloads, as S3
	// does.
	S3 Door = iota
	// Control is the control API (/_nas/v1): it changes authority, so the
	// payload must be signed and presigned query authentication is
	// refused.
	Control
	// STS mints credentials: the same rules as Control.
	STS
)

// Principal is who a request acts as, with the lease state it was
// authenticated with: loaded once per request and used by every check.
type Principal struct {
	// AccessKey is the key the request was signed with.
	AccessKey string
	// Lease is the request's lease; nil for the owner.
	Lease *lease.Lease
	// Session is the owner session (GetSessionToken) the request was
	// signed with, "" for the owner's long-lived keys and for leases. A
	// session acts as the owner: Lease is nil.
	Session string
	// Signed is what the signature proved (headers covered, payload mode,
	// the body to read).
	Signed *sigv4.Result

	bearer   bool                    // authenticated by an MCP bearer token (AuthenticateBearer)
	chain    []*lease.Lease          // Lease and its ancestors, nearest first
	now      time.Time               // the request's clock: one instant for every check
	consumed map[string]bool         // single-use grants this request consumed
	grants   map[string]bool         // grants whose use this request recorded
	refused  bool                    // the request's first refusal was recorded
	denials  []denial                // refusals after the first, summarised by Finish
	rules    map[string][]label.Rule // label rules by repository, read once a request
	taint    *label.Taint            // the run's taint as this request last saw it
	hidden   []Target                // entries the veil hid from this request's writes
}

// Name names the principal in logs: "owner", or the lease's ID (never a
// key or token).
func (p *Principal) Name() string {
	if p.Lease == nil {
		return "owner"
	}
	return p.Lease.ID
}

// IsOwner reports whether the request acts as the owner.
func (p *Principal) IsOwner() bool { return p.Lease == nil }

// Now is the instant the request is checked at.
func (p *Principal) Now() time.Time { return p.now }

// Branch applies the lease to a branch name: a request that names no
// branch of the lease's repository means the lease's branch. The owner's
// "" is left for the edge to default.
func (p *Principal) Branch(repo, br string) string {
	if br == "" && p.Lease != nil && (repo == "" || repo == p.Lease.Repo) {
		return p.Lease.Branch
	}
	return br
}

// secretLookup resolves the access key of one request and remembers the
// lease it belongs to.
type secretLookup struct {
	a       *Authority
	lease   *lease.Lease
	session *Session
}

// LookupSecret implements sigv4.SecretLookup.
func (s *secretLookup) LookupSecret(ctx context.Context, accessKey, token string) (string, error) {
	a := s.a
	if subtle.ConstantTimeCompare([]byte(accessKey), []byte(a.owner.AccessKey)) == 1 {
		if token != "" {
			return "", fmt.Errorf("owner credentials take no session token: %w", sigv4.ErrInvalidToken)
		}
		return a.owner.SecretKey, nil
	}
	if a.leases == nil || !IsTemporary(accessKey) {
		return "", fmt.Errorf("%s: %w", accessKey, sigv4.ErrUnknownKey)
	}
	l, ses, secret, err := a.leases.ResolveTemporary(ctx, a.owner, accessKey, token)
	switch {
	case errors.Is(err, lease.ErrExpired):
		return "", fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, err)
	case errors.Is(err, lease.ErrRevoked):
		return "", fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, err)
	case errors.Is(err, lease.ErrBadToken):
		return "", fmt.Errorf("%w: %v", sigv4.ErrInvalidToken, err)
	case err != nil:
		return "", err
	}
	s.lease, s.session = l, ses
	return secret, nil
}

// Authenticate verifies r's signature under the rules of door d, loads
// the lease's state once (its chain of ancestors), checks that every
// lease of the chain is live, and charges the request to the request
// budgets. A refused request is recorded (rate limited) and answered with
// an error wrapping the sigv4 sentinels, lease.ErrExpired/ErrRevoked,
// ErrUnsignedHeaders, ErrUnsignedPayload or ErrOverBudget; with
// ErrOverBudget the principal is returned too, so the edge can say what is
// left. The caller reads the body from p.Signed.Body and calls Finish
// when done.
//
// A request that carries the control room's session cookie is
// authenticated by it instead, on the control API only (see
// websession.go); every other door refuses it.
func (a *Authority) Authenticate(r *http.Request, d Door) (*Principal, error) {
	if HasSessionCookie(r) {
		return a.authenticateCookie(r, d)
	}
	look := &secretLookup{a: a}
	res, err := a.verifySignature(r, look)
	if err == nil {
		err = checkSigned(r, res, d)
		if err != nil {
			res.Body.Close()
		}
	}
	return a.enter(r, res, look, err)
}

// AuthenticatePost is Authenticate for a browser form (S3 POST Object),
// whose signature is in the form's fields f rather than in r's headers:
// the signature over the policy is verified with the same secret lookup
// (owner or lease, revocation, expiry), the lease's chain is loaded and
// checked and the request charged to the request budgets, exactly as for
// Authenticate. Nothing of r's headers is signed, so an x-amz-* or
// x-nas-* header is refused (ErrUnsignedHeaders). The caller checks the
// policy's conditions; the door has proved only who signed it.
func (a *Authority) AuthenticatePost(r *http.Request, f sigv4.PostForm) (*Principal, error) {
	if HasSessionCookie(r) {
		return a.authenticateCookie(r, S3)
	}
	look := &secretLookup{a: a}
	var res *sigv4.Result
	var err error
	if f.Algorithm == "AWS" {
		res, err = a.verify2.VerifyPost(r.Context(), sigv2.PostForm{AccessKeyID: f.AccessKeyID,
			Signature: f.Signature, SecurityToken: f.SecurityToken, Policy: f.Policy}, look)
	} else {
		res, err = a.verify.VerifyPost(r.Context(), f, look)
	}
	if err == nil {
		err = checkSigned(r, res, S3)
	}
	return a.enter(r, res, look, err)
}

// enter ends authentication: a failure is recorded, a success becomes
// the request's principal, admitted under its lease.
func (a *Authority) enter(r *http.Request, res *sigv4.Result, look *secretLookup, err error) (*Principal, error) {
	ctx := r.Context()
	if err != nil {
		a.obs.Refused(FailureReason(err))
		a.authFailed(ctx, r, err)
		return nil, err
	}
	p := &Principal{AccessKey: res.AccessKey, Lease: look.lease, Signed: res, now: a.now()}
	if look.session != nil {
		p.Session = look.session.ID
	}
	if p.Lease == nil {
		return p, nil
	}
	if err := a.admit(ctx, p, r); err != nil {
		res.Body.Close()
		if errors.Is(err, ErrOverBudget) {
			return p, err
		}
		return nil, err
	}
	return p, nil
}

// verifySignature checks r's signature, SigV4 or SigV2, resolving its
// key through look: both schemes reach the same lease lookup,
// revocation and expiry, and give a sigv4.Result for checkSigned.
func (a *Authority) verifySignature(r *http.Request, look *secretLookup) (*sigv4.Result, error) {
	if sigv2.Claims(r) {
		return a.verify2.Verify(r.Context(), r, look)
	}
	return a.verify.VerifyWith(r.Context(), r, look)
}

// admit loads the lease's chain and charges one request to it.
func (a *Authority) admit(ctx context.Context, p *Principal, r *http.Request) error {
	chain, err := a.leases.Chain(ctx, p.Lease)
	if err != nil {
		return fmt.Errorf("lease %s: an ancestor is missing: %w", p.Lease.ID, lease.ErrRevoked)
	}
	p.chain = chain
	v, err := a.leases.admit(ctx, chain, p.now)
	if err != nil {
		return err
	}
	switch v.Decision {
	case lease.Allow:
		a.obs.Charged(requestsBudget.name, 1)
		return nil
	case lease.Expired:
		a.obs.Refused(FailureReason(lease.ErrExpired))
		return fmt.Errorf("%w: %s", ErrLeaseEnded, v.Rule)
	}
	t := Target{Key: r.URL.EscapedPath()}
	return a.refuse(ctx, p, "request", t, v, ErrOverBudget)
}

// checkSigned applies the door's rules to what the signature covers.
func checkSigned(r *http.Request, res *sigv4.Result, d Door) error {
	for name := range r.Header {
		n := strings.ToLower(name)
		if (strings.HasPrefix(n, "x-amz-") || strings.HasPrefix(n, "x-nas-")) && !res.Signed(n) {
			return fmt.Errorf("%w: %s", ErrUnsignedHeaders, n)
		}
	}
	if d == S3 {
		return nil
	}
	switch {
	case res.Presigned:
		return fmt.Errorf("%w: presigned URLs are refused here", ErrUnsignedPayload)
	case res.Mode == sigv4.Unsigned, res.Mode == sigv4.StreamingUnsignedTrailer:
		return fmt.Errorf("%w: the body is %s", ErrUnsignedPayload, res.Mode)
	}
	return nil
}

// Remaining returns what the request's lease may still consume (every
// field -1 for the owner).
func (a *Authority) Remaining(ctx context.Context, p *Principal) lease.Remaining {
	if p.Lease == nil {
		return lease.Remaining{BytesRead: -1, BytesWritten: -1, Requests: -1}
	}
	return a.leases.remaining(ctx, p.chain)
}

// Finish ends a request: the entries the veil hid from its writes are
// recorded, and refusals after its first are written as one summary
// record.
func (a *Authority) Finish(ctx context.Context, p *Principal) {
	if p == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	a.recordHidden(ctx, p)
	if len(p.denials) > 0 {
		a.summarise(ctx, p)
	}
}

// FailureReason says why a request was refused before or at its door, so a
// client can tell a dead lease from a bad key: "expired", "revoked",
// "unknown_key", "signature", "clock_skew", "request_expired",
// "anonymous", "unsigned_headers", "unsigned_payload", "over_budget",
// "csrf", "cookie_refused" or "malformed".
func FailureReason(err error) string {
	switch {
	case errors.Is(err, lease.ErrExpired):
		return "expired"
	case errors.Is(err, lease.ErrRevoked):
		return "revoked"
	case errors.Is(err, sigv4.ErrUnknownKey), errors.Is(err, sigv4.ErrInvalidToken):
		return "unknown_key"
	case errors.Is(err, sigv4.ErrSignatureMismatch):
		return "signature"
	case errors.Is(err, sigv4.ErrRequestTimeTooSkewed):
		return "clock_skew"
	case errors.Is(err, sigv4.ErrExpired):
		return "request_expired"
	case errors.Is(err, sigv4.ErrMissingAuth):
		return "anonymous"
	case errors.Is(err, ErrUnsignedHeaders):
		return "unsigned_headers"
	case errors.Is(err, ErrUnsignedPayload):
		return "unsigned_payload"
	case errors.Is(err, ErrOverBudget):
		return "over_budget"
	case errors.Is(err, ErrCSRF):
		return "csrf"
	case errors.Is(err, ErrCookieRefused):
		return "cookie_refused"
	}
	return "malformed"
}
