package sigv4

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

const (
	testAK     = "AKIDEXAMPLE"
	testSK     = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	tokenAK    = "ASIATEMPORARY"
	tokenSK    = "temporary/secret+key"
	testToken  = "FwoGZXIvYXdzEXAMPLETOKEN//////////wEaDA=="
	testRegion = "us-east-1"
)

// t0 is the fixed signing time of oracle tests.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

type keyEntry struct{ secret, token string }

// keyTable is a SecretLookup over a fixed map.
type keyTable map[string]keyEntry

func (k keyTable) LookupSecret(_ context.Context, ak, token string) (string, error) {
	e, ok := k[ak]
	if !ok {
		return "", fmt.Errorf("key %s: %w", ak, ErrUnknownKey)
	}
	if e.token != token {
		return "", fmt.Errorf("key %s: %w", ak, ErrInvalidToken)
	}
	return e.secret, nil
}

var testKeys = keyTable{
	testAK:  {secret: testSK},
	tokenAK: {secret: tokenSK, token: testToken},
}

func fixedVerifier(now time.Time) *Verifier {
	return &Verifier{Lookup: testKeys, Now: func() time.Time { return now }}
}

// outcome is what the test server saw for one request.
type outcome struct {
	res     *Result
	err     error // from Verify
	body    []byte
	bodyErr error // from reading Result.Body
	trailer http.Header
}

// testServer runs Verify in a real HTTP server and hands each outcome back.
type testServer struct {
	*httptest.Server
	v   *Verifier
	out chan outcome
}

func newTestServer(t testing.TB, v *Verifier, tls bool) *testServer {
	ts := &testServer{v: v, out: make(chan outcome, 16)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var o outcome
		o.res, o.err = ts.v.Verify(r.Context(), r)
		if o.err == nil {
			o.body, o.bodyErr = io.ReadAll(o.res.Body)
			o.trailer = o.res.Trailer()
		}
		io.Copy(io.Discard, r.Body)
		ts.out <- o
		if o.err != nil || o.bodyErr != nil {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>%s</Message></Error>`, "denied")
			return
		}
		writeS3Reply(w, r)
	})
	if tls {
		ts.Server = httptest.NewTLSServer(h)
	} else {
		ts.Server = httptest.NewServer(h)
	}
	t.Cleanup(ts.Close)
	return ts
}

// writeS3Reply answers just enough for the S3 clients under test.
func writeS3Reply(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	w.Header().Set("Last-Modified", "Fri, 14 Mar 2025 15:09:26 GMT")
	if r.Method == http.MethodGet && r.URL.Query().Has("list-type") {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// do sends req and returns what the server saw.
func (ts *testServer) do(t testing.TB, req *http.Request) outcome {
	t.Helper()
	resp, err := ts.Client().Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return ts.next(t)
}

func (ts *testServer) next(t testing.TB) outcome {
	t.Helper()
	select {
	case o := <-ts.out:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("server saw no request")
		return outcome{}
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// handSign signs a hand-written canonical request: an oracle independent of
// the package's canonicalisation.
func handSign(secret, amzDate, region, service, canonical string) string {
	scope := amzDate[:8] + "/" + region + "/" + service + "/aws4_request"
	sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sha256Hex([]byte(canonical))
	m := hmac.New(sha256.New, SigningKey(secret, amzDate[:8], region, service))
	m.Write([]byte(sts))
	return hex.EncodeToString(m.Sum(nil))
}
