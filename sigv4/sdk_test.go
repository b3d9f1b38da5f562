package sigv4

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// s3Signer signs like the S3 client of aws-sdk-go-v2: the path is used as
// escaped on the wire, never escaped again.
var s3Signer = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })

var (
	creds      = aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK}
	tokenCreds = aws.Credentials{AccessKeyID: tokenAK, SecretAccessKey: tokenSK, SessionToken: testToken}
)

// escapeKey encodes an object key the way S3 SDKs put it on the wire:
// everything but unreserved characters and '/' percent-encoded.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if unreserved(c) || c == '/' {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}

func longKey() string {
	var b strings.Builder
	for b.Len() < 1024 {
		b.WriteString("dir/é ü+%~!*'()&=;:@$,?#[]")
	}
	return b.String()[:1024]
}

// wirePaths are request paths as they appear on the wire.
var wirePaths = []string{
	"/",
	"/bucket",
	"/bucket/",
	"/bucket/key",
	"/bucket/a/../b",
	"/bucket/./dot/./",
	"/bucket//double//slash//",
	"/bucket/a%2Fb",
	"/bucket/a%2fb",
	"/bucket/with%20space",
	"/bucket/plus+sign",
	"/bucket/plus%2Bsign",
	"/bucket/%25percent%2525",
	"/bucket/" + escapeKey("ключ/日本語/€"),
	"/bucket/sub-delims!$&'()*,;=:@",
	"/bucket/tilde~dash-under_dot.",
	"/bucket/" + escapeKey(longKey()),
	"/bucket/..",
	"/bucket/%2E%2E/x",
}

// queries are given to the SDK, which re-encodes them canonically.
var queries = []string{
	"",
	"list-type=2",
	"list-type=2&prefix=a%2Fb%20c%2Bd&delimiter=%2F",
	"uploads",
	"uploads=",
	"versionId=3HL4kqtJlcpXroDTDmJ%2Bd",
	"prefix=%E2%82%AC%E6%97%A5&max-keys=10&encoding-type=url",
	"acl&versionId=",
	"a=1&a=0&b=&a=",
	"prefix=a~b*c'd(e)!f&start-after=%2F%2F",
	"partNumber=3&uploadId=VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA",
	"x-id=PutObject",
	"a-b=1&a%2Fb=2&a.b=3",
}

// newSDKRequest builds and signs a request with the aws-sdk-go-v2 signer.
func newSDKRequest(t *testing.T, srv, method, path, query string, hdr http.Header, body []byte, payload string, c aws.Credentials, region string, at time.Time) *http.Request {
	t.Helper()
	u, err := url.Parse(srv + path)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = query
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req, _ = http.NewRequest(method, u.String(), rd)
	}
	for k, vs := range hdr {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if err := s3Signer.SignHTTP(context.Background(), c, req, payload, "s3", region, at); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestSDKHeaderAuth(t *testing.T) {
	ts := newTestServer(t, fixedVerifier(t0.Add(3*time.Minute)), false)
	body := []byte("the quick brown fox")
	hdr := http.Header{
		"X-Amz-Meta-Multi":  {"one", "two"},
		"X-Amz-Meta-Spaces": {"  a   b    c  "},
		"Content-Type":      {"text/plain;   charset=utf-8"},
	}
	for _, path := range wirePaths {
		for _, q := range queries {
			for _, method := range []string{"GET", "PUT"} {
				var b []byte
				payload := emptySHA256
				if method == "PUT" {
					b, payload = body, sha256Hex(body)
				}
				req := newSDKRequest(t, ts.URL, method, path, q, hdr, b, payload, creds, testRegion, t0)
				o := ts.do(t, req)
				if o.err != nil {
					t.Fatalf("%s %s?%s: Verify: %v", method, path, q, o.err)
				}
				if o.bodyErr != nil || !bytes.Equal(o.body, b) {
					t.Fatalf("%s %s?%s: body %q, %v", method, path, q, o.body, o.bodyErr)
				}
				if o.res.AccessKey != testAK || o.res.Region != testRegion || o.res.Service != "s3" || o.res.Mode != SignedPayload || o.res.Presigned {
					t.Fatalf("%s %s?%s: result %+v", method, path, q, o.res)
				}
				if !o.res.Signed("Host") || !o.res.Signed("x-amz-meta-multi") || o.res.Signed("user-agent") {
					t.Fatalf("SignedHeaders %v", o.res.SignedHeaders)
				}
			}
		}
	}
}

func TestSDKHeaderAuthVariants(t *testing.T) {
	body := []byte("payload")
	tests := []struct {
		name    string
		c       aws.Credentials
		region  string
		payload string
		hdr     http.Header
		mode    PayloadMode
	}{
		{"session token", tokenCreds, testRegion, sha256Hex(body), nil, SignedPayload},
		{"unsigned payload", creds, testRegion, unsignedPayload, nil, Unsigned},
		{"other region", creds, "eu-central-1", unsignedPayload, nil, Unsigned},
		{"custom region", creds, "my-own-region", unsignedPayload, nil, Unsigned},
		{"content-md5 and meta", creds, testRegion, sha256Hex(body), http.Header{"Content-Md5": {"gJ5CWKmFvWMUQZe6Sx1/eQ=="}, "X-Amz-Meta-Empty": {""}}, SignedPayload},
		{"checksum header", creds, testRegion, unsignedPayload, http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}, "X-Amz-Sdk-Checksum-Algorithm": {"CRC32"}}, Unsigned},
		{"range", creds, testRegion, unsignedPayload, http.Header{"Range": {"bytes=0-9"}}, Unsigned},
		{"content-encoding", creds, testRegion, unsignedPayload, http.Header{"Content-Encoding": {"gzip"}}, Unsigned},
	}
	ts := newTestServer(t, fixedVerifier(t0), false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newSDKRequest(t, ts.URL, "PUT", "/bucket/obj", "", tt.hdr, body, tt.payload, tt.c, tt.region, t0)
			o := ts.do(t, req)
			if o.err != nil || o.bodyErr != nil {
				t.Fatalf("Verify %v, body %v", o.err, o.bodyErr)
			}
			if o.res.Mode != tt.mode || o.res.SessionToken != tt.c.SessionToken || o.res.Region != tt.region || o.res.DecodedLength != int64(len(body)) {
				t.Fatalf("result %+v", o.res)
			}
			if tt.hdr.Get("Content-Encoding") != "" && o.res.ContentEncoding != "gzip" {
				t.Fatalf("ContentEncoding %q", o.res.ContentEncoding)
			}
		})
	}
}

// TestSDKHeaderAuthMutations changes one thing of a correctly signed request
// and expects the matching failure.
func TestSDKHeaderAuthMutations(t *testing.T) {
	body := []byte("original body")
	base := func(t *testing.T, srv string) *http.Request {
		return newSDKRequest(t, srv, "PUT", "/bucket/a%2Fb", "x=y&uploads", http.Header{"X-Amz-Meta-K": {"v"}}, body, sha256Hex(body), creds, testRegion, t0)
	}
	replaceAuth := func(old, new string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
		}
	}
	tests := []struct {
		name    string
		now     time.Time
		mutate  func(*http.Request)
		err     error // from Verify
		bodyErr error // from reading the body
	}{
		{name: "unchanged", now: t0},
		{name: "body differs from its hash", now: t0, mutate: func(r *http.Request) {
			r.Body = http.NoBody
			r.Body = readCloser(bytes.NewReader([]byte("tampered body")))
		}, bodyErr: ErrContentSHA256Mismatch},
		{name: "content sha256 header", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", sha256Hex([]byte("x"))) }, err: ErrSignatureMismatch},
		{name: "content sha256 garbage", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "not-a-hash") }, err: ErrInvalidContentSHA256},
		{name: "signed header value", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Meta-K", "w") }, err: ErrSignatureMismatch},
		{name: "signed header removed", now: t0, mutate: func(r *http.Request) { r.Header.Del("X-Amz-Meta-K") }, err: ErrSignatureMismatch},
		{name: "unsigned header added", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Meta-New", "n") }},
		{name: "path decoded form", now: t0, mutate: func(r *http.Request) { r.URL.RawPath = "" }, err: ErrSignatureMismatch},
		{name: "path case", now: t0, mutate: func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/bucket/A/b", "/bucket/A%2Fb" }, err: ErrSignatureMismatch},
		{name: "query value", now: t0, mutate: func(r *http.Request) { r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "x=y", "x=z", 1) }, err: ErrSignatureMismatch},
		{name: "query added", now: t0, mutate: func(r *http.Request) { r.URL.RawQuery += "&versionId=1" }, err: ErrSignatureMismatch},
		{name: "query reordered", now: t0, mutate: func(r *http.Request) { r.URL.RawQuery = "x=y&uploads" }},
		{name: "method", now: t0, mutate: func(r *http.Request) { r.Method = "POST" }, err: ErrSignatureMismatch},
		{name: "other key without token", now: t0, mutate: replaceAuth(testAK+"/", tokenAK+"/"), err: ErrInvalidToken},
		{name: "wrong secret", now: t0, err: ErrSignatureMismatch},
		{name: "unknown key", now: t0, mutate: replaceAuth(testAK+"/", "AKIDUNKNOWN/"), err: ErrUnknownKey},
		{name: "credential region", now: t0, mutate: replaceAuth("/"+testRegion+"/", "/eu-west-1/"), err: ErrSignatureMismatch},
		{name: "credential service", now: t0, mutate: replaceAuth("/s3/", "/sts/"), err: ErrSignatureMismatch},
		{name: "credential date", now: t0, mutate: replaceAuth("/20250314/", "/20250313/"), err: ErrMalformedAuth},
		{name: "signature", now: t0, mutate: func(r *http.Request) {
			a := r.Header.Get("Authorization")
			i := strings.Index(a, "Signature=") + len("Signature=")
			flip := byte('0')
			if a[i] == '0' {
				flip = '1'
			}
			r.Header.Set("Authorization", a[:i]+string(flip)+a[i+1:])
		}, err: ErrSignatureMismatch},
		{name: "host not signed", now: t0, mutate: replaceAuth("SignedHeaders=content-length;host;", "SignedHeaders=content-length;"), err: ErrMalformedAuth},
		{name: "x-amz-date changed", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20250314T150927Z") }, err: ErrSignatureMismatch},
		{name: "x-amz-date removed", now: t0, mutate: func(r *http.Request) { r.Header.Del("X-Amz-Date") }, err: ErrMissingDate},
		{name: "token added", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Security-Token", "tok") }, err: ErrInvalidToken},
		{name: "skew ahead", now: t0.Add(16 * time.Minute), err: ErrRequestTimeTooSkewed},
		{name: "skew behind", now: t0.Add(-16 * time.Minute), err: ErrRequestTimeTooSkewed},
		{name: "skew within", now: t0.Add(14 * time.Minute)},
		{name: "sigv2", now: t0, mutate: func(r *http.Request) { r.Header.Set("Authorization", "AWS "+testAK+":c2lnbmF0dXJl") }, err: ErrUnsupportedAuth},
		{name: "sigv4a", now: t0, mutate: replaceAuth("AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256"), err: ErrUnsupportedAuth},
		{name: "no auth", now: t0, mutate: func(r *http.Request) { r.Header.Del("Authorization") }, err: ErrMissingAuth},
		{name: "header and query auth", now: t0, mutate: func(r *http.Request) { r.URL.RawQuery += "&X-Amz-Algorithm=AWS4-HMAC-SHA256" }, err: ErrMalformedAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, fixedVerifier(tt.now), false)
			if tt.name == "wrong secret" {
				ts.v.Lookup = keyTable{testAK: {secret: testSK + "x"}}
			}
			req := base(t, ts.URL)
			if tt.mutate != nil {
				tt.mutate(req)
			}
			o := ts.do(t, req)
			if !errors.Is(o.err, tt.err) || (tt.err == nil) != (o.err == nil) {
				t.Fatalf("Verify err = %v, want %v", o.err, tt.err)
			}
			if o.err != nil {
				return
			}
			if !errors.Is(o.bodyErr, tt.bodyErr) || (tt.bodyErr == nil) != (o.bodyErr == nil) {
				t.Fatalf("body err = %v, want %v", o.bodyErr, tt.bodyErr)
			}
		})
	}
}

type rc struct{ *bytes.Reader }

func (rc) Close() error { return nil }

func readCloser(r *bytes.Reader) rc { return rc{r} }

// presignRequest presigns with the aws-sdk-go-v2 signer and returns a
// request for the resulting URL carrying the signed headers.
func presignRequest(t *testing.T, srv, method, path, query string, hdr http.Header, body []byte, c aws.Credentials, expires string, at time.Time) *http.Request {
	t.Helper()
	u, err := url.Parse(srv + path)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(query)
	q.Set("X-Amz-Expires", expires)
	u.RawQuery = q.Encode()
	req, _ := http.NewRequest(method, u.String(), nil)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	signed, signedHdr, err := s3Signer.PresignHTTP(context.Background(), c, req, unsignedPayload, "s3", testRegion, at)
	if err != nil {
		t.Fatal(err)
	}
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequest(method, signed, nil)
	if rd != nil {
		out, err = http.NewRequest(method, signed, rd)
	}
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range signedHdr {
		if !strings.EqualFold(k, "host") {
			out.Header[k] = vs
		}
	}
	return out
}

func TestSDKPresign(t *testing.T) {
	ts := newTestServer(t, fixedVerifier(t0.Add(time.Minute)), false)
	for _, path := range wirePaths {
		for _, q := range queries {
			for _, c := range []aws.Credentials{creds, tokenCreds} {
				req := presignRequest(t, ts.URL, "GET", path, q, http.Header{"X-Amz-Meta-A": {"b"}}, nil, c, "900", t0)
				o := ts.do(t, req)
				if o.err != nil {
					t.Fatalf("GET %s?%s: %v (url %s)", path, q, o.err, req.URL)
				}
				if !o.res.Presigned || o.res.Mode != Unsigned || o.res.SessionToken != c.SessionToken || !o.res.Signed("x-amz-meta-a") {
					t.Fatalf("result %+v", o.res)
				}
			}
		}
	}
	// An upload through a presigned URL carries any body.
	req := presignRequest(t, ts.URL, "PUT", "/bucket/up", "", nil, []byte("any body"), creds, "60", t0)
	if o := ts.do(t, req); o.err != nil || string(o.body) != "any body" {
		t.Fatalf("presigned PUT: %v %q", o.err, o.body)
	}
}

func TestSDKPresignMutations(t *testing.T) {
	setQ := func(k, v string) func(*http.Request) {
		return func(r *http.Request) {
			q := r.URL.Query()
			q.Set(k, v)
			r.URL.RawQuery = q.Encode()
		}
	}
	delQ := func(k string) func(*http.Request) {
		return func(r *http.Request) {
			q := r.URL.Query()
			q.Del(k)
			r.URL.RawQuery = q.Encode()
		}
	}
	tests := []struct {
		name   string
		now    time.Time
		mutate func(*http.Request)
		err    error
	}{
		{name: "unchanged", now: t0},
		{name: "at expiry", now: t0.Add(3600 * time.Second)},
		{name: "expired", now: t0.Add(3601 * time.Second), err: ErrExpired},
		{name: "not yet valid", now: t0.Add(-16 * time.Minute), err: ErrRequestTimeTooSkewed},
		{name: "slightly early", now: t0.Add(-14 * time.Minute)},
		{name: "expires changed", now: t0, mutate: setQ("X-Amz-Expires", "7200"), err: ErrSignatureMismatch},
		{name: "expires too long", now: t0, mutate: setQ("X-Amz-Expires", "604801"), err: ErrMalformedPresign},
		{name: "expires zero", now: t0, mutate: setQ("X-Amz-Expires", "0"), err: ErrMalformedPresign},
		{name: "date changed", now: t0, mutate: setQ("X-Amz-Date", "20250314T150927Z"), err: ErrSignatureMismatch},
		{name: "date garbage", now: t0, mutate: setQ("X-Amz-Date", "yesterday"), err: ErrMalformedPresign},
		{name: "signature missing", now: t0, mutate: delQ("X-Amz-Signature"), err: ErrMalformedPresign},
		{name: "credential missing", now: t0, mutate: delQ("X-Amz-Credential"), err: ErrMalformedPresign},
		{name: "algorithm wrong", now: t0, mutate: setQ("X-Amz-Algorithm", "AWS4-HMAC-SHA1"), err: ErrUnsupportedAuth},
		{name: "algorithm missing", now: t0, mutate: delQ("X-Amz-Algorithm"), err: ErrMissingAuth},
		{name: "query added", now: t0, mutate: setQ("response-content-type", "text/html"), err: ErrSignatureMismatch},
		{name: "path", now: t0, mutate: func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/bucket/other", "" }, err: ErrSignatureMismatch},
		{name: "signed header", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Meta-A", "c") }, err: ErrSignatureMismatch},
		{name: "token", now: t0, mutate: setQ("X-Amz-Security-Token", "x"), err: ErrInvalidToken},
		{name: "region", now: t0, mutate: func(r *http.Request) {
			q := r.URL.Query()
			q.Set("X-Amz-Credential", strings.Replace(q.Get("X-Amz-Credential"), testRegion, "us-west-2", 1))
			r.URL.RawQuery = q.Encode()
		}, err: ErrSignatureMismatch},
		{name: "sigv2 query", now: t0, mutate: func(r *http.Request) { r.URL.RawQuery = "AWSAccessKeyId=AK&Expires=1&Signature=x" }, err: ErrUnsupportedAuth},
		{name: "content sha256 header lies", now: t0, mutate: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", emptySHA256) }, err: ErrSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, fixedVerifier(tt.now), false)
			req := presignRequest(t, ts.URL, "GET", "/bucket/k%2Fey", "versionId=1", http.Header{"X-Amz-Meta-A": {"b"}}, nil, creds, "3600", t0)
			if tt.mutate != nil {
				tt.mutate(req)
			}
			o := ts.do(t, req)
			if !errors.Is(o.err, tt.err) || (tt.err == nil) != (o.err == nil) {
				t.Fatalf("Verify err = %v, want %v", o.err, tt.err)
			}
		})
	}
}
