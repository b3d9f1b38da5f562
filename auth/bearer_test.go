package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/sigv4"
)

func TestMCPTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := New(Config{Owner: Owner{AccessKey: "AKIAOWNER", SecretKey: "owner-secret"}, Leases: s})
	l, cred, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "cleo/run-1", Role: "cleo", View: rw("docs/**")})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.MintMCPToken(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, MCPTokenPrefix) || len(tok) != mcpTokenLen {
		t.Fatalf("token %q: want %s and %d characters", tok, MCPTokenPrefix, mcpTokenLen)
	}
	if other, _ := s.MintMCPToken(ctx, l.ID); other == tok {
		t.Fatal("two mints gave the same token")
	}
	bearer := func(h string) (*Principal, error) {
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gw/_nas/mcp", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		return a.AuthenticateBearer(r)
	}
	p, err := bearer("Bearer " + tok)
	if err != nil || p.Lease.ID != l.ID || !p.bearer {
		t.Fatalf("authenticate: %+v, %v", p, err)
	}
	got, err := a.LeaseCredentials(p)
	if err != nil || got.AccessKeyID != cred.AccessKeyID || got.SecretAccessKey != cred.SecretAccessKey {
		t.Fatalf("lease credentials: %v", err)
	}
	if _, _, err := s.Resolve(ctx, got.AccessKeyID, got.SessionToken); err != nil {
		t.Fatalf("the derived session token does not resolve: %v", err)
	}
	if _, err := a.LeaseCredentials(&Principal{Lease: l}); !errors.Is(err, ErrDenied) {
		t.Fatalf("a signed principal got its credentials derived: %v", err)
	}
	unknown := MCPTokenPrefix + strings.Repeat("A", mcpTokenLen-len(MCPTokenPrefix)-1) + "A"
	for name, c := range map[string]struct {
		h    string
		want error
	}{
		"none":        {"", sigv4.ErrMissingAuth},
		"unknown":     {"Bearer " + unknown, sigv4.ErrUnknownKey},
		"owner key":   {"Bearer AKIAOWNER", ErrBadBearer},
		"sigv4":       {"AWS4-HMAC-SHA256 Credential=AKIAOWNER/x", ErrBadBearer},
		"session tok": {"Bearer " + cred.SessionToken, ErrBadBearer},
	} {
		if _, err := bearer(c.h); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	s.SetClock(func() time.Time { return l.ExpiresAt })
	a.now = func() time.Time { return l.ExpiresAt }
	if _, err := bearer("Bearer " + tok); !errors.Is(err, lease.ErrExpired) || !errors.Is(err, sigv4.ErrInvalidToken) {
		t.Errorf("expired lease: %v", err)
	}
	s.SetClock(time.Now)
	a.now = time.Now
	if _, err := s.Revoke(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := bearer("Bearer " + tok); !errors.Is(err, lease.ErrRevoked) || !errors.Is(err, sigv4.ErrUnknownKey) {
		t.Errorf("revoked lease: %v", err)
	}
	if _, err := s.MintMCPToken(ctx, l.ID); !errors.Is(err, lease.ErrRevoked) {
		t.Errorf("minted for a revoked lease: %v", err)
	}
}

func TestParseBearer(t *testing.T) {
	tok := MCPTokenPrefix + strings.Repeat("a", mcpTokenLen-len(MCPTokenPrefix)-1) + "A"
	for h, ok := range map[string]bool{
		"Bearer " + tok:            true,
		"bearer " + tok:            true,
		"BEARER   " + tok:          true,
		"Bearer " + tok + "=":      false,
		"Bearer " + tok + " ":      false,
		"Bearer " + tok[:49]:       false,
		"Bearer " + tok[:49] + "+": false,
		"Basic " + tok:             false,
		"Bearer":                   false,
		"Bearer ":                  false,
		tok:                        false,
	} {
		got, err := ParseBearer(h)
		if (err == nil) != ok || ok && got != tok {
			t.Errorf("ParseBearer(%q) = %q, %v; want ok %v", h, got, err, ok)
		}
	}
}

// FuzzParseBearer checks that the parser never panics, accepts only
// well-formed tokens, and never echoes the header in its errors.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer ", "Bearer nasmcp_", "bearer nasmcp_" + strings.Repeat("x", 43),
		"Bearer nasmcp_" + strings.Repeat("-", 42) + "_", "AWS4-HMAC-SHA256 Credential=a/b", "Bearer \x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, err := ParseBearer(h)
		if err != nil {
			if tok != "" {
				t.Fatalf("a token with an error: %q", tok)
			}
			if len(h) > 8 && strings.Contains(err.Error(), h) {
				t.Fatalf("the error echoes the header: %v", err)
			}
			return
		}
		if len(tok) != mcpTokenLen || !strings.HasPrefix(tok, MCPTokenPrefix) || !strings.HasSuffix(h, tok) {
			t.Fatalf("accepted %q from %q", tok, h)
		}
		for _, c := range tok[len(MCPTokenPrefix):] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("accepted %q: %q is not base64url", tok, c)
			}
		}
	})
}
