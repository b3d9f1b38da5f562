package e2e_test

// Helpers of the lease security suite (lease_*_test.go): the control API
// as the owner or a lease, lease credentials as S3 and STS clients, and
// small assertions on S3 and STS errors.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/s3api"
)

// ctl calls the control API (POST /_nas/v1/NOUN/VERB, SigV4-signed JSON)
// with one set of credentials: the owner's or a lease's.
type ctl struct {
	t     testing.TB
	srv   *nastest.Server
	creds aws.Credentials
}

func ownerCtl(t testing.TB, srv *nastest.Server) *ctl {
	return &ctl{t: t, srv: srv, creds: owner}
}

// as returns the same caller for another test (subtests).
func (c *ctl) as(t testing.TB) *ctl { return &ctl{t: t, srv: c.srv, creds: c.creds} }

// call POSTs args to op and returns the status and decoded answer.
func (c *ctl) call(op string, args any) (int, map[string]any) {
	c.t.Helper()
	body, err := json.Marshal(args)
	must(c.t, err)
	req, err := http.NewRequest(http.MethodPost, c.srv.Endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	must(c.t, err)
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	req.Header.Set("Content-Type", "application/json")
	must(c.t, v4.NewSigner().SignHTTP(context.Background(), c.creds, req, h, "s3", "us-east-1", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	must(c.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s: %d, not JSON: %s", op, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// ok calls op and fails the test unless it answers 200.
func (c *ctl) ok(op string, args any) map[string]any {
	c.t.Helper()
	st, out := c.call(op, args)
	if st != http.StatusOK {
		c.t.Fatalf("%s %v: %d %v", op, args, st, out)
	}
	return out
}

// fails calls op and fails the test unless it answers status with code;
// it returns the error object.
func (c *ctl) fails(op string, args any, status int, code string) map[string]any {
	c.t.Helper()
	st, out := c.call(op, args)
	e, _ := out["error"].(map[string]any)
	if st != status || e == nil || e["code"] != code {
		c.t.Fatalf("%s %v: got %d %v, want %d %s", op, args, st, out, status, code)
	}
	return e
}

// refused calls op and fails the test unless it answers a 4xx error whose
// message says why (a refusal with a reason); it returns the error object.
func (c *ctl) refused(op string, args any, why ...string) map[string]any {
	c.t.Helper()
	st, out := c.call(op, args)
	e, _ := out["error"].(map[string]any)
	if e == nil || st < 400 || st >= 500 {
		c.t.Fatalf("%s %v: got %d %v, want a 4xx refusal", op, args, st, out)
	}
	msg, _ := e["message"].(string)
	for _, w := range why {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			c.t.Fatalf("%s %v: refused (%d %v) without saying %q", op, args, st, e, w)
		}
	}
	return e
}

// leaseInfo is an issued lease as lease/create answers it.
type leaseInfo struct {
	ID, Run, Repo, Branch, Role string
	Principal, OnBehalfOf       string
	ExpiresAt                   time.Time
	Creds                       aws.Credentials
	Raw                         map[string]any
}

func parseLease(t testing.TB, out map[string]any) *leaseInfo {
	t.Helper()
	m, ok := out["lease"].(map[string]any)
	if !ok {
		t.Fatalf("no lease in %v", out)
	}
	s := func(k string) string { v, _ := m[k].(string); return v }
	li := &leaseInfo{ID: s("lease_id"), Run: s("run"), Repo: s("repo"), Branch: s("branch"), Role: s("role"),
		Principal: s("principal"), OnBehalfOf: s("on_behalf_of"), Raw: m,
		Creds: aws.Credentials{AccessKeyID: s("access_key_id"), SecretAccessKey: s("secret_access_key"),
			SessionToken: s("session_token"), Source: "lease"}}
	exp, err := time.Parse(time.RFC3339, s("expires_at"))
	if err != nil {
		t.Fatalf("lease expires_at %q: %v", s("expires_at"), err)
	}
	li.ExpiresAt = exp
	if li.ID == "" || li.Creds.AccessKeyID == "" || li.Creds.SecretAccessKey == "" || li.Creds.SessionToken == "" {
		t.Fatalf("lease without credentials: %v", m)
	}
	return li
}

// newLease issues a lease through lease/create with c's credentials.
func (c *ctl) newLease(args map[string]any) *leaseInfo {
	c.t.Helper()
	if c.creds == owner {
		c.ensureRole(args)
	}
	return parseLease(c.t, c.ok("lease/create", args))
}

// ensureRole defines the role an owner's lease names, as wide as a role
// can be (every action on every path), unless the test defined it: the
// owner's leases are held to their role's envelope.
func (c *ctl) ensureRole(args map[string]any) {
	c.t.Helper()
	role, _ := args["role"].(string)
	repo, _ := args["repo"].(string)
	if role == "" || repo == "" {
		return
	}
	if st, _ := c.call("role/get", map[string]any{"name": role}); st == http.StatusOK {
		return
	}
	c.ok("role/put", map[string]any{"name": role, "repo": repo,
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete", "propose"}}}})
}

// revoke revokes a lease as c.
func (c *ctl) revoke(id string) {
	c.t.Helper()
	c.ok("lease/revoke", map[string]any{"lease_id": id})
}

// commit commits a branch as c and returns the commit ID.
func (c *ctl) commit(repo, branch, msg string) string {
	c.t.Helper()
	out := c.ok("commit/create", map[string]any{"repo": repo, "branch": branch, "message": msg})
	return out["commit"].(map[string]any)["id"].(string)
}

// leaseCtl is the control API with a lease's credentials.
func leaseCtl(t testing.TB, srv *nastest.Server, li *leaseInfo) *ctl {
	return &ctl{t: t, srv: srv, creds: li.Creds}
}

// leaseS3 is an S3 client with a lease's temporary credentials.
func leaseS3(t testing.TB, srv *nastest.Server, li *leaseInfo, opts ...func(*s3.Options)) *s3.Client {
	return credsS3(t, srv, li.Creds, opts...)
}

// credsS3 is an S3 client with any credentials (static provider, so a
// forged token or key goes out as given).
func credsS3(t testing.TB, srv *nastest.Server, c aws.Credentials, opts ...func(*s3.Options)) *s3.Client {
	return newS3(t, srv, clientOpts{creds: c, s3Opts: opts})
}

// newSTS is an STS client on the gateway's S3 endpoint.
func newSTS(t testing.TB, srv *nastest.Server, c aws.CredentialsProvider) *sts.Client {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	closeIdle(t, hc)
	return sts.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: c, RetryMaxAttempts: 1, HTTPClient: hc},
		func(o *sts.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
}

func staticCreds(c aws.Credentials) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}

// alias is the header-less bucket of a branch.
func alias(repo, branch string) string { return s3api.Alias(repo, branch) }

// wantAPIError asserts a smithy API error code (STS).
func wantAPIError(t testing.TB, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want API error %s", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("code %q (%s), want %s", ae.ErrorCode(), ae.ErrorMessage(), code)
	}
}

// rawDo sends one signed request with creds and returns status, headers and
// body; the path is sent exactly as given.
func rawDo(t testing.TB, method, url string, body []byte, creds aws.Credentials, hdr http.Header) (int, http.Header, []byte) {
	t.Helper()
	return do(t, rawRequest(t, method, url, body, time.Now(), creds, hdr))
}

// ownerHas reports whether the owner sees key on repo's branch (via the
// header-less alias) with the given content.
func ownerHas(t testing.TB, c *s3.Client, repo, branch, key string, want []byte) {
	t.Helper()
	got, _ := get(t, c, alias(repo, branch), key)
	wantBytes(t, got, want)
}

// keysOf lists every key a client sees on a bucket (ListObjectsV2, no
// delimiter).
func keysOf(t testing.TB, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	return listAll(t, c, bucket, prefix)
}

// visibleUnder reports whether key lies inside one of the prefixes.
func visibleUnder(key string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// waitUntil sleeps until t (plus a margin for second truncation).
func waitUntil(t time.Time) {
	if d := time.Until(t) + 300*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
}
