package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"

	"github.com/agentnas/nas/lease"
)

// How the gateway talks to identity providers.
const (
	// idpTimeout bounds one discovery or key set fetch.
	idpTimeout = 10 * time.Second
	// maxIDPBody bounds a discovery document or key set.
	maxIDPBody = 1 << 20
	// discoveryRetry is how long a failed discovery is answered from
	// memory before the issuer is asked again.
	discoveryRetry = 2 * time.Second
	// refreshBurst and refreshEvery bound key set fetches per issuer: a
	// token with an unknown kid makes go-oidc fetch the set again, and
	// anyone can send one, so after refreshBurst quick fetches only one
	// per refreshEvery goes out (the rest answer IDPCommunicationError,
	// which SDKs retry).
	refreshBurst = 4
	refreshEvery = 15 * time.Second
)

// webAlgs are the signature algorithms a web identity token may use:
// asymmetric ones only, so "none" and HMAC (with a public key as the
// secret) are refused before any key is looked at.
var webAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

func webAlgNames() []string {
	out := make([]string, len(webAlgs))
	for i, a := range webAlgs {
		out[i] = string(a)
	}
	return out
}

// webKeys finds the keys that verify a role's tokens: the role's static
// key set, or the issuer's, discovered once per issuer and kept by
// go-oidc's RemoteKeySet (cached, fetched again on an unknown kid). Only
// issuers the owner named in a role are ever contacted. Safe for
// concurrent use.
type webKeys struct {
	client *http.Client // discovery
	now    func() time.Time

	group singleflight.Group // one discovery per issuer at a time
	mu    sync.Mutex         // guards issuers
	// issuers maps an issuer URL to its discovered key set or its last
	// failure. It grows only with issuers named in roles.
	issuers map[string]*issuerKeys
}

type issuerKeys struct {
	keys     oidc.KeySet // nil after a failure
	err      error
	failedAt time.Time
}

func newWebKeys(now func() time.Time) *webKeys {
	return &webKeys{client: idpClient(nil), now: now, issuers: map[string]*issuerKeys{}}
}

// idpClient is an HTTP client for identity providers: bounded time and
// bodies, no redirects, every failure wrapping ErrIDPCommunication; lim,
// when set, rations its requests.
func idpClient(lim *rationer) *http.Client {
	return &http.Client{
		Timeout:       idpTimeout,
		Transport:     &idpTransport{base: http.DefaultTransport, lim: lim},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// keySet returns the keys of t's tokens.
func (w *webKeys) keySet(ctx context.Context, t *lease.OIDCTrust) (oidc.KeySet, error) {
	if len(t.JWKS) > 0 {
		pubs, _, err := ParseJWKS(t.JWKS)
		if err != nil {
			return nil, err
		}
		return &oidc.StaticKeySet{PublicKeys: pubs}, nil
	}
	return w.remote(ctx, t.Issuer)
}

// remote returns the issuer's key set, discovering it the first time
// (and again after a failure, at most every discoveryRetry).
func (w *webKeys) remote(ctx context.Context, issuer string) (oidc.KeySet, error) {
	w.mu.Lock()
	e := w.issuers[issuer]
	w.mu.Unlock()
	if e != nil && (e.keys != nil || w.now().Sub(e.failedAt) < discoveryRetry) {
		return e.keys, e.err
	}
	ch := w.group.DoChan(issuer, func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idpTimeout)
		defer cancel()
		keys, err := w.discover(dctx, issuer)
		w.mu.Lock()
		w.issuers[issuer] = &issuerKeys{keys: keys, err: err, failedAt: w.now()}
		w.mu.Unlock()
		return keys, err
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(oidc.KeySet), nil
	}
}

// discover reads the issuer's discovery document (go-oidc checks that it
// names the same issuer) and returns a remote key set at its jwks_uri.
func (w *webKeys) discover(ctx context.Context, issuer string) (oidc.KeySet, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, w.client), issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery of %s: %v", ErrIDPCommunication, issuer, err)
	}
	var doc struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil {
		return nil, fmt.Errorf("%w: discovery of %s: %v", ErrIDPCommunication, issuer, err)
	}
	if err := lease.ValidIssuer(doc.JWKSURL); err != nil {
		return nil, fmt.Errorf("%w: %s names a jwks_uri the gateway will not fetch: %v", ErrIDPCommunication, issuer, err)
	}
	client := idpClient(newRationer(refreshBurst, refreshEvery))
	return notingKeySet{oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), doc.JWKSURL)}, nil
}

// idpNote carries a key set's fetch failure out of go-oidc's Verify,
// which reports it only as text.
type idpNote struct{ err error }

type idpNoteKey struct{}

// notingKeySet is a KeySet that notes fetch failures in the context's
// idpNote.
type notingKeySet struct{ oidc.KeySet }

// VerifySignature implements oidc.KeySet.
func (k notingKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.KeySet.VerifySignature(ctx, jwt)
	if err != nil && errors.Is(err, ErrIDPCommunication) {
		if n, ok := ctx.Value(idpNoteKey{}).(*idpNote); ok {
			n.err = err
		}
	}
	return payload, err
}

// idpTransport turns every failure talking to an identity provider
// (unreachable, an answer other than 200, a body over maxIDPBody, too
// many fetches) into an error wrapping ErrIDPCommunication.
type idpTransport struct {
	base http.RoundTripper
	lim  *rationer // nil: no rationing
}

// RoundTrip implements http.RoundTripper.
func (t *idpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.lim != nil && !t.lim.take(time.Now()) {
		return nil, fmt.Errorf("%w: key set of %s fetched too often; try again shortly", ErrIDPCommunication, r.URL.Host)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIDPCommunication, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered %s", ErrIDPCommunication, (&url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host, Path: r.URL.Path}).String(), resp.Status)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: maxIDPBody}
	return resp, nil
}

// cappedBody fails a body longer than its limit rather than cutting it.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: answer larger than %d bytes", ErrIDPCommunication, maxIDPBody)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("%w: answer larger than %d bytes", ErrIDPCommunication, maxIDPBody)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// rationer is a token bucket: burst requests at once, then one per
// every.
type rationer struct {
	burst int
	every time.Duration
	mu    sync.Mutex // guards left and last
	left  float64
	last  time.Time
}

func newRationer(burst int, every time.Duration) *rationer {
	return &rationer{burst: burst, every: every, left: float64(burst)}
}

// take reports whether one more request may go out at now.
func (r *rationer) take(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.After(r.last) {
		r.left = min(float64(r.burst), r.left+float64(now.Sub(r.last))/float64(r.every))
	}
	r.last = now
	if r.left < 1 {
		return false
	}
	r.left--
	return true
}

// ParseJWKS reads a static JSON Web Key Set given for a role: at least
// one key, public keys only (RSA of at least 2048 bits, ECDSA or
// Ed25519, for signatures), never a symmetric or private key. It returns
// the keys and the set re-encoded canonically, which is what the role
// stores.
func ParseJWKS(raw []byte) ([]crypto.PublicKey, []byte, error) {
	if len(raw) > lease.MaxJWKS {
		return nil, nil, fmt.Errorf("jwks: larger than %d bytes: %w", lease.MaxJWKS, lease.ErrInvalid)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, nil, fmt.Errorf("jwks: %v: %w", err, lease.ErrInvalid)
	}
	if len(set.Keys) == 0 {
		return nil, nil, fmt.Errorf("jwks: no keys: %w", lease.ErrInvalid)
	}
	pubs := make([]crypto.PublicKey, 0, len(set.Keys))
	for i, k := range set.Keys {
		if err := checkJWK(k); err != nil {
			return nil, nil, fmt.Errorf("jwks key %d (kid %q): %w", i, k.KeyID, err)
		}
		pubs = append(pubs, k.Key)
	}
	canon, err := json.Marshal(set)
	if err != nil {
		return nil, nil, fmt.Errorf("jwks: %v: %w", err, lease.ErrInvalid)
	}
	return pubs, canon, nil
}

// checkJWK refuses a key a role must not hold.
func checkJWK(k jose.JSONWebKey) error {
	if !k.Valid() || !k.IsPublic() {
		return fmt.Errorf("not a valid public key (a private or symmetric key is refused; give only public keys): %w", lease.ErrInvalid)
	}
	if k.Use != "" && k.Use != "sig" {
		return fmt.Errorf("use %q: only signature keys: %w", k.Use, lease.ErrInvalid)
	}
	switch pub := k.Key.(type) {
	case *rsa.PublicKey:
		if pub.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits: at least 2048: %w", pub.N.BitLen(), lease.ErrInvalid)
		}
	case *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return fmt.Errorf("key type %T: RSA, ECDSA or Ed25519 only: %w", k.Key, lease.ErrInvalid)
	}
	return nil
}
