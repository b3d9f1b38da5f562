package sigv4

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAWSDocumentedExample checks the GET Object example of the S3 SigV4
// documentation.
func TestAWSDocumentedExample(t *testing.T) {
	r := httptest.NewRequest("GET", "/test.txt", nil)
	r.Host = "examplebucket.s3.amazonaws.com"
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	v := &Verifier{
		Lookup: keyTable{"AKIAIOSFODNN7EXAMPLE": {secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}},
		Now:    func() time.Time { return time.Date(2013, 5, 24, 0, 5, 0, 0, time.UTC) },
	}
	if _, err := v.Verify(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// TestAWSDocumentedStreamingExample checks the aws-chunked example of the
// S3 documentation (two data chunks and the final chunk).
func TestAWSDocumentedStreamingExample(t *testing.T) {
	data := bytes.Repeat([]byte("a"), 66560)
	var body bytes.Buffer
	body.WriteString("10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n")
	body.Write(data[:65536])
	body.WriteString("\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n")
	body.Write(data[65536:])
	body.WriteString("\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n")
	if body.Len() != 66824 {
		t.Fatalf("body is %d bytes", body.Len())
	}
	r := httptest.NewRequest("PUT", "/examplebucket/chunkObject.txt", &body)
	r.Host = "s3.amazonaws.com"
	r.Header.Set("Content-Length", "66824")
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("X-Amz-Content-Sha256", streamingPayload)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	v := &Verifier{
		Lookup: keyTable{"AKIAIOSFODNN7EXAMPLE": {secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}},
		Now:    func() time.Time { return time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC) },
	}
	res, err := v.Verify(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != Streaming || res.DecodedLength != 66560 || res.ContentEncoding != "" {
		t.Fatalf("result %+v", res)
	}
	got, err := readAllSmall(res.Body)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decoded %d bytes, %v", len(got), err)
	}
}

// readAllSmall reads with a small buffer so chunk boundaries fall inside
// and across Read calls.
func readAllSmall(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var out []byte
	buf := make([]byte, 1000)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
	}
}

func TestSigningKeyDocumented(t *testing.T) {
	// From the IAM SigV4 documentation, "derive a signing key".
	k := SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "iam")
	if got := hex.EncodeToString(k); got != "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9" {
		t.Fatalf("signing key %s", got)
	}
}

// rawCase is a request written byte for byte on a TCP connection, with the
// canonical request the client is supposed to have signed written out by
// hand.
type rawCase struct {
	name      string
	method    string
	target    string // request-target as sent
	headers   []string
	body      string
	canonPath string
	canonQ    string
	canonHdrs string // canonical header lines, with {host}
	signed    string
	payload   string
	authFmt   string // with {cred} {signed} {sig}; "" = the usual format
	wantBody  string
	err       error
}

func TestRawWire(t *testing.T) {
	const amzDate = "20250314T150926Z"
	cases := []rawCase{
		{
			name: "content-length and expect signed", method: "PUT", target: "/b/k",
			headers:   []string{"Content-Length: 5", "Expect: 100-continue", "X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD"},
			body:      "hello",
			canonPath: "/b/k",
			canonHdrs: "content-length:5\nexpect:100-continue\nhost:{host}\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:" + amzDate + "\n",
			signed:    "content-length;expect;host;x-amz-content-sha256;x-amz-date",
			payload:   unsignedPayload, wantBody: "hello",
		},
		{
			name: "transfer-encoding signed", method: "PUT", target: "/b/k",
			headers:   []string{"Transfer-Encoding: chunked", "X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD"},
			body:      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
			canonPath: "/b/k",
			canonHdrs: "host:{host}\ntransfer-encoding:chunked\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:" + amzDate + "\n",
			signed:    "host;transfer-encoding;x-amz-content-sha256;x-amz-date",
			payload:   unsignedPayload, wantBody: "abcde",
		},
		{
			name: "non-canonical query on the wire", method: "GET", target: "/b/?prefix=a+b%2fc&uploads&delimiter=%2F&prefix=%7E",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/", canonQ: "delimiter=%2F&prefix=a%20b%2Fc&prefix=~&uploads=",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
		},
		{
			name: "query sorted after encoding", method: "GET", target: "/b?a-b=1&a%2Fb=2&a.b=3&A=4&a_b=5",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b", canonQ: "A=4&a%2Fb=2&a-b=1&a.b=3&a_b=5",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
		},
		{
			name: "path kept as sent", method: "GET", target: "/b/./x/../%2e%2E//y%2fz%20+",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/./x/../%2e%2E//y%2fz%20+",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
		},
		{
			name: "repeated and spaced headers", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256, "X-Amz-Meta-A:   one   two  ", "x-amz-meta-a: three", "X-AMZ-META-B:\tx\t"},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\nx-amz-meta-a:one two,three\nx-amz-meta-b:x\n",
			signed:    "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-b", payload: emptySHA256,
		},
		{
			name: "date header instead of x-amz-date", method: "GET", target: "/b/k",
			headers:   []string{"Date: Fri, 14 Mar 2025 15:09:26 GMT", "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "date:Fri, 14 Mar 2025 15:09:26 GMT\nhost:{host}\nx-amz-content-sha256:" + emptySHA256 + "\n",
			signed:    "date;host;x-amz-content-sha256", payload: emptySHA256,
		},
		{
			name: "missing content sha256 hashes the body (STS style)", method: "POST", target: "/",
			headers:   []string{"X-Amz-Date: " + amzDate, "Content-Type: application/x-www-form-urlencoded", "Content-Length: 43"},
			body:      "Action=AssumeRole&Version=2011-06-15&x=1234",
			canonPath: "/",
			canonHdrs: "content-type:application/x-www-form-urlencoded\nhost:{host}\nx-amz-date:" + amzDate + "\n",
			signed:    "content-type;host;x-amz-date", payload: sha256Hex([]byte("Action=AssumeRole&Version=2011-06-15&x=1234")),
			wantBody: "Action=AssumeRole&Version=2011-06-15&x=1234",
		},
		{
			name: "authorization without spaces, reordered", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
			authFmt: "AWS4-HMAC-SHA256 Signature={sig},Credential={cred},SignedHeaders={signed}",
		},
		{
			name: "authorization with extra spaces", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
			authFmt: "AWS4-HMAC-SHA256   Credential={cred} ,  SignedHeaders={signed},   Signature={sig}",
		},
		{
			name: "upper-case signature hex", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
			authFmt: "AWS4-HMAC-SHA256 Credential={cred}, SignedHeaders={signed}, Signature={SIG}",
		},
		{
			name: "signed header absent from the request", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\nx-amz-meta-x:\n",
			signed:    "host;x-amz-content-sha256;x-amz-date;x-amz-meta-x", payload: emptySHA256,
		},
		{
			name: "duplicate credential", method: "GET", target: "/b/k",
			headers:   []string{"X-Amz-Date: " + amzDate, "X-Amz-Content-Sha256: " + emptySHA256},
			canonPath: "/b/k",
			canonHdrs: "host:{host}\nx-amz-content-sha256:" + emptySHA256 + "\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-content-sha256;x-amz-date", payload: emptySHA256,
			authFmt: "AWS4-HMAC-SHA256 Credential={cred}, Credential={cred}, SignedHeaders={signed}, Signature={sig}",
			err:     ErrMalformedAuth,
		},
		{
			name: "large body without content sha256", method: "POST", target: "/",
			headers:   []string{"X-Amz-Date: " + amzDate, "Content-Length: 70000"},
			body:      strings.Repeat("x", 70000),
			canonPath: "/",
			canonHdrs: "host:{host}\nx-amz-date:" + amzDate + "\n",
			signed:    "host;x-amz-date", payload: sha256Hex([]byte(strings.Repeat("x", 70000))),
			err: ErrInvalidContentSHA256,
		},
	}
	ts := newTestServer(t, fixedVerifier(t0), false)
	host := ts.Listener.Addr().String()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			canon := c.method + "\n" + c.canonPath + "\n" + c.canonQ + "\n" +
				strings.ReplaceAll(c.canonHdrs, "{host}", host) + "\n" + c.signed + "\n" + c.payload
			sig := handSign(testSK, amzDate, testRegion, "s3", canon)
			auth := c.authFmt
			if auth == "" {
				auth = "AWS4-HMAC-SHA256 Credential={cred}, SignedHeaders={signed}, Signature={sig}"
			}
			auth = strings.NewReplacer("{cred}", testAK+"/20250314/"+testRegion+"/s3/aws4_request",
				"{signed}", c.signed, "{sig}", sig, "{SIG}", strings.ToUpper(sig)).Replace(auth)
			var b strings.Builder
			b.WriteString(c.method + " " + c.target + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: " + auth + "\r\n")
			for _, h := range c.headers {
				b.WriteString(h + "\r\n")
			}
			if c.body != "" && !strings.Contains(strings.Join(c.headers, "\n"), "Transfer-Encoding") && !strings.Contains(strings.Join(c.headers, "\n"), "Content-Length") {
				b.WriteString("Content-Length: " + strconv.Itoa(len(c.body)) + "\r\n")
			}
			b.WriteString("\r\n" + c.body)
			o := rawDo(t, ts, host, b.String())
			if !errors.Is(o.err, c.err) || (c.err == nil) != (o.err == nil) {
				t.Fatalf("Verify err = %v, want %v\ncanonical:\n%s", o.err, c.err, canon)
			}
			if o.err == nil && (o.bodyErr != nil || string(o.body) != c.wantBody) {
				t.Fatalf("body %q, %v", o.body, o.bodyErr)
			}
		})
	}
}

func rawDo(t *testing.T, ts *testServer, addr, raw string) outcome {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	return ts.next(t)
}

// TestAnonymous checks that Verify calls a request anonymous
// (ErrMissingAuth) exactly when it claims no signature, so a SigV2 or
// malformed claim is refused instead of passing as anonymous.
func TestAnonymous(t *testing.T) {
	tests := []struct {
		target string
		auth   string
		want   bool
	}{
		{"/b/k", "", false},
		{"/b/k?list-type=2", "", false},
		{"/b/k", "AWS4-HMAC-SHA256 x", true},
		{"/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256", "", true},
		{"/b/k?X-Amz-Signature=00", "", false}, // presigned means X-Amz-Algorithm, as the SDK tests say
		{"/b/k?AWSAccessKeyId=AK&Signature=x&Expires=1", "", true},
		{"/b/k?x-amz-algorithm=lower", "", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.target, nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		_, err := fixedVerifier(t0).Verify(context.Background(), r)
		if got := !errors.Is(err, ErrMissingAuth); got != tt.want || err == nil {
			t.Errorf("Verify(%s, %q) = %v: want signed=%v", tt.target, tt.auth, err, tt.want)
		}
	}
}
