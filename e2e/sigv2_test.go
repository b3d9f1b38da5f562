package e2e_test

// Signature Version 2 through the real server: the owner and leases sign
// with HMAC-SHA1 (header and presigned URL) and are held to the same
// view, expiry and revocation as with SigV4. The signer below follows
// AWS's "Signing and authenticating REST requests" page on its own, so
// it checks the gateway's verifier rather than repeating it.

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/nastest"
)

// v2Sign returns the SigV2 signature of a string to sign built from its
// parts: resource is the canonicalized resource (bucket, path as sent,
// signed sub-resources), amz the x-amz-* headers to canonicalize.
func v2Sign(secret, method, contentMD5, contentType, date string, amz http.Header, resource string) string {
	var names []string
	canon := map[string]string{}
	for k, vs := range amz {
		n := strings.ToLower(k)
		names = append(names, n)
		canon[n] = strings.Join(vs, ",")
	}
	sort.Strings(names)
	sts := method + "\n" + contentMD5 + "\n" + contentType + "\n" + date + "\n"
	for _, n := range names {
		sts += n + ":" + canon[n] + "\n"
	}
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sts + resource))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// v2Request builds a header-signed request for path (as sent, signed as
// the resource) with the x-amz-* headers of amz; a lease's token goes in
// x-amz-security-token.
func v2Request(t testing.TB, c aws.Credentials, method, endpoint, path string, body []byte, hdr, amz http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, endpoint+path, bytes.NewReader(body))
	must(t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	amz = amz.Clone()
	if amz == nil {
		amz = http.Header{}
	}
	if c.SessionToken != "" {
		amz.Set("X-Amz-Security-Token", c.SessionToken)
	}
	for k, vs := range amz {
		req.Header[k] = vs
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("Date", date)
	resource, _, _ := strings.Cut(path, "?") // the tests sign no sub-resources
	sig := v2Sign(c.SecretAccessKey, method, req.Header.Get("Content-MD5"), req.Header.Get("Content-Type"), date, amz, resource)
	req.Header.Set("Authorization", "AWS "+c.AccessKeyID+":"+sig)
	return req
}

// v2Presign returns a presigned GET URL for path, valid until exp; a
// lease's token rides in the query and is signed as an amz header.
func v2Presign(c aws.Credentials, endpoint, path string, exp time.Time) string {
	return v2PresignMethod(c, http.MethodGet, endpoint, path, exp)
}

// v2PresignMethod is v2Presign for another method.
func v2PresignMethod(c aws.Credentials, method, endpoint, path string, exp time.Time) string {
	expires := strconv.FormatInt(exp.Unix(), 10)
	amz := http.Header{}
	q := url.Values{"AWSAccessKeyId": {c.AccessKeyID}, "Expires": {expires}}
	if c.SessionToken != "" {
		amz.Set("x-amz-security-token", c.SessionToken)
		q.Set("x-amz-security-token", c.SessionToken)
	}
	q.Set("Signature", v2Sign(c.SecretAccessKey, method, "", "", expires, amz, path))
	return endpoint + path + "?" + q.Encode()
}

// wantS3 asserts an S3 error answer.
func wantS3(t testing.TB, what string, st int, body []byte, status int, code string) {
	t.Helper()
	if st != status || xmlCode(body) != code {
		t.Fatalf("%s: %d %s, want %d %s", what, st, body, status, code)
	}
}

func TestSigV2Owner(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t)
	createBucket(t, client(t, srv), "sig-v2")
	body := []byte("signed with HMAC-SHA1")
	sum := md5.Sum(body)
	hdr := http.Header{"Content-Type": {"text/plain"}, "Content-Md5": {base64.StdEncoding.EncodeToString(sum[:])}}
	amz := http.Header{"X-Amz-Meta-Colour": {"blue"}}

	st, _, b := do(t, v2Request(t, owner, http.MethodPut, srv.Endpoint, "/sig-v2/dir/a%20b.txt", body, hdr, amz))
	if st != http.StatusOK {
		t.Fatalf("header-signed PUT: %d %s", st, b)
	}
	st, h, b := do(t, v2Request(t, owner, http.MethodGet, srv.Endpoint, "/sig-v2/dir/a%20b.txt", nil, nil, nil))
	if st != http.StatusOK || !bytes.Equal(b, body) || h.Get("x-amz-meta-colour") != "blue" || h.Get("Content-Type") != "text/plain" {
		t.Fatalf("header-signed GET: %d %v %q", st, h, b)
	}
	// What the SDK reads back was written under SigV2.
	got, _ := get(t, client(t, srv), "sig-v2", "dir/a b.txt")
	wantBytes(t, got, body)

	u := v2Presign(owner, srv.Endpoint, "/sig-v2/dir/a%20b.txt", time.Now().Add(time.Minute))
	if st, b := httpGet(t, u, nil); st != http.StatusOK || !bytes.Equal(b, body) {
		t.Fatalf("presigned GET: %d %q", st, b)
	}
	t.Run("refusals", func(t *testing.T) {
		st, b := httpGet(t, v2Presign(owner, srv.Endpoint, "/sig-v2/dir/a%20b.txt", time.Now().Add(-time.Second)), nil)
		wantS3(t, "expired URL", st, b, http.StatusForbidden, "AccessDenied")
		if !strings.Contains(string(b), "Request has expired") {
			t.Fatalf("expired URL: %s", b)
		}
		st, b = httpGet(t, strings.Replace(u, "Signature=", "Signature=A", 1), nil)
		wantS3(t, "malformed signature", st, b, http.StatusBadRequest, "AuthorizationQueryParametersError")
		tampered := v2Request(t, owner, http.MethodGet, srv.Endpoint, "/sig-v2/dir/a%20b.txt", nil, nil, nil)
		// Flip the signature's first character: the last one before the
		// "=" also holds padding bits, which a change may leave alone.
		sig := tampered.Header.Get("Authorization")
		i := strings.LastIndex(sig, ":") + 1
		flip := "A"
		if sig[i:i+1] == "A" {
			flip = "B"
		}
		tampered.Header.Set("Authorization", sig[:i]+flip+sig[i+1:])
		st, _, b = do(t, tampered)
		wantS3(t, "tampered signature", st, b, http.StatusForbidden, "SignatureDoesNotMatch")
		st, b = httpGet(t, strings.Replace(u, "/a%20b.txt", "/other.txt", 1), nil)
		wantS3(t, "presigned URL for another key", st, b, http.StatusForbidden, "SignatureDoesNotMatch")
		st, b = httpGet(t, v2Presign(owner, srv.Endpoint, "/sig-v2/k", time.Now().Add(8*24*time.Hour)), nil)
		wantS3(t, "URL living past seven days", st, b, http.StatusBadRequest, "AuthorizationQueryParametersError")
	})
	t.Run("x-nas headers are not signed", func(t *testing.T) {
		// SigV2 does not cover x-nas-*: the header could redirect the
		// request to another branch, so it is refused, signed or not.
		req := v2Request(t, owner, http.MethodGet, srv.Endpoint, "/sig-v2/dir/a%20b.txt", nil, http.Header{"X-Nas-Branch": {"main"}}, nil)
		st, _, b := do(t, req)
		wantS3(t, "x-nas-branch", st, b, http.StatusForbidden, "AccessDenied")
		if !strings.Contains(string(b), "not signed") {
			t.Fatalf("x-nas-branch refusal: %s", b)
		}
	})
	t.Run("payload hashes need SigV4", func(t *testing.T) {
		req := v2Request(t, owner, http.MethodPut, srv.Endpoint, "/sig-v2/k", body, nil,
			http.Header{"X-Amz-Content-Sha256": {"STREAMING-UNSIGNED-PAYLOAD-TRAILER"}})
		st, _, b := do(t, req)
		wantS3(t, "aws-chunked under SigV2", st, b, http.StatusBadRequest, "InvalidArgument")
	})
	t.Run("control API refuses SigV2", func(t *testing.T) {
		js := []byte(`{}`)
		req := v2Request(t, owner, http.MethodPost, srv.Endpoint, "/_nas/v1/repo/list", js, http.Header{"Content-Type": {"application/json"}}, nil)
		if st, _, b := do(t, req); st != http.StatusForbidden || !strings.Contains(string(b), "unsigned_payload") {
			t.Fatalf("SigV2 at the control API: %d %s", st, b)
		}
		req, err := http.NewRequest(http.MethodPost, v2PresignMethod(owner, http.MethodPost, srv.Endpoint, "/_nas/v1/repo/list", time.Now().Add(time.Minute)), bytes.NewReader(js))
		must(t, err)
		if st, _, b := do(t, req); st != http.StatusForbidden || !strings.Contains(string(b), "unsigned_payload") {
			t.Fatalf("SigV2 presigned at the control API: %d %s", st, b)
		}
	})
	t.Run("STS refuses SigV2", func(t *testing.T) {
		form := []byte("Action=GetCallerIdentity&Version=2011-06-15")
		req := v2Request(t, owner, http.MethodPost, srv.Endpoint, "/", form, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, nil)
		if st, _, b := do(t, req); st != http.StatusForbidden || !strings.Contains(string(b), "IncompleteSignature") {
			t.Fatalf("SigV2 at STS: %d %s", st, b)
		}
	})
	t.Run("presigned PUT", func(t *testing.T) {
		u := v2PresignMethod(owner, http.MethodPut, srv.Endpoint, "/sig-v2/put.txt", time.Now().Add(time.Minute))
		req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader([]byte("put by URL")))
		must(t, err)
		if st, _, b := do(t, req); st != http.StatusOK {
			t.Fatalf("presigned PUT: %d %s", st, b)
		}
		got, _ := get(t, client(t, srv), "sig-v2", "put.txt")
		wantBytes(t, got, []byte("put by URL"))
		// Every x-amz-* header is in the string to sign: the URL cannot
		// become a copy.
		req, err = http.NewRequest(http.MethodPut, u, nil)
		must(t, err)
		req.Header.Set("X-Amz-Copy-Source", "/sig-v2/dir/a%20b.txt")
		st, _, b := do(t, req)
		wantS3(t, "presigned PUT turned copy", st, b, http.StatusForbidden, "SignatureDoesNotMatch")
	})
}

// TestSigV2Lease: a lease's SigV2 URLs see only its view and die with it.
func TestSigV2Lease(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	short := w.oc.newLease(map[string]any{"repo": w.repo, "role": "run", "fork_from": "main", "ttl": "2s"})
	c, ep := w.li.Creds, w.srv.Endpoint
	in := v2Presign(c, ep, "/door/shared/a.txt", time.Now().Add(time.Hour))
	late := v2Presign(short.Creds, ep, "/door/shared/a.txt", time.Now().Add(time.Hour))
	if st, b := httpGet(t, in, nil); st != http.StatusOK || string(b) != "a" {
		t.Fatalf("lease presigned GET inside the view: %d %s", st, b)
	}
	st, b := httpGet(t, v2Presign(c, ep, "/door/finance/q4.txt", time.Now().Add(time.Hour)), nil)
	wantS3(t, "outside the view", st, b, http.StatusNotFound, "NoSuchKey")
	st, b = httpGet(t, v2Presign(c, ep, "/door/shared/nothing-here", time.Now().Add(time.Hour)), nil)
	wantS3(t, "missing inside the view", st, b, http.StatusNotFound, "NoSuchKey")

	// Header-signed writes land on the lease's branch.
	st, _, b = do(t, v2Request(t, c, http.MethodPut, ep, "/door/shared/v2.txt", []byte("by lease"), nil, nil))
	if st != http.StatusOK {
		t.Fatalf("lease header-signed PUT: %d %s", st, b)
	}
	ownerHas(t, w.own, w.repo, w.li.Branch, "shared/v2.txt", []byte("by lease"))
	st, _, b = do(t, v2Request(t, c, http.MethodPut, ep, "/door/finance/v2.txt", []byte("x"), nil, nil))
	if st != http.StatusNotFound && st != http.StatusForbidden {
		t.Fatalf("lease PUT outside the view: %d %s", st, b)
	}

	// Without its token the lease's key is nobody.
	noToken := c
	noToken.SessionToken = ""
	st, b = httpGet(t, v2Presign(noToken, ep, "/door/shared/a.txt", time.Now().Add(time.Hour)), nil)
	wantS3(t, "lease URL without its token", st, b, http.StatusBadRequest, "InvalidToken")

	// Revoked and expired leases answer as they do under SigV4.
	w.oc.revoke(w.li.ID)
	st, b = httpGet(t, in, nil)
	wantS3(t, "presigned URL after revoke", st, b, http.StatusForbidden, "InvalidAccessKeyId")
	st, _, b = do(t, v2Request(t, c, http.MethodGet, ep, "/door/shared/a.txt", nil, nil, nil))
	wantS3(t, "header-signed after revoke", st, b, http.StatusForbidden, "InvalidAccessKeyId")
	if st, b := httpGet(t, late, nil); st != http.StatusOK {
		t.Fatalf("short lease before expiry: %d %s", st, b)
	}
	waitUntil(short.ExpiresAt)
	st, b = httpGet(t, late, nil)
	wantS3(t, "presigned URL after the lease expired", st, b, http.StatusBadRequest, "ExpiredToken")
}

// TestSigV2VirtualHost: with a virtual-host domain, the bucket in Host is
// signed as "/bucket" before the path.
func TestSigV2VirtualHost(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t, nastest.Options{Domains: []string{"nas.test"}})
	createBucket(t, client(t, srv), "vhost")
	put(t, client(t, srv), "vhost", "k.txt", []byte("vhost"))
	date := time.Now().UTC().Format(http.TimeFormat)
	req, err := http.NewRequest(http.MethodGet, srv.Endpoint+"/k.txt", nil)
	must(t, err)
	req.Host = "vhost.nas.test"
	req.Header.Set("Date", date)
	req.Header.Set("Authorization", "AWS "+owner.AccessKeyID+":"+v2Sign(owner.SecretAccessKey, "GET", "", "", date, nil, "/vhost/k.txt"))
	if st, _, b := do(t, req); st != http.StatusOK || string(b) != "vhost" {
		t.Fatalf("virtual-host SigV2 GET: %d %s", st, b)
	}
}

// TestSigV2Boto3 runs boto3 with signature_version "s3" (SigV2) as the
// owner and as a lease, then fetches boto3's default presigned URL with
// plain net/http. It needs python3 with boto3 and skips without them
// (.ci/e2e-clients.sh covers installed clients).
func TestSigV2Boto3(t *testing.T) {
	nastest.SkipInCluster(t, "the test proxy rewrites metadata header names to canonical case")
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import boto3").Run()
	}
	if err != nil {
		t.Skip("python3 with boto3 not available")
	}
	w := newDoorWorld(t, nil, nil)
	run := func(bucket, key string, c aws.Credentials) string {
		args := []string{"testdata/boto3_sigv2.py", w.srv.Endpoint, bucket, key, c.AccessKeyID, c.SecretAccessKey}
		if c.SessionToken != "" {
			args = append(args, c.SessionToken)
		}
		cmd := exec.Command(py, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_CONFIG_FILE=/dev/null",
			"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("boto3 as %s: %v\n%s", c.AccessKeyID, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		bucket, key string
		c           aws.Credentials
	}{{alias(w.repo, "seed"), "owner/boto3 x+y.txt", owner}, {w.repo, "shared/boto3 x+y.txt", w.li.Creds}} {
		u := run(tc.bucket, tc.key, tc.c)
		if !strings.Contains(u, "AWSAccessKeyId=") || strings.Contains(u, "X-Amz-Algorithm") {
			t.Fatalf("boto3 did not presign with SigV2: %s", u)
		}
		if st, b := httpGet(t, u, nil); st != http.StatusOK || !strings.HasPrefix(string(b), "boto3 signed") {
			t.Fatalf("boto3's presigned URL (%s): %d %s", tc.key, st, b)
		}
	}
}
