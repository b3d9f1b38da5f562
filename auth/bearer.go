package auth

import (
	"context"
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

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/sigv4"
)

// MCP bearer tokens let a remote MCP host act as one lease over
// streamable HTTP (/_nas/mcp) without holding the lease's S3
// credentials: "nasmcp_" and 43 characters of unpadded base64url, 256
// bits from crypto/rand. The gateway keeps only the token's SHA-256
// (under MT/), bound to exactly one lease; the token lives and dies with
// that lease, so revoking or outliving the lease ends it on the next
// request. Only the owner mints one, when it issues the lease.

// MCPTokenPrefix starts every MCP bearer token, so a token that leaks
// (into a log, a paste) is recognisable and can be scanned for.
const MCPTokenPrefix = "nasmcp_"

// mcpTokenBytes is the token's randomness: 256 bits.
const mcpTokenBytes = 32

// mcpTokenLen is the length of a well-formed token.
var mcpTokenLen = len(MCPTokenPrefix) + base64.RawURLEncoding.EncodedLen(mcpTokenBytes)

// mcpTokenRecord is the value under MT/<hex SHA-256 of the token>: the
// lease the token acts as and the hash again, which the lookup compares
// in constant time. JSON, about 130 bytes.
type mcpTokenRecord struct {
	Lease string `json:"lease_id"`
	Hash  []byte `json:"sha256"`
}

func mcpTokenKey(sum [sha256.Size]byte) []byte {
	return []byte(keyspace.MCPToken + hex.EncodeToString(sum[:]))
}

// MintMCPToken mints the MCP bearer token of lease id and returns it; it
// is never stored, only its hash, so this answer is the one place it is
// ever seen. The lease must exist and not be revoked.
func (s *Leases) MintMCPToken(ctx context.Context, id string) (string, error) {
	b := make([]byte, mcpTokenBytes)
	rand.Read(b)
	tok := MCPTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	rec, _ := json.Marshal(mcpTokenRecord{Lease: id, Hash: sum[:]})
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		// Reading the lease inside the transaction makes a concurrent
		// revocation conflict with the mint.
		lb, err := txn.Get(leaseKey(id))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("lease %s: %w", id, lease.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var l lease.Lease
		if err := json.Unmarshal(lb, &l); err != nil {
			return err
		}
		if l.Revoked {
			return fmt.Errorf("lease %s: %w", id, lease.ErrRevoked)
		}
		return txn.Set(mcpTokenKey(sum), rec)
	})
	if err != nil {
		return "", fmt.Errorf("mint MCP token: %w", err)
	}
	return tok, nil
}

// ParseBearer returns the MCP token of an Authorization header value,
// "Bearer nasmcp_…" (the scheme in any case, RFC 6750). An empty header
// answers sigv4.ErrMissingAuth; anything else that is not exactly a
// well-formed token answers ErrBadBearer. It never returns the header's
// text in an error.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", fmt.Errorf("%w: no bearer token", sigv4.ErrMissingAuth)
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: the Authorization scheme is not Bearer", ErrBadBearer)
	}
	tok = strings.TrimLeft(tok, " ")
	if len(tok) != mcpTokenLen || !strings.HasPrefix(tok, MCPTokenPrefix) {
		return "", fmt.Errorf("%w: not an MCP token of this gateway", ErrBadBearer)
	}
	// The decoder skips CR and LF, so the alphabet is checked first.
	body := tok[len(MCPTokenPrefix):]
	if strings.IndexFunc(body, notBase64URL) >= 0 {
		return "", fmt.Errorf("%w: not an MCP token of this gateway", ErrBadBearer)
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(body); err != nil {
		return "", fmt.Errorf("%w: not an MCP token of this gateway", ErrBadBearer)
	}
	return tok, nil
}

// notBase64URL reports a rune outside the unpadded base64url alphabet.
func notBase64URL(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
}

// resolveMCPToken returns the live lease of token tok. An unknown token
// answers lease.ErrBadToken, one of a revoked lease lease.ErrRevoked, of
// an expired one lease.ErrExpired.
func (s *Leases) resolveMCPToken(ctx context.Context, tok string) (*lease.Lease, error) {
	sum := sha256.Sum256([]byte(tok))
	var rec mcpTokenRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get(mcpTokenKey(sum))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &rec)
	})
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return nil, fmt.Errorf("unknown MCP token: %w", lease.ErrBadToken)
	case err != nil:
		return nil, err
	case subtle.ConstantTimeCompare(rec.Hash, sum[:]) != 1:
		return nil, fmt.Errorf("unknown MCP token: %w", lease.ErrBadToken)
	}
	l, err := s.Get(ctx, rec.Lease)
	switch {
	case errors.Is(err, lease.ErrNotFound):
		return nil, fmt.Errorf("MCP token of a missing lease: %w", lease.ErrBadToken)
	case err != nil:
		return nil, err
	case l.Revoked:
		return nil, fmt.Errorf("lease %s: %w", l.ID, lease.ErrRevoked)
	case !s.now().Before(l.ExpiresAt):
		return nil, fmt.Errorf("lease %s: %w", l.ID, lease.ErrExpired)
	}
	return l, nil
}

// AuthenticateBearer is the door of MCP over HTTP: it turns r's
// "Authorization: Bearer nasmcp_…" into the principal of the token's
// lease, loads the lease's chain and checks that every lease of it is
// live. It never falls back to a signature or the owner's keys: the
// owner's access key or any SigV4 header is just a bad bearer. A refusal
// is recorded (rate limited, naming the principal "bearer", never the
// token) and wraps the sentinels Authenticate's do: sigv4.ErrMissingAuth
// with no header, ErrBadBearer for a malformed one, sigv4.ErrUnknownKey
// for an unknown token (InvalidAccessKeyId), lease.ErrRevoked with
// sigv4.ErrUnknownKey for a revoked lease and lease.ErrExpired with
// sigv4.ErrInvalidToken for an expired one (ExpiredToken).
//
// The MCP request itself is not charged to the request budget: the
// tools' own gateway calls, which go through Authenticate, are.
func (a *Authority) AuthenticateBearer(r *http.Request) (*Principal, error) {
	p, err := a.bearer(r)
	if err != nil {
		a.obs.Refused(FailureReason(err))
		a.authFailedAs(r.Context(), r, "bearer", err)
		return nil, err
	}
	return p, nil
}

// bearer resolves r's bearer token to a principal whose chain is live.
func (a *Authority) bearer(r *http.Request) (*Principal, error) {
	tok, err := ParseBearer(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	if a.leases == nil {
		return nil, fmt.Errorf("%w: leases are not enabled on this gateway", sigv4.ErrUnknownKey)
	}
	ctx := r.Context()
	l, err := a.leases.resolveMCPToken(ctx, tok)
	switch {
	case errors.Is(err, lease.ErrExpired):
		return nil, fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, err)
	case errors.Is(err, lease.ErrRevoked), errors.Is(err, lease.ErrBadToken):
		return nil, fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, err)
	case err != nil:
		return nil, err
	}
	p := &Principal{AccessKey: l.AccessKeyID, Lease: l, bearer: true, now: a.now()}
	chain, err := a.leases.Chain(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("%w: lease %s: an ancestor is missing: %w", sigv4.ErrUnknownKey, l.ID, lease.ErrRevoked)
	}
	p.chain = chain
	if v, ended := chainEnded(chain, p.now); ended {
		return nil, fmt.Errorf("%w: %w: %s", sigv4.ErrInvalidToken, ErrLeaseEnded, v.Rule)
	}
	return p, nil
}

// LeaseCredentials returns the temporary credentials of the lease a
// bearer principal acts as, derived again on the server (the secret from
// the access key, the session token signed anew), so the MCP server's
// tools can call the gateway's front door as that lease. It refuses
// every principal that did not come through AuthenticateBearer: it is
// not a way for a signed request to learn its own secret. The
// credentials must never leave the gateway's process.
func (a *Authority) LeaseCredentials(p *Principal) (Credentials, error) {
	if p == nil || !p.bearer || p.Lease == nil || a.leases == nil {
		return Credentials{}, fmt.Errorf("%w: only an MCP bearer principal's lease credentials are derived", ErrDenied)
	}
	l, k := p.Lease, a.leases.keys
	tok, err := k.token(l.ID, l.AccessKeyID, l.IssuedAt, l.ExpiresAt)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{AccessKeyID: l.AccessKeyID, SecretAccessKey: k.secretFor(l.AccessKeyID), SessionToken: tok, Expiration: l.ExpiresAt}, nil
}
