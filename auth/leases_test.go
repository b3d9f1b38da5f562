package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

func newStore(t testing.TB) *Leases {
	t.Helper()
	db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := OpenLeases(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rw(paths ...string) []lease.Rule {
	var out []lease.Rule
	for _, p := range paths {
		out = append(out, lease.Rule{Path: p, Actions: []lease.Action{lease.List, lease.Read, lease.Write}})
	}
	return out
}

func TestIssueResolveRevoke(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	l, cred, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "cleo/run-1", Role: "cleo", View: rw("/shared/launch/**")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cred.SessionToken, cred.SecretAccessKey) {
		t.Fatal("the secret appears in the session token")
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(cred.SessionToken, ".")[1])
	if strings.Contains(string(payload), cred.SecretAccessKey) {
		t.Fatal("the secret appears in the token's claims")
	}
	got, secret, err := s.Resolve(ctx, cred.AccessKeyID, cred.SessionToken)
	if err != nil || secret != cred.SecretAccessKey || got.ID != l.ID {
		t.Fatalf("resolve: %v", err)
	}
	if l.Paths[0] != "shared/launch/**" || l.ExpiresAt.Sub(l.IssuedAt) != lease.DefaultTTL {
		t.Fatalf("lease: %+v", l)
	}
	// Forged and foreign tokens.
	for name, tok := range map[string]string{
		"empty":     "",
		"garbage":   "x.y.z",
		"alg none":  noneToken(l),
		"other key": otherKeyToken(t, l),
		"edited":    editClaims(cred.SessionToken),
	} {
		if _, _, err := s.Resolve(ctx, cred.AccessKeyID, tok); !errors.Is(err, lease.ErrBadToken) {
			t.Errorf("%s token: %v", name, err)
		}
	}
	if _, _, err := s.Resolve(ctx, "ASIAOTHER", cred.SessionToken); !errors.Is(err, lease.ErrBadToken) {
		t.Errorf("token with another access key: %v", err)
	}
	// Child, then revoke the parent: the child dies too.
	child, ccred, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "cleo/run-1", View: []lease.Rule{{Path: "shared/launch/notes/**", Actions: []lease.Action{lease.Read}}}, Parent: got})
	if err != nil {
		t.Fatal(err)
	}
	if child.Parent == nil || *child.Parent != l.ID || child.Run != l.Run {
		t.Fatalf("child: %+v", child)
	}
	ids, err := s.Revoke(ctx, l.ID)
	if err != nil || len(ids) != 2 {
		t.Fatalf("revoke: %v %v", ids, err)
	}
	if _, _, err := s.Resolve(ctx, ccred.AccessKeyID, ccred.SessionToken); !errors.Is(err, lease.ErrRevoked) {
		t.Fatalf("child after parent revoked: %v", err)
	}
	if _, _, err := s.Resolve(ctx, cred.AccessKeyID, cred.SessionToken); !errors.Is(err, lease.ErrRevoked) {
		t.Fatalf("replayed after revoke: %v", err)
	}
	if _, _, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "cleo/run-1", View: rw("shared/launch/**"), Parent: got}); err == nil {
		t.Fatal("a revoked lease minted a child")
	}
}

func noneToken(l *lease.Lease) string {
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims{Lease: l.ID, RegisteredClaims: jwt.RegisteredClaims{Issuer: issuer, Subject: l.AccessKeyID}}).
		SignedString(jwt.UnsafeAllowNoneSignatureType)
	return tok
}

func otherKeyToken(t *testing.T, l *lease.Lease) string {
	k := &keys{Token: []byte("not the gateway's key, 32 bytes!")}
	tok, err := k.token(l.ID, l.AccessKeyID, l.IssuedAt, l.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// editClaims swaps the lease ID in the payload without re-signing.
func editClaims(tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	p = []byte(strings.Replace(string(p), `"lid":"lse_`, `"lid":"lse_x`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	s.SetClock(func() time.Time { return now })
	_, cred, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("**"), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, _, err := s.Resolve(ctx, cred.AccessKeyID, cred.SessionToken); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("expired lease: %v", err)
	}
	if _, _, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("**"), TTL: 25 * time.Hour}); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("ttl over 24h: %v", err)
	}
}

func TestChildNeverWider(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	p, _, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", TTL: time.Hour, Budgets: lease.Budgets{BytesRead: 1000},
		View: []lease.Rule{{Path: "a/**", Actions: []lease.Action{lease.Read, lease.List}}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]lease.Request{
		"path":   {View: []lease.Rule{{Path: "b/**", Actions: []lease.Action{lease.Read}}}},
		"glob":   {View: []lease.Rule{{Path: "**", Actions: []lease.Action{lease.Read}}}},
		"action": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Write}}}},
		"open":   {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, TTL: 0},
		"expiry": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, TTL: 2 * time.Hour},
		"budget": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, Budgets: lease.Budgets{BytesRead: 2000}},
		"branch": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, Branch: "other"},
		"egress": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, Egress: true},
		"secret": {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, SensitivityMax: "secret"},
		"repo":   {View: []lease.Rule{{Path: "a/x", Actions: []lease.Action{lease.Read}}}, Repo: "other"},
	} {
		if r.Repo == "" {
			r.Repo = "data"
		}
		if r.Branch == "" {
			r.Branch = "b"
		}
		r.Parent = p
		c, _, err := s.Issue(ctx, r)
		if name == "open" {
			// An open expiry is capped at the parent's, not refused.
			if err != nil || c.ExpiresAt.After(p.ExpiresAt) {
				t.Errorf("child expiry: %v %v", err, c)
			}
			continue
		}
		if !errors.Is(err, lease.ErrWider) {
			t.Errorf("child wider in %s: %v", name, err)
		}
	}
}

// TestBudgets charges a lease and its child, with meters in the process
// and charged in kv (SetShared), which must agree.
func TestBudgets(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "meters", true: "shared"}[shared], func(t *testing.T) {
			s := newStore(t)
			if shared {
				s.SetShared(slog.New(slog.DiscardHandler))
			}
			testBudgets(t, s)
		})
	}
}

func testBudgets(t *testing.T, s *Leases) {
	ctx := context.Background()
	p, _, _ := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("**"), Budgets: lease.Budgets{Requests: 3, BytesRead: 100}})
	c, _, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("x/**"), Parent: p})
	if err != nil {
		t.Fatal(err)
	}
	if c.Budgets.Requests != 3 || c.Budgets.BytesRead != 100 {
		t.Fatalf("child inherits the parent's remaining budgets: %+v", c.Budgets)
	}
	chain := func(l *lease.Lease) []*lease.Lease {
		ls, err := s.Chain(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	now := time.Now()
	if v, _ := s.reserve(ctx, chain(c), 60, readBudget); v.Decision != lease.Allow {
		t.Fatal(v)
	}
	// The child's reads were charged to the parent too.
	if v, _ := s.reserve(ctx, chain(p), 50, readBudget); v.Decision != lease.OverBudget {
		t.Fatalf("parent over its read budget: %v", v)
	}
	// A charge so large it would wrap around is refused, not wrapped.
	if v, _ := s.reserve(ctx, chain(p), 1<<63-1, readBudget); v.Decision != lease.OverBudget {
		t.Fatalf("an overflowing charge: %v", v)
	}
	if v, _ := s.reserve(ctx, chain(p), -10, readBudget); v.Decision == lease.Allow {
		t.Fatal("a negative charge was accepted (it would refund the budget)")
	}
	for i := 0; i < 3; i++ {
		if v, _ := s.admit(ctx, chain(p), now); v.Decision != lease.Allow {
			t.Fatalf("request %d: %v", i, v)
		}
	}
	if v, _ := s.admit(ctx, chain(c), now); v.Decision != lease.OverBudget {
		t.Fatalf("child after the parent's requests are spent: %v", v)
	}
	if r := s.Remaining(ctx, c); r.Requests != 0 || r.BytesRead != 40 || r.BytesWritten != -1 {
		t.Fatalf("remaining: %+v", r)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCheckAndGrants(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	l, _, _ := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: []lease.Rule{
		{Path: "shared/**", Actions: []lease.Action{lease.List, lease.Read}},
		{Path: "work/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write, lease.Delete}},
	}})
	now := time.Now()
	for _, c := range []struct {
		a                 lease.Action
		repo, branch, key string
		want              lease.Decision
	}{
		{lease.Read, "data", "b", "shared/x", lease.Allow},
		{lease.Write, "data", "b", "shared/x", lease.Denied},
		{lease.Read, "data", "b", "secret/x", lease.NotFound},
		{lease.Read, "data", "main", "shared/x", lease.NotFound},
		{lease.Read, "other", "b", "shared/x", lease.NotFound},
		{lease.Read, "data", "b", "sharedx", lease.NotFound},
		{lease.Delete, "data", "b", "work/a/b", lease.Allow},
		{lease.List, "data", "b", "", lease.Allow},
		{lease.Propose, "data", "b", "", lease.Denied},
	} {
		if v := l.Check(c.a, c.repo, c.branch, c.key, now); v.Decision != c.want {
			t.Errorf("%s %s/%s/%s: %v, want %v", c.a, c.repo, c.branch, c.key, v, c.want)
		}
	}
	g, err := s.AddGrant(ctx, l.ID, lease.Grant{Path: "secret/report.pdf", Actions: []lease.Action{lease.Read}, ExpiresAt: now.Add(time.Minute), SingleUse: true})
	if err != nil {
		t.Fatal(err)
	}
	l, _ = s.Get(ctx, l.ID)
	if v := l.Check(lease.Read, "data", "b", "secret/report.pdf", now); v.Decision != lease.Allow {
		t.Fatalf("granted path: %v", v)
	}
	if v := l.Check(lease.Read, "data", "b", "secret/other", now); v.Decision != lease.NotFound {
		t.Fatalf("grant leaks siblings: %v", v)
	}
	v := l.Check(lease.Read, "data", "b", "secret/report.pdf", now)
	if v.SingleUseGrant != g.ID {
		t.Fatalf("a single-use grant must be named for consumption: %+v", v)
	}
	if _, err := s.ConsumeGrant(ctx, l.ID, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeGrant(ctx, l.ID, g.ID); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("a single-use grant consumed twice: %v", err)
	}
	l, _ = s.Get(ctx, l.ID)
	if v := l.Check(lease.Read, "data", "b", "secret/report.pdf", now); v.Decision != lease.NotFound {
		t.Fatalf("single-use grant still visible after use: %v", v)
	}
	if got := l.Ranges(lease.List, now); len(got) != 2 || got[0].Start != "shared/" || got[1].Start != "work/" {
		t.Fatalf("ranges: %+v", got)
	}
}

// TestWriteUpTo: a write of unknown length reserves what the chain has
// left, keeps what it used and is refused when it needed more.
func TestWriteUpTo(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := New(Config{Leases: s})
	par, _, _ := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("**"), Budgets: lease.Budgets{BytesWritten: 100}})
	child, _, err := s.Issue(ctx, lease.Request{Repo: "data", Branch: "b", View: rw("x/**"), Parent: par, Budgets: lease.Budgets{BytesWritten: 80}})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := s.Chain(ctx, child)
	if err != nil {
		t.Fatal(err)
	}
	p := &Principal{Lease: child, chain: chain}
	c, err := a.WriteUpTo(ctx, p, Target{Repo: "data", Key: "x/a"}, 1000)
	if err != nil || c.Reserved() != 80 {
		t.Fatalf("reserved %v, %v; want the child's 80", c, err)
	}
	if err := c.Settle(ctx, 30); err != nil {
		t.Fatal(err)
	}
	if r := s.Remaining(ctx, child); r.BytesWritten != 50 {
		t.Fatalf("after writing 30: %+v", r)
	}
	c, _ = a.WriteUpTo(ctx, p, Target{Repo: "data", Key: "x/b"}, 1000)
	if c.Reserved() != 50 {
		t.Fatalf("reserved %d, want 50", c.Reserved())
	}
	if err := c.Settle(ctx, 51); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("a write beyond the reservation: %v", err)
	}
	if r := s.Remaining(ctx, par); r.BytesWritten != 70 {
		t.Fatalf("the refused write was not refunded: %+v", r)
	}
	owner, err := a.WriteUpTo(ctx, &Principal{}, Target{}, 7)
	if err != nil || owner.Reserved() != 7 || owner.Settle(ctx, 8) != nil {
		t.Fatalf("owner: %v %v", owner, err)
	}
	if _, err := a.WriteUpTo(ctx, p, Target{}, -1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative bound: %v", err)
	}
}
