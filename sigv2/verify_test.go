package sigv2

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/sigv4"
)

// signature computes the SigV2 signature of r as it stands, with this
// package's string to sign (checked against botocore by
// TestBotocoreVectors).
func signature(r *http.Request, secret string, presigned bool, expires string) string {
	path, raw := target(r)
	ps := splitQuery(raw)
	c := claim{presigned: presigned, expires: expires}
	sts := stringToSign(r, c, ps, amzHeaders(r.Header, ps, presigned), canonicalResource(r.Host, []string{"nas.test"}, path, ps))
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(sts)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// signed returns a header-signed request dated now.
func signed(method, target string, now time.Time, hdr map[string]string, ak, secret string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader("body"))
	r.Header.Set("Date", now.UTC().Format(http.TimeFormat))
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.Header.Set("Authorization", "AWS "+ak+":"+signature(r, secret, false, ""))
	return r
}

// presigned returns a presigned URL request expiring at exp.
func presigned(method, target string, exp time.Time, extra url.Values, ak, secret string) *http.Request {
	q := url.Values{"AWSAccessKeyId": {ak}, "Expires": {strconv.FormatInt(exp.Unix(), 10)}}
	for k, vs := range extra {
		q[k] = vs
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	r := httptest.NewRequest(method, target+sep+q.Encode(), nil)
	q.Set("Signature", signature(r, secret, true, q.Get("Expires")))
	return httptest.NewRequest(method, target+sep+q.Encode(), nil)
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tok := url.Values{"x-amz-security-token": {leaseToken}}
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		err  error // nil: verifies
	}{
		{"owner header", func() *http.Request { return signed("GET", "/b/k", now, nil, ownerAK, ownerSecret) }, nil},
		{"lease header", func() *http.Request {
			return signed("PUT", "/b/k", now, map[string]string{"X-Amz-Security-Token": leaseToken}, leaseAK, leaseSecret)
		}, nil},
		{"lease without token", func() *http.Request { return signed("GET", "/b/k", now, nil, leaseAK, leaseSecret) }, sigv4.ErrInvalidToken},
		{"owner with token", func() *http.Request {
			return signed("GET", "/b/k", now, map[string]string{"X-Amz-Security-Token": leaseToken}, ownerAK, ownerSecret)
		}, sigv4.ErrUnknownKey},
		{"unknown key", func() *http.Request { return signed("GET", "/b/k", now, nil, "AKIANOBODY", "x") }, sigv4.ErrUnknownKey},
		{"wrong secret", func() *http.Request { return signed("GET", "/b/k", now, nil, ownerAK, "wrong") }, sigv4.ErrSignatureMismatch},
		{"tampered path", func() *http.Request {
			r := signed("GET", "/b/k", now, nil, ownerAK, ownerSecret)
			r.RequestURI = "/b/other"
			return r
		}, sigv4.ErrSignatureMismatch},
		{"tampered subresource", func() *http.Request {
			r := signed("GET", "/b/k?versionId=1", now, nil, ownerAK, ownerSecret)
			r.RequestURI = "/b/k?versionId=2"
			return r
		}, sigv4.ErrSignatureMismatch},
		{"escaped sub-resource name added", func() *http.Request {
			r := signed("DELETE", "/b/k", now, nil, ownerAK, ownerSecret)
			r.RequestURI = "/b/k?version%49d=abc" // the server would read versionId=abc
			return r
		}, sigv4.ErrSignatureMismatch},
		{"escaped sub-resource name signed", func() *http.Request {
			return signed("PUT", "/b/k?t%61gging", now, nil, ownerAK, ownerSecret)
		}, sigv4.ErrSignatureMismatch},
		{"plus in a sub-resource value", func() *http.Request {
			return signed("GET", "/b/k?versionId=a+b", now, nil, ownerAK, ownerSecret)
		}, sigv4.ErrSignatureMismatch},
		{"unsigned query param is free", func() *http.Request {
			r := signed("GET", "/b/?prefix=a", now, nil, ownerAK, ownerSecret)
			r.RequestURI = "/b/?prefix=z"
			return r
		}, nil},
		{"added amz header", func() *http.Request {
			r := signed("GET", "/b/k", now, nil, ownerAK, ownerSecret)
			r.Header.Set("X-Amz-Meta-X", "1")
			return r
		}, sigv4.ErrSignatureMismatch},
		{"x-amz-date empties the Date line", func() *http.Request {
			r := signed("GET", "/b/k", now, map[string]string{"X-Amz-Date": now.Format(http.TimeFormat)}, ownerAK, ownerSecret)
			r.Header.Set("Date", "Thu, 01 Jan 1970 00:00:00 GMT") // not signed, not checked
			return r
		}, nil},
		{"skewed", func() *http.Request {
			return signed("GET", "/b/k", now.Add(-16*time.Minute), nil, ownerAK, ownerSecret)
		}, sigv4.ErrRequestTimeTooSkewed},
		{"ahead", func() *http.Request { return signed("GET", "/b/k", now.Add(16*time.Minute), nil, ownerAK, ownerSecret) }, sigv4.ErrRequestTimeTooSkewed},
		{"no date", func() *http.Request {
			r := httptest.NewRequest("GET", "/b/k", nil)
			r.Header.Set("Authorization", "AWS "+ownerAK+":"+signature(r, ownerSecret, false, ""))
			return r
		}, sigv4.ErrMissingDate},
		{"bad date", func() *http.Request {
			return signed("GET", "/b/k", now, map[string]string{"X-Amz-Date": "yesterday"}, ownerAK, ownerSecret)
		}, sigv4.ErrMissingDate},
		{"payload hash", func() *http.Request {
			return signed("PUT", "/b/k", now, map[string]string{"X-Amz-Content-Sha256": strings.Repeat("0", 64)}, ownerAK, ownerSecret)
		}, sigv4.ErrInvalidContentSHA256},
		{"aws-chunked", func() *http.Request {
			return signed("PUT", "/b/k", now, map[string]string{"Content-Encoding": "gzip, aws-chunked"}, ownerAK, ownerSecret)
		}, sigv4.ErrInvalidContentSHA256},
		{"unsigned-payload keyword", func() *http.Request {
			return signed("PUT", "/b/k", now, map[string]string{"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"}, ownerAK, ownerSecret)
		}, nil},
		{"header and query", func() *http.Request {
			r := signed("GET", "/b/k?AWSAccessKeyId=x", now, nil, ownerAK, ownerSecret)
			return r
		}, sigv4.ErrMalformedAuth},
		{"two Authorization headers", func() *http.Request {
			r := signed("GET", "/b/k", now, nil, ownerAK, ownerSecret)
			r.Header.Add("Authorization", "AWS x:y")
			return r
		}, sigv4.ErrMalformedAuth},
		{"short signature", func() *http.Request {
			r := signed("GET", "/b/k", now, nil, ownerAK, ownerSecret)
			r.Header.Set("Authorization", "AWS "+ownerAK+":c2ln")
			return r
		}, sigv4.ErrMalformedAuth},
		{"virtual host", func() *http.Request {
			r := httptest.NewRequest("GET", "http://bucket.nas.test:9000/k?acl", nil)
			r.Header.Set("Date", now.Format(http.TimeFormat))
			r.Header.Set("Authorization", "AWS "+ownerAK+":"+signature(r, ownerSecret, false, ""))
			r.Host = "other.nas.test:9000" // another bucket: another resource
			return r
		}, sigv4.ErrSignatureMismatch},

		{"owner presigned", func() *http.Request { return presigned("GET", "/b/k", now.Add(time.Hour), nil, ownerAK, ownerSecret) }, nil},
		{"lease presigned", func() *http.Request { return presigned("GET", "/b/k", now.Add(time.Hour), tok, leaseAK, leaseSecret) }, nil},
		{"lease presigned, token stripped", func() *http.Request {
			r := presigned("GET", "/b/k", now.Add(time.Hour), tok, leaseAK, leaseSecret)
			q := r.URL.Query()
			q.Del("x-amz-security-token")
			return httptest.NewRequest("GET", "/b/k?"+q.Encode(), nil)
		}, sigv4.ErrInvalidToken},
		{"expired", func() *http.Request {
			return presigned("GET", "/b/k", now.Add(-time.Second), nil, ownerAK, ownerSecret)
		}, sigv4.ErrExpired},
		{"seven days ahead", func() *http.Request {
			return presigned("GET", "/b/k", now.Add(MaxPresignAge), nil, ownerAK, ownerSecret)
		}, nil},
		{"too far ahead", func() *http.Request {
			return presigned("GET", "/b/k", now.Add(MaxPresignAge+time.Hour), nil, ownerAK, ownerSecret)
		}, sigv4.ErrMalformedPresign},
		{"presigned tampered", func() *http.Request {
			r := presigned("GET", "/b/k", now.Add(time.Hour), nil, ownerAK, ownerSecret)
			return httptest.NewRequest("GET", strings.Replace(r.RequestURI, "/b/k", "/b/j", 1), nil)
		}, sigv4.ErrSignatureMismatch},
		{"presigned, Expires extended", func() *http.Request {
			r := presigned("GET", "/b/k", now.Add(time.Hour), nil, ownerAK, ownerSecret)
			q := r.URL.Query()
			q.Set("Expires", strconv.FormatInt(now.Add(2*time.Hour).Unix(), 10))
			return httptest.NewRequest("GET", "/b/k?"+q.Encode(), nil)
		}, sigv4.ErrSignatureMismatch},
		{"presigned, signed Content-Type header", func() *http.Request {
			r := presigned("PUT", "/b/k", now.Add(time.Hour), url.Values{"content-type": {"text/plain"}}, ownerAK, ownerSecret)
			r.Header.Set("Content-Type", "text/html")
			return r
		}, sigv4.ErrSignatureMismatch},
		{"presigned, Expires twice", func() *http.Request {
			r := presigned("GET", "/b/k", now.Add(time.Hour), nil, ownerAK, ownerSecret)
			return httptest.NewRequest("GET", r.RequestURI+"&Expires=1", nil)
		}, sigv4.ErrMalformedPresign},
		{"presigned, Expires not a number", func() *http.Request {
			return httptest.NewRequest("GET", "/b/k?AWSAccessKeyId=a&Signature=x&Expires=%2B5", nil)
		}, sigv4.ErrMalformedPresign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := at(now).Verify(context.Background(), tc.req(), keys{})
			switch {
			case tc.err == nil && err != nil:
				t.Fatalf("Verify: %v", err)
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("Verify: %v, want %v", err, tc.err)
			case err == nil && res.Mode != sigv4.Unsigned:
				t.Fatalf("payload mode %v, want UNSIGNED-PAYLOAD", res.Mode)
			}
		})
	}
}

// TestSignedHeaders: the result names exactly the headers the string to
// sign covered, so the door refuses an x-nas-* header.
func TestSignedHeaders(t *testing.T) {
	now := time.Now()
	r := signed("PUT", "/b/k", now, map[string]string{"X-Amz-Meta-A": "1", "Content-Type": "text/plain", "X-Nas-Branch": "other"}, ownerAK, ownerSecret)
	res, err := at(now).Verify(context.Background(), r, keys{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"x-amz-meta-a", "content-type", "date"} {
		if !res.Signed(h) {
			t.Errorf("%s not reported signed: %v", h, res.SignedHeaders)
		}
	}
	if res.Signed("x-nas-branch") {
		t.Errorf("x-nas-branch reported signed: %v", res.SignedHeaders)
	}
	p := presigned("GET", "/b/k", now.Add(time.Hour), url.Values{"x-amz-security-token": {leaseToken}}, leaseAK, leaseSecret)
	res, err = at(now).Verify(context.Background(), p, keys{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Presigned || res.SessionToken != leaseToken || len(res.SignedHeaders) != 0 {
		t.Fatalf("presigned result %+v", res)
	}
}

func TestClaims(t *testing.T) {
	for target, hdr := range map[string]string{
		"/b/k?AWSAccessKeyId=a&Signature=s&Expires=1": "",
		"/b/k": "AWS a:s",
		"/b/k?X-Amz-Algorithm=x&AWSAccessKeyId=a": "AWS a:s",
	} {
		r := httptest.NewRequest("GET", target, nil)
		if hdr != "" {
			r.Header.Set("Authorization", hdr)
		}
		if !Claims(r) {
			t.Errorf("%s %q: not claimed", target, hdr)
		}
	}
	for target, hdr := range map[string]string{
		"/b/k": "", "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&AWSAccessKeyId=a": "",
		"/b/k?AWSAccessKeyId=a": "AWS4-HMAC-SHA256 Credential=a", "/b/x": "AWSx a:s",
	} {
		r := httptest.NewRequest("GET", target, nil)
		if hdr != "" {
			r.Header.Set("Authorization", hdr)
		}
		if Claims(r) {
			t.Errorf("%s %q: claimed", target, hdr)
		}
	}
}
