package sigv2

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentnas/nas/sigv4"
)

// FuzzParse feeds the header and query parsers, and the whole of Verify,
// with arbitrary Authorization values and raw queries: nothing panics,
// every error wraps a sentinel the edges map, and nothing verifies.
func FuzzParse(f *testing.F) {
	f.Add("AWS AKIAIOSFODNN7EXAMPLE:AtL7qS5NBEuH91zjm4YnTmI9sNI=", "")
	f.Add("AWS a:b:c", "acl&versionId=%2F&response-content-type=a+b")
	f.Add("AWS :", "uploadId=%zz&partNumber=1&uploads")
	f.Add("", "AWSAccessKeyId=AK&Signature=HMmMxSA2ayLCKT3Koau7xowD0Og%3D&Expires=1175139620")
	f.Add("", "AWSAccessKeyId=AK&Signature=a+b&Expires=99999999999999999999&x-amz-security-token=t")
	f.Add("", "AWSAccessKeyId=&Signature=&Expires=-1&Expires=2")
	f.Add("AWS4-HMAC-SHA256 Credential=x", "X-Amz-Algorithm=x&AWSAccessKeyId=a")
	sentinels := []error{sigv4.ErrMalformedAuth, sigv4.ErrSignatureMismatch, sigv4.ErrExpired, sigv4.ErrRequestTimeTooSkewed,
		sigv4.ErrMissingDate, sigv4.ErrInvalidContentSHA256, sigv4.ErrUnknownKey, sigv4.ErrInvalidToken}
	f.Fuzz(func(t *testing.T, auth, raw string) {
		if c, err := parseHeader(auth); err == nil && c.accessKey == "" {
			t.Fatalf("accepted %q with an empty access key", auth)
		}
		if c, err := parseQuery(splitQuery(raw)); err == nil {
			if _, err := expiresAt(c.expires); err != nil || c.accessKey == "" {
				t.Fatalf("accepted query %q: %+v", raw, c)
			}
		}
		_ = canonicalResource("b.nas.test", []string{"nas.test"}, "/k", splitQuery(raw))
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/b/k", RawQuery: raw}, Host: "h", Header: http.Header{
			"Date": {vectorDate.Format(http.TimeFormat)}}}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		if !Claims(r) {
			return
		}
		_, err := at(vectorDate).Verify(context.Background(), r, keys{})
		if err == nil {
			t.Fatalf("fuzzed request verified: %q %q", auth, raw)
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error %v wraps no sentinel", err)
	})
}
