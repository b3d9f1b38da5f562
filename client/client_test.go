package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/apiv1"
)

func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	clearCredentialEnv(t, dir)
	if _, _, err := Resolve(Source{DataDir: dir}); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("no credentials anywhere: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "credentials"), []byte(`{"access_key":"DATAKEY","secret_key":"datasecret"}`), 0o600)
	cfg, _, err := Resolve(Source{DataDir: dir})
	if err != nil || cfg.Credentials.AccessKeyID != "DATAKEY" || cfg.Endpoint != DefaultEndpoint {
		t.Fatalf("data dir: %+v %v", cfg, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AWSKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "awssecret")
	t.Setenv("AWS_SESSION_TOKEN", "awstoken")
	t.Setenv("AWS_ENDPOINT_URL", "http://aws.example:1/")
	// A local gateway's generated credentials beat AWS_* (keys meant for
	// another S3 service must not shadow them); the endpoint still follows
	// AWS_ENDPOINT_URL when nothing else names one.
	cfg, _, _ = Resolve(Source{DataDir: dir})
	if cfg.Credentials.AccessKeyID != "DATAKEY" || cfg.Credentials.SessionToken != "" {
		t.Fatalf("data dir beside AWS_*: %+v", cfg)
	}
	cfg, _, _ = Resolve(Source{DataDir: t.TempDir()})
	if cfg.Credentials.AccessKeyID != "AWSKEY" || cfg.Credentials.SessionToken != "awstoken" || cfg.Endpoint != "http://aws.example:1" {
		t.Fatalf("AWS_*: %+v", cfg)
	}
	t.Setenv("NAS_ACCESS_KEY", "NASKEY")
	t.Setenv("NAS_SECRET_KEY", "nassecret")
	t.Setenv("NAS_ENDPOINT", "http://nas.example:2")
	cfg, _, _ = Resolve(Source{DataDir: dir})
	// The set comes from NAS_*: no AWS session token leaks into it.
	if cfg.Credentials.AccessKeyID != "NASKEY" || cfg.Credentials.SessionToken != "" || cfg.Endpoint != "http://nas.example:2" {
		t.Fatalf("NAS_*: %+v", cfg)
	}
	cfg, _, _ = Resolve(Source{AccessKey: "FLAGKEY", SecretKey: "flagsecret", Endpoint: "http://flag:3", DataDir: dir})
	if cfg.Credentials.AccessKeyID != "FLAGKEY" || cfg.Endpoint != "http://flag:3" {
		t.Fatalf("flags: %+v", cfg)
	}
	lf := filepath.Join(dir, "lease.json")
	os.WriteFile(lf, []byte(`{"lease_id":"lse_1","endpoint":"http://lease:4","repo":"r","branch":"b/run",
		"access_key_id":"ASIALEASE","secret_access_key":"ls","session_token":"tok"}`), 0o600)
	cfg, got, err := Resolve(Source{LeaseJSON: lf, DataDir: dir})
	if err != nil || got == nil || got.Branch != "b/run" || cfg.Credentials.SessionToken != "tok" || cfg.Endpoint != "http://lease:4" {
		t.Fatalf("lease file: %+v %+v %v", cfg, got, err)
	}
	os.WriteFile(lf, []byte(`{"lease_id":"lse_1"}`), 0o600)
	if _, _, err := Resolve(Source{LeaseJSON: lf}); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("a lease file without credentials: %v", err)
	}
}

func TestEscapeKey(t *testing.T) {
	for key, want := range map[string]string{
		"a/b.txt":   "a/b.txt",
		"a b+c":     "a%20b%2Bc",
		"../x//y":   "../x//y",
		"é?#%":      "%C3%A9%3F%23%25",
		"~-_.":      "~-_.",
		"\x00\xff/": "%00%FF/",
	} {
		if got := EscapeKey(key); got != want {
			t.Errorf("EscapeKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// FuzzEscapeKey: one percent-decode gives the key back, byte for byte.
func FuzzEscapeKey(f *testing.F) {
	for _, s := range []string{"", "a/b", "..//%2F", "é", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got, err := url.PathUnescape(EscapeKey(key))
		if err != nil || got != key {
			t.Fatalf("%q -> %q -> %q (%v)", key, EscapeKey(key), got, err)
		}
	})
}

// FuzzParseError: any answer body becomes an *Error, never a panic.
func FuzzParseError(f *testing.F) {
	f.Add(403, `{"error":{"code":"Unauthenticated","message":"m","details":{"reason":"expired"}}}`)
	f.Add(404, `<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>gone</Message></Error>`)
	f.Add(503, ``)
	f.Add(500, `{"error":null}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		var e *Error
		if err := parseError("op", resp); !errors.As(err, &e) || e.Status != status {
			t.Fatalf("parseError: %v", err)
		}
	})
}

func TestErrorsAndRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Path {
		case "/_nas/v1/flaky/op":
			if n < 3 {
				w.WriteHeader(503)
				return
			}
			w.Write([]byte(`{"ok":true}`))
		case "/_nas/v1/denied/op":
			w.WriteHeader(403)
			w.Write([]byte(`{"error":{"code":"Unauthenticated","message":"lease ended","details":{"reason":"revoked"}}}`))
		case "/repo/short":
			w.Header().Set("Content-Length", "10")
			w.Write([]byte("12345")) // the connection ends before 10 bytes
		case "/repo/missing":
			w.WriteHeader(404)
			w.Write([]byte(`<Error><Code>NoSuchKey</Code><Message>no</Message></Error>`))
		}
	}))
	defer srv.Close()
	c := New(Config{Endpoint: srv.URL, Credentials: aws.Credentials{AccessKeyID: "K", SecretAccessKey: "S"}, Attempts: 4, Backoff: time.Millisecond})
	ctx := context.Background()

	var out struct{ OK bool }
	if err := c.Do(ctx, testOp("flaky/op"), &out); err != nil || !out.OK || calls.Load() != 3 {
		t.Fatalf("a 503 twice, then an answer: %v %v after %d calls", out, err, calls.Load())
	}
	calls.Store(0)
	err := c.Do(ctx, testOp("denied/op"), nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != "Unauthenticated" || e.Reason != "revoked" || calls.Load() != 1 {
		t.Fatalf("a refusal is not retried and keeps its reason: %#v after %d calls", err, calls.Load())
	}
	err = c.Get(ctx, Object{Repo: "repo", Key: "missing"}, "", 0, -1, func(io.Reader, Info) error { return nil })
	if Code(err) != "NoSuchKey" {
		t.Fatalf("S3 error: %v", err)
	}
	calls.Store(0)
	err = c.Get(ctx, Object{Repo: "repo", Key: "short"}, "", 0, -1, func(r io.Reader, _ Info) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err == nil || !Retryable(err) || calls.Load() != 4 {
		t.Fatalf("a body cut short is an error, retried and then returned: %v after %d calls", err, calls.Load())
	}
	// The gateway gone: Unreachable, after the bounded retries.
	dead := New(Config{Endpoint: "http://127.0.0.1:1", Credentials: aws.Credentials{AccessKeyID: "K", SecretAccessKey: "S"}, Attempts: 2, Backoff: time.Millisecond})
	if err := dead.Do(ctx, testOp("x/y"), nil); Code(err) != "Unreachable" || !Retryable(err) {
		t.Fatalf("unreachable: %v", err)
	}
}

// TestCallSendsIdempotencyKey: every control call carries a fresh key in
// the idempotency header, the same on each retry of the call, and the
// body as the request type encodes it (never rewritten to hold the key).
func TestCallSendsIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys, bodies = append(keys, r.Header.Get(apiv1.IdempotencyHeader)), append(bodies, string(b))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	c := New(Config{Endpoint: srv.URL, Credentials: aws.Credentials{AccessKeyID: "K", SecretAccessKey: "S"}, Backoff: time.Millisecond})
	ctx := context.Background()
	if err := c.Do(ctx, testOp("x/y"), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, testOp("x/y"), nil); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || !strings.HasPrefix(keys[0], "ik_") || keys[0] != keys[1] || keys[1] == keys[2] {
		t.Fatalf("keys %q: want one key on both tries of the first call and another for the second", keys)
	}
	for _, b := range bodies {
		if b != "{}" {
			t.Fatalf("body %q: want the request as encoded", b)
		}
	}
}

// testOp is a request with no arguments for operation op.
type testOp string

func (o testOp) Op() string { return string(o) }

// MarshalJSON sends no arguments.
func (testOp) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }
