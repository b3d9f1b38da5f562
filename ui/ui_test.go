package ui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/nastest"
)

// TestPageHeaders: the page and its assets come from the gateway with a
// CSP that allows nothing from elsewhere and no framing.
func TestPageHeaders(t *testing.T) {
	r := newRoom(t)
	b := r.page()
	for path, ctype := range map[string]string{"/_nas/ui/": "text/html", "/_nas/ui/app.js": "text/javascript", "/_nas/ui/app.css": "text/css",
		"/_nas/ui/icon.svg": "image/svg+xml"} {
		res, body := b.send(http.MethodGet, path, "", "")
		h := res.Header
		if res.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), ctype) || len(body) == 0 {
			t.Errorf("%s: %d %s", path, res.StatusCode, h.Get("Content-Type"))
		}
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	// Nothing from another origin, and no inline script.
	_, page := b.send(http.MethodGet, "/_nas/ui/", "", "")
	for _, bad := range []string{"http://", "https://", "<script>", "onclick=", "javascript:"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	_, js := b.send(http.MethodGet, "/_nas/ui/app.js", "", "")
	if strings.Contains(string(js), "innerHTML") || strings.Contains(string(js), "eval(") {
		t.Error("app.js writes HTML or evaluates strings")
	}
	res, _ := b.send(http.MethodGet, "/_nas/ui", "", "", func(q *http.Request) {})
	if res.Request.URL.Path != "/_nas/ui/" {
		t.Errorf("/_nas/ui went to %s", res.Request.URL.Path)
	}
}

// TestAssetPaths: an asset is looked up by its exact path, so no
// traversal, encoding or doubling reaches anything else.
func TestAssetPaths(t *testing.T) {
	r := newRoom(t)
	b := r.page()
	for _, p := range []string{"/_nas/ui/../../etc/passwd", "/_nas/ui/..%2f..%2fetc%2fpasswd", "/_nas/ui/%2e%2e/kv", "/_nas/ui//app.js",
		"/_nas/ui/app.js/", "/_nas/ui/static/app.js", "/_nas/ui/./app.js", "/_nas/ui/APP.JS", "/_nas/ui/app.js%00", "/_nas/ui/index.html",
		"/_nas/ui/..\\..\\credentials", "/_nas/ui/ui.go", "/_nas/ui/doc.go"} {
		req, err := http.NewRequest(http.MethodGet, r.srv.Endpoint+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written, not cleaned by the client
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	if res, _ := b.send(http.MethodPost, "/_nas/ui/app.js", "", ""); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST an asset: %d", res.StatusCode)
	}
}

// TestSignIn: only the owner's keys sign in, a failure says nothing of
// which key was wrong, and the cookie is HttpOnly, SameSite=Strict and
// scoped to /_nas/.
func TestSignIn(t *testing.T) {
	r := newRoom(t)
	r.seedRepo("docs")
	ru := r.newRun("docs", "run-signin")
	var msgs []string
	for _, k := range [][2]string{{nastest.AccessKey, "wrong"}, {"AKIAWRONG", nastest.SecretKey}, {ru.creds.AccessKeyID, ru.creds.SecretAccessKey}} {
		b := r.page()
		res, body := b.signIn(k[0], k[1])
		if res.StatusCode != http.StatusUnauthorized || b.cookie != "" || len(res.Cookies()) != 0 {
			t.Fatalf("sign in as %s: %d %s", k[0], res.StatusCode, body)
		}
		msgs = append(msgs, string(body))
	}
	if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
		t.Errorf("failures differ: %q", msgs)
	}
	// A sign-in form from another site is refused before the keys are looked at.
	evil := r.page()
	evil.origin = "http://evil.example"
	if res, _ := evil.signIn(nastest.AccessKey, nastest.SecretKey); res.StatusCode != http.StatusForbidden || evil.cookie != "" {
		t.Errorf("cross-origin sign-in: %d", res.StatusCode)
	}
	b := r.page()
	res, _ := b.signIn(nastest.AccessKey, nastest.SecretKey)
	if res.StatusCode != 200 || b.cookie == "" || b.csrf == "" {
		t.Fatalf("owner sign-in: %d", res.StatusCode)
	}
	var c *http.Cookie
	for _, k := range res.Cookies() {
		c = k
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/_nas/" || c.Secure || c.MaxAge <= 0 {
		t.Errorf("cookie: %+v", c)
	}
	if strings.Contains(c.Value, nastest.SecretKey) || strings.Contains(c.Value, nastest.AccessKey) {
		t.Error("the cookie carries the keys")
	}
	if code, _ := b.call("repo/list", "{}"); code != 200 {
		t.Fatalf("repo/list with the cookie: %d", code)
	}
	// The sign-in and the failures are in the flight recorder.
	var recs apiv1.RecordListResponse
	r.do(r.owner, apiv1.RecordListRequest{Kinds: []string{"session.issued", "denied"}}, &recs)
	signIns, failures := 0, 0
	for _, e := range recs.Records {
		switch {
		case e.Kind == "session.issued" && e.Details["via"] == "control room sign-in":
			signIns++
		case e.Kind == "denied" && e.Principal == "control-room sign-in":
			failures++
		}
	}
	if signIns != 1 || failures < 1 {
		t.Errorf("recorded %d sign-ins and %d failures: %+v", signIns, failures, recs.Records)
	}
	// The page can learn its CSRF token again after a reload.
	b2 := &browserish{r: r, origin: b.origin, cookie: b.cookie}
	if res, body := b2.send(http.MethodGet, "/_nas/ui/session", "", ""); res.StatusCode != 200 || !strings.Contains(string(body), b.csrf) {
		t.Errorf("session: %d %s", res.StatusCode, body)
	}
	b2.cookie = ""
	if res, _ := b2.send(http.MethodGet, "/_nas/ui/session", "", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("session without a cookie: %d", res.StatusCode)
	}
}

// TestCookieRequests: hostile uses of a live cookie on the control API,
// S3 and STS.
func TestCookieRequests(t *testing.T) {
	r := newRoom(t)
	r.seedRepo("docs")
	b := r.page()
	if res, _ := b.signIn(nastest.AccessKey, nastest.SecretKey); res.StatusCode != 200 {
		t.Fatal("sign in")
	}
	cases := map[string]func(*http.Request){
		"forged csrf":        func(q *http.Request) { q.Header.Set(auth.CSRFHeader, "forged") },
		"no csrf":            func(q *http.Request) { q.Header.Del(auth.CSRFHeader) },
		"cross origin":       func(q *http.Request) { q.Header.Set("Origin", "http://evil.example") },
		"cross site fetch":   func(q *http.Request) { q.Header.Set("Sec-Fetch-Site", "cross-site") },
		"no origin headers":  func(q *http.Request) { q.Header.Del("Origin"); q.Header.Del("Sec-Fetch-Site") },
		"with authorization": func(q *http.Request) { q.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIA/x") },
	}
	for name, spoil := range cases {
		if code, ecode := b.call("repo/list", "{}", spoil); code != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, code, ecode)
		}
	}
	// A cookie beside a valid owner signature is refused too.
	req, _ := http.NewRequest(http.MethodPost, r.srv.Endpoint+"/_nas/v1/repo/list", strings.NewReader("{}"))
	sum := sha256.Sum256([]byte("{}"))
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	if err := v4.NewSigner().SignHTTP(context.Background(), ownerCreds, req, hex.EncodeToString(sum[:]), "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: b.cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a signed request with the cookie: %d", res.StatusCode)
	}
	// The S3 door does not take the cookie: not alone, not beside a signature.
	ctx := context.Background()
	s3c := r.s3(ownerCreds)
	withCookie := func(o *s3.Options) {
		o.HTTPClient = cookieClient{c: b.cookie}
	}
	if _, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("docs"), Key: aws.String("docs/notes.md")}, withCookie); err == nil ||
		!strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("S3 GET signed by the owner with the cookie: %v", err)
	}
	if res, body := b.send(http.MethodGet, "/docs/docs/notes.md", "", ""); res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "AccessDenied") {
		t.Errorf("S3 GET with the cookie alone: %d %s", res.StatusCode, body)
	}
	if res, _ := b.send(http.MethodPut, "/docs/docs/evil.md", "text/plain", "evil"); res.StatusCode != http.StatusForbidden {
		t.Errorf("S3 PUT with the cookie alone: %d", res.StatusCode)
	}
	if res, _ := b.send(http.MethodPost, "/", "application/x-www-form-urlencoded", "Action=GetCallerIdentity&Version=2011-06-15"); res.StatusCode < 400 {
		t.Errorf("STS with the cookie: %d", res.StatusCode)
	}
	if code, _ := b.call("repo/list", "{}"); code != 200 {
		t.Errorf("the cookie stopped working: %d", code)
	}
}

// TestSessionEnds: a signed-out cookie, an expired one and one of old
// owner keys do not act; a session survives a restart.
func TestSessionEnds(t *testing.T) {
	r := newRoom(t)
	b := r.page()
	b.signIn(nastest.AccessKey, nastest.SecretKey)
	// Sign-out needs the CSRF token.
	if res, _ := b.send(http.MethodPost, "/_nas/ui/signout", "", "", func(q *http.Request) { q.Header.Del(auth.CSRFHeader) }); res.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without CSRF: %d", res.StatusCode)
	}
	if code, _ := b.call("repo/list", "{}"); code != 200 {
		t.Fatalf("before sign-out: %d", code)
	}
	res, _ := b.send(http.MethodPost, "/_nas/ui/signout", "", "")
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("sign-out: %d", res.StatusCode)
	}
	if code, ecode := b.call("repo/list", "{}"); code != http.StatusForbidden || ecode != "Unauthenticated" {
		t.Errorf("a signed-out cookie reused: %d %s", code, ecode)
	}
	// Expired: the session's clock runs past its end.
	b2 := r.page()
	b2.signIn(nastest.AccessKey, nastest.SecretKey)
	r.srv.Gateway.Leases.SetClock(func() time.Time { return time.Now().Add(auth.WebSessionTTL + time.Minute) })
	if code, ecode := b2.call("repo/list", "{}"); code != http.StatusForbidden || ecode != "Unauthenticated" {
		t.Errorf("an expired session: %d %s", code, ecode)
	}
	r.srv.Gateway.Leases.SetClock(time.Now)
	// A restart keeps the session (it lives in kv).
	b3 := r.page()
	b3.signIn(nastest.AccessKey, nastest.SecretKey)
	dir, addr := r.srv.DataDir, r.srv.Addr
	r.srv.Stop()
	r.srv = nastest.Start(t, nastest.Options{DataDir: dir, Addr: addr})
	if code, _ := b3.call("repo/list", "{}"); code != 200 {
		t.Errorf("after a restart: %d", code)
	}
}

// cookieClient is an S3 client's transport that adds the session cookie.
type cookieClient struct{ c string }

func (k cookieClient) Do(q *http.Request) (*http.Response, error) {
	q.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: k.c})
	return http.DefaultClient.Do(q)
}
