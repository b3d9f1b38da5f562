package lease

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OIDCTrust is the web identities a role trusts (STS
// AssumeRoleWithWebIdentity): tokens of one OpenID Connect issuer for one
// audience, optionally only for subjects matching Subject and with claims
// matching Claims. The keys come from the issuer's discovery document
// (Issuer/.well-known/openid-configuration) unless JWKS holds a static
// key set, in which case the issuer is never contacted and Issuer is only
// compared with the token's iss.
type OIDCTrust struct {
	Issuer   string          `json:"issuer"`
	JWKS     json.RawMessage `json:"jwks,omitempty"`
	Audience string          `json:"audience"`
	// Subject is an IAM-style pattern over the token's sub ("*" any
	// characters, "?" one); empty means any subject.
	Subject string           `json:"subject,omitempty"`
	Claims  []ClaimCondition `json:"claims,omitempty"`
}

// ClaimCondition requires a claim of the token to match a pattern. A
// string claim matches when Pattern matches it, a boolean or number when
// Pattern matches its JSON text ("true", "42"), an array when one of its
// strings matches; a missing claim or any other value never matches.
type ClaimCondition struct {
	Claim   string `json:"claim"`
	Pattern string `json:"pattern"`
}

// Limits on what a trust and a token may hold.
const (
	maxClaimName  = 128
	maxPattern    = 1024
	MaxSubject    = 255  // OpenID Connect Core: sub is at most 255 ASCII characters
	MaxClaimValue = 4096 // a longer claim value never matches
	MaxJWKS       = 64 << 10
)

// reservedClaims are checked by the verifier itself (or by Subject), so a
// condition on them is refused as a mistake.
var reservedClaims = []string{"iss", "aud", "exp", "nbf", "iat", "sub"}

// ParseClaimCondition parses "claim=pattern" (split at the first "="),
// as `nas role put --oidc-claim` takes it.
func ParseClaimCondition(s string) (ClaimCondition, error) {
	name, pattern, ok := strings.Cut(s, "=")
	if !ok {
		return ClaimCondition{}, fmt.Errorf("claim condition %q: want claim=pattern: %w", clipped(s), ErrInvalid)
	}
	c := ClaimCondition{Claim: name, Pattern: pattern}
	if err := c.Validate(); err != nil {
		return ClaimCondition{}, err
	}
	return c, nil
}

// String returns the condition as ParseClaimCondition reads it.
func (c ClaimCondition) String() string { return c.Claim + "=" + c.Pattern }

// Validate checks a condition: a claim name of 1-128 printable ASCII
// characters without "=" or spaces, not one the verifier checks itself,
// and a pattern of 1-1024 printable UTF-8 characters.
func (c ClaimCondition) Validate() error {
	if c.Claim == "" || len(c.Claim) > maxClaimName {
		return fmt.Errorf("claim name %q: 1-%d characters: %w", clipped(c.Claim), maxClaimName, ErrInvalid)
	}
	for i := 0; i < len(c.Claim); i++ {
		if b := c.Claim[i]; b <= ' ' || b >= 0x7f || b == '=' {
			return fmt.Errorf("claim name %q: printable ASCII without spaces or '=': %w", clipped(c.Claim), ErrInvalid)
		}
	}
	for _, r := range reservedClaims {
		if c.Claim == r {
			return fmt.Errorf("claim %s is checked by the trust itself (issuer, audience, subject, times): %w", r, ErrInvalid)
		}
	}
	if err := validPattern("claim "+c.Claim, c.Pattern); err != nil {
		return err
	}
	if c.Pattern == "" {
		return fmt.Errorf("claim %s: empty pattern: %w", c.Claim, ErrInvalid)
	}
	return nil
}

// validPattern checks a pattern: at most 1024 bytes of printable UTF-8.
func validPattern(what, p string) error {
	if len(p) > maxPattern {
		return fmt.Errorf("%s: pattern longer than %d bytes: %w", what, maxPattern, ErrInvalid)
	}
	if !Printable(p) {
		return fmt.Errorf("%s: pattern must be printable UTF-8: %w", what, ErrInvalid)
	}
	return nil
}

// Printable reports whether s is valid UTF-8 without control characters.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Validate checks a trust: an issuer URL (https, or http to a loopback
// host; no user, query or fragment), an audience, valid subject and
// claim patterns, and that the patterns name someone: a subject that is
// not only wildcards, or a claim condition. The key set is checked where it is parsed (package
// auth).
func (t *OIDCTrust) Validate() error {
	if err := ValidIssuer(t.Issuer); err != nil {
		return err
	}
	if t.Audience == "" || len(t.Audience) > maxPattern || !Printable(t.Audience) {
		return fmt.Errorf("oidc audience %q: 1-%d printable characters: %w", clipped(t.Audience), maxPattern, ErrInvalid)
	}
	if err := validPattern("oidc subject", t.Subject); err != nil {
		return err
	}
	if len(t.JWKS) > MaxJWKS {
		return fmt.Errorf("oidc jwks: larger than %d bytes: %w", MaxJWKS, ErrInvalid)
	}
	for _, c := range t.Claims {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	if strings.Trim(t.Subject, "*?") == "" && len(t.Claims) == 0 {
		// A public issuer signs tokens for everyone it serves (GitHub
		// Actions for every repository, with the same audience).
		return fmt.Errorf("oidc trust of %s: name the subjects (a subject pattern that is not only wildcards, or a claim condition); otherwise every workload of the issuer could assume the role: %w", clipped(t.Issuer), ErrInvalid)
	}
	return nil
}

// ValidIssuer checks an issuer URL: https with a host, or http to a
// loopback address (a test or a sidecar); no user information, query or
// fragment. The gateway fetches only issuers the owner named, never one a
// token names.
func ValidIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || len(s) > maxPattern || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return fmt.Errorf("oidc issuer %q: want https://HOST[/PATH]: %w", clipped(s), ErrInvalid)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("oidc issuer %q: https is required (http only to a loopback address): %w", clipped(s), ErrInvalid)
}

// IsLoopback reports whether host is "localhost" or a loopback IP.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MatchLike reports whether s matches the IAM-style pattern p (as
// StringLike does): "*" matches any run of characters, "/" and ":"
// included, "?" exactly one character; everything else matches itself.
// Invalid UTF-8 on either side never matches. It runs in O(len(p) x
// len(s)) at worst and never recurses.
func MatchLike(p, s string) bool {
	if !utf8.ValidString(p) || !utf8.ValidString(s) {
		return false
	}
	pr, sr := []rune(p), []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(sr) {
		switch {
		case pi < len(pr) && pr[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pr) && (pr[pi] == '?' || pr[pi] == sr[si]):
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pr) && pr[pi] == '*' {
		pi++
	}
	return pi == len(pr)
}

// Matches reports whether a token's claim value (its raw JSON, nil when
// the token lacks it) satisfies c.
func (c ClaimCondition) Matches(raw json.RawMessage) bool {
	if len(raw) == 0 || len(raw) > MaxClaimValue {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return MatchLike(c.Pattern, s)
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		for _, v := range list {
			if MatchLike(c.Pattern, v) {
				return true
			}
		}
		return false
	}
	var b bool
	var n json.Number
	if json.Unmarshal(raw, &b) == nil || json.Unmarshal(raw, &n) == nil {
		return MatchLike(c.Pattern, strings.TrimSpace(string(raw)))
	}
	return false
}

// WebIdentity names the OpenID Connect identity that assumed a role: the
// token's verified issuer and subject.
type WebIdentity struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// String names the identity in records as "ISSUER SUBJECT": an issuer
// URL holds no space, so the pair reads back unambiguously.
func (w *WebIdentity) String() string {
	if w == nil {
		return ""
	}
	return w.Issuer + " " + w.Subject
}

// clipped bounds a value quoted in an error message.
func clipped(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
