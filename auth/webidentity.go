package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/record"
)

// Limits of web identity tokens.
const (
	// MaxWebIdentityToken is AWS's bound on WebIdentityToken.
	MaxWebIdentityToken = 20000
	// webSkew is the clock skew allowed on exp, nbf and iat.
	webSkew = time.Minute
)

// webClaims are the claims the door reads from a verified token.
type webClaims struct {
	Issuer    string           `json:"iss"`
	Subject   string           `json:"sub"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
}

// AssumeWithWebIdentity is the door of STS AssumeRoleWithWebIdentity, a
// request no key signs: token is the only proof. It verifies token for
// role and returns the role with the identity the token proves. The
// token must be a compact JWS signed with an asymmetric algorithm by a
// key of the issuer the role trusts (its discovered key set or the
// role's static one), for the role's audience, inside its exp and nbf
// (webSkew of skew), with a subject and claims the role's patterns
// allow.
//
// It answers ErrInvalidIdentityToken, ErrIdentityTokenExpired,
// ErrIDPCommunication or ErrNotTrusted (a missing role, or one that does
// not trust this issuer, subject or claims: the same answer). A token
// whose issuer is the role's gets the token's own verdict (invalid,
// expired, issuer unreachable), so a caller who guesses both a role name
// and its issuer learns that the role exists; nothing about its view or
// subjects. Every refusal is recorded (rate limited).
func (a *Authority) AssumeWithWebIdentity(ctx context.Context, role, token string) (*lease.Role, *lease.WebIdentity, error) {
	r, id, err := a.webIdentity(ctx, role, token)
	if err != nil {
		a.obs.Refused(webFailure(err))
		a.webRefused(ctx, role, err)
		return nil, nil, err
	}
	return r, id, nil
}

func (a *Authority) webIdentity(ctx context.Context, role, token string) (*lease.Role, *lease.WebIdentity, error) {
	claimed, err := parseWebToken(token)
	if err != nil {
		return nil, nil, err
	}
	if a.leases == nil {
		return nil, nil, fmt.Errorf("%w: leases are not enabled on this gateway", ErrNotTrusted)
	}
	r, err := a.leases.GetRole(ctx, role)
	if errors.Is(err, lease.ErrNotFound) || err == nil && r.OIDC == nil {
		return nil, nil, fmt.Errorf("%w: role %s", ErrNotTrusted, role)
	}
	if err != nil {
		return nil, nil, err
	}
	t := r.OIDC
	// The unverified issuer only decides a refusal; keys come from the
	// role's issuer, never from the token's.
	if claimed.Issuer != t.Issuer {
		return nil, nil, fmt.Errorf("%w: role %s does not trust issuer %q", ErrNotTrusted, role, clip(claimed.Issuer))
	}
	c, all, err := a.verifyWebToken(ctx, t, token)
	if err != nil {
		return nil, nil, err
	}
	if err := a.checkTimes(c); err != nil {
		return nil, nil, err
	}
	if err := trusts(t, c, all); err != nil {
		return nil, nil, fmt.Errorf("role %s: %w", role, err)
	}
	return r, &lease.WebIdentity{Issuer: c.Issuer, Subject: c.Subject}, nil
}

// parseWebToken checks a token's form (a compact JWS of at most
// MaxWebIdentityToken bytes, one signature, an allowed algorithm) and
// returns its claims unverified.
func parseWebToken(token string) (*webClaims, error) {
	if len(token) < 4 || len(token) > MaxWebIdentityToken || strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("%w: not a compact JWT of at most %d bytes", ErrInvalidIdentityToken, MaxWebIdentityToken)
	}
	jws, err := jose.ParseSigned(token, webAlgs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (allowed algorithms: %s)", ErrInvalidIdentityToken, err, strings.Join(webAlgNames(), ", "))
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: exactly one signature", ErrInvalidIdentityToken)
	}
	var c webClaims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrInvalidIdentityToken, err)
	}
	return &c, nil
}

// verifyWebToken verifies the signature, issuer and audience with
// go-oidc and returns the verified claims, also each as raw JSON for the
// claim conditions.
func (a *Authority) verifyWebToken(ctx context.Context, t *lease.OIDCTrust, token string) (*webClaims, map[string]json.RawMessage, error) {
	keys, err := a.web.keySet(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	v := oidc.NewVerifier(t.Issuer, keys, &oidc.Config{ClientID: t.Audience, SupportedSigningAlgs: webAlgNames(),
		SkipExpiryCheck: true, Now: a.now})
	note := &idpNote{}
	idt, err := v.Verify(context.WithValue(ctx, idpNoteKey{}, note), token)
	switch {
	case err != nil && note.err != nil:
		return nil, nil, note.err
	case err != nil && ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidIdentityToken, err)
	}
	var c webClaims
	var all map[string]json.RawMessage
	if err := idt.Claims(&c); err != nil {
		return nil, nil, fmt.Errorf("%w: claims: %v", ErrInvalidIdentityToken, err)
	}
	if err := idt.Claims(&all); err != nil {
		return nil, nil, fmt.Errorf("%w: claims: %v", ErrInvalidIdentityToken, err)
	}
	return &c, all, nil
}

// checkTimes requires exp, and refuses a token past it or before nbf or
// iat, each with webSkew of skew.
func (a *Authority) checkTimes(c *webClaims) error {
	now := a.now()
	switch {
	case c.Expiry == nil:
		return fmt.Errorf("%w: the token has no exp", ErrInvalidIdentityToken)
	case !now.Before(c.Expiry.Add(webSkew)):
		return fmt.Errorf("%w: expired at %s", ErrIdentityTokenExpired, c.Expiry.UTC().Format(time.RFC3339))
	case c.NotBefore != nil && now.Add(webSkew).Before(c.NotBefore.Time):
		return fmt.Errorf("%w: not valid before %s", ErrInvalidIdentityToken, c.NotBefore.UTC().Format(time.RFC3339))
	case c.IssuedAt != nil && now.Add(webSkew).Before(c.IssuedAt.Time):
		return fmt.Errorf("%w: issued in the future (%s)", ErrInvalidIdentityToken, c.IssuedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// trusts checks a verified token's subject and claims against the
// trust's patterns. The subject must be 1-255 printable characters.
func trusts(t *lease.OIDCTrust, c *webClaims, claims map[string]json.RawMessage) error {
	if c.Subject == "" || len(c.Subject) > lease.MaxSubject || !lease.Printable(c.Subject) {
		return fmt.Errorf("%w: sub must be 1-%d printable characters", ErrInvalidIdentityToken, lease.MaxSubject)
	}
	if t.Subject != "" && !lease.MatchLike(t.Subject, c.Subject) {
		return fmt.Errorf("%w: subject %q does not match %q", ErrNotTrusted, c.Subject, t.Subject)
	}
	for _, cond := range t.Claims {
		if !cond.Matches(claims[cond.Claim]) {
			return fmt.Errorf("%w: claim %s does not match %q", ErrNotTrusted, cond.Claim, cond.Pattern)
		}
	}
	return nil
}

// webFailure names a web identity refusal for the metrics.
func webFailure(err error) string {
	switch {
	case errors.Is(err, ErrIdentityTokenExpired):
		return "expired"
	case errors.Is(err, ErrNotTrusted):
		return "denied"
	case errors.Is(err, ErrIDPCommunication):
		return "idp"
	}
	return "malformed"
}

// webRefused records a refused web identity: the role asked for and why
// (never the token).
func (a *Authority) webRefused(ctx context.Context, role string, err error) {
	if a.rec == nil {
		return
	}
	e := record.Event{Kind: record.KindDenied, Principal: "web-identity",
		Decision: record.Decision{Effect: record.EffectDeny, Rule: "web identity", Reason: webFailure(err)},
		Details:  map[string]string{"role": clip(role), "error": clip(err.Error())}}
	a.appendLimited(ctx, "", nil, e)
}
