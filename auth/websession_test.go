package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// cookieRequest is a control-API call from the control room's page.
func cookieRequest(tok, csrf string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://gw.test/_nas/v1/repo/list", strings.NewReader("{}"))
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: tok})
	r.Header.Set(CSRFHeader, csrf)
	r.Header.Set("Origin", "http://gw.test")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return r
}

// TestWebSession: only the owner's keys sign in; the cookie acts as the
// owner on the control door alone, with its CSRF token and same origin;
// it dies at sign-out, expiry, idleness and when the owner's keys change.
func TestWebSession(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	o := Owner{AccessKey: "AKIAOWNER", SecretKey: "owner-secret"}
	a := New(Config{Owner: o, Leases: s})
	r0 := httptest.NewRequest(http.MethodPost, "http://gw.test/_nas/ui/signin", nil)
	for _, bad := range [][2]string{{"AKIAOWNER", "wrong"}, {"wrong", "owner-secret"}, {"", ""}, {"AKIAOWNER", "owner-secret "}} {
		start := time.Now()
		_, err := a.SignIn(ctx, r0, bad[0], bad[1])
		if !errors.Is(err, ErrSignIn) {
			t.Fatalf("sign in with %q: %v", bad, err)
		}
		if time.Since(start) < signInDelay {
			t.Errorf("a failed sign-in answered at once")
		}
	}
	in, err := a.SignIn(ctx, r0, o.AccessKey, o.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(cookieRequest(in.Token, in.CSRF), Control)
	if err != nil || !p.IsOwner() || p.AccessKey != o.AccessKey || p.Session == "" {
		t.Fatalf("cookie principal: %+v %v", p, err)
	}
	refused := map[string]func(*http.Request){
		"no csrf":       func(r *http.Request) { r.Header.Del(CSRFHeader) },
		"wrong csrf":    func(r *http.Request) { r.Header.Set(CSRFHeader, otherLast(in.CSRF)) },
		"cross origin":  func(r *http.Request) { r.Header.Set("Origin", "http://evil.test") },
		"cross site":    func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"same site":     func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
		"no origin":     func(r *http.Request) { r.Header.Del("Origin"); r.Header.Del("Sec-Fetch-Site") },
		"authorization": func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x") },
		"presigned":     func(r *http.Request) { r.URL.RawQuery = "X-Amz-Signature=00" },
		"two cookies":   func(r *http.Request) { r.AddCookie(&http.Cookie{Name: SessionCookie, Value: in.Token}) },
	}
	for name, spoil := range refused {
		r := cookieRequest(in.Token, in.CSRF)
		spoil(r)
		if _, err := a.Authenticate(r, Control); !errors.Is(err, ErrDenied) && !errors.Is(err, ErrNoSession) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, d := range []Door{S3, STS} {
		if _, err := a.Authenticate(cookieRequest(in.Token, in.CSRF), d); !errors.Is(err, ErrCookieRefused) {
			t.Errorf("door %d took the cookie: %v", d, err)
		}
	}
	if got, err := a.WebSession(cookieRequest(in.Token, "")); err != nil || got.CSRF != in.CSRF || got.Token != "" {
		t.Fatalf("WebSession: %+v %v", got, err)
	}
	// Other owner keys: the session is dead.
	rotated := New(Config{Owner: Owner{AccessKey: o.AccessKey, SecretKey: "rotated"}, Leases: s})
	if _, err := rotated.Authenticate(cookieRequest(in.Token, in.CSRF), Control); !errors.Is(err, ErrNoSession) {
		t.Errorf("after the owner's keys changed: %v", err)
	}
	// Idle, then expired.
	s.SetClock(func() time.Time { return time.Now().Add(WebSessionIdle + time.Minute) })
	if _, err := a.Authenticate(cookieRequest(in.Token, in.CSRF), Control); !errors.Is(err, ErrNoSession) {
		t.Errorf("idle: %v", err)
	}
	s.SetClock(time.Now)
	in2, err := a.SignIn(ctx, r0, o.AccessKey, o.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	for at := time.Hour; at < WebSessionTTL; at += time.Hour {
		s.SetClock(func() time.Time { return time.Now().Add(at) })
		if _, err := a.Authenticate(cookieRequest(in2.Token, in2.CSRF), Control); err != nil {
			t.Fatalf("active at +%s: %v", at, err)
		}
	}
	s.SetClock(func() time.Time { return time.Now().Add(WebSessionTTL) })
	if _, err := a.Authenticate(cookieRequest(in2.Token, in2.CSRF), Control); !errors.Is(err, ErrNoSession) {
		t.Errorf("past the absolute expiry: %v", err)
	}
	s.SetClock(time.Now)
	// Sign-out ends it for good.
	if err := a.SignOut(cookieRequest(in.Token, in.CSRF)); err != nil {
		t.Fatal(err)
	}
	in3, _ := a.SignIn(ctx, r0, o.AccessKey, o.SecretKey)
	if err := a.SignOut(cookieRequest(in3.Token, "")); !errors.Is(err, ErrCSRF) {
		t.Errorf("sign-out without the CSRF token: %v", err)
	}
	if err := a.SignOut(cookieRequest(in3.Token, in3.CSRF)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(cookieRequest(in3.Token, in3.CSRF), Control); !errors.Is(err, ErrNoSession) {
		t.Errorf("a signed-out cookie: %v", err)
	}
}

// FuzzCookieHeader: whatever a Cookie header holds, the door never
// panics and never lets it in without the live session's exact token.
func FuzzCookieHeader(f *testing.F) {
	s := newStore(f)
	o := Owner{AccessKey: "AKIAOWNER", SecretKey: "owner-secret"}
	a := New(Config{Owner: o, Leases: s})
	in, err := a.SignIn(context.Background(), httptest.NewRequest(http.MethodPost, "http://gw.test/", nil), o.AccessKey, o.SecretKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(SessionCookie+"="+in.Token[:len(in.Token)-1]+"B", in.CSRF)
	f.Add(SessionCookie+"="+in.Token+"; "+SessionCookie+"=x", in.CSRF)
	f.Add(SessionCookie+`="`+in.Token+`"`, in.CSRF)
	f.Add("a=b; "+SessionCookie+"=", "")
	f.Fuzz(func(t *testing.T, header, csrf string) {
		r := cookieRequest("", csrf)
		r.Header.Set("Cookie", header)
		p, err := a.Authenticate(r, Control)
		if err == nil && (len(sessionCookies(r)) != 1 || sessionCookies(r)[0] != in.Token || csrf != in.CSRF || p == nil) {
			t.Fatalf("%q with csrf %q got in", header, csrf)
		}
	})
}

// FuzzParseSessionCookie: the parser never panics, accepts only a token
// of the exact form, and returns it unchanged.
func FuzzParseSessionCookie(f *testing.F) {
	f.Add("nasweb_" + strings.Repeat("A", 43))
	f.Add("nasweb_" + strings.Repeat("A", 42) + "\n")
	f.Add("nasweb_" + strings.Repeat("_", 43))
	f.Add("nasmcp_" + strings.Repeat("A", 43))
	f.Add("")
	f.Add("nasweb_")
	f.Add("nasweb_" + strings.Repeat("A", 42) + "B")
	f.Fuzz(func(t *testing.T, v string) {
		tok, err := ParseSessionCookie(v)
		if err != nil {
			if !errors.Is(err, ErrNoSession) || len(v) > 12 && strings.Contains(err.Error(), v) {
				t.Fatalf("error %v for %q", err, v)
			}
			return
		}
		if tok != v || len(v) != webTokenLen || !strings.HasPrefix(v, webTokenPrefix) || strings.IndexFunc(v[len(webTokenPrefix):], notBase64URL) >= 0 {
			t.Fatalf("accepted %q", v)
		}
	})
}

// otherLast is s with its last character changed (to A, or B when it is
// an A: a token ending in A must not be taken for a wrong one).
func otherLast(s string) string {
	if strings.HasSuffix(s, "A") {
		return s[:len(s)-1] + "B"
	}
	return s[:len(s)-1] + "A"
}
