// Package e2e_test is the S3 compatibility suite: a real gateway on
// loopback (nastest) driven by aws-sdk-go-v2 and minio-go, asserting status
// codes, error codes and bytes the way S3 clients see them.
package e2e_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/agentnas/nas/nastest"
)

// Regions the clients sign for: the gateway accepts any.
const (
	regionA = "us-west-2"
	regionB = "eu-central-1"
)

// owner is the test server's owner credentials.
var owner = aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey, Source: "e2e"}

// clientOpts tunes newS3.
type clientOpts struct {
	endpoint   string // default srv.Endpoint
	region     string // default regionA
	creds      aws.Credentials
	httpClient *http.Client
	vhost      bool // virtual-host style instead of path style
	s3Opts     []func(*s3.Options)
}

// newS3 returns an aws-sdk-go-v2 client for srv with retries off, so every
// error surfaces as the server sent it.
func newS3(t testing.TB, srv *nastest.Server, o clientOpts) *s3.Client {
	t.Helper()
	if o.endpoint == "" {
		o.endpoint = srv.Endpoint
	}
	if o.region == "" {
		o.region = regionA
	}
	if o.creds.AccessKeyID == "" {
		o.creds = owner
	}
	// A literal aws.Config rather than config.LoadDefaultConfig, so the
	// host's AWS_* variables and files (a CA bundle, checksum or endpoint
	// settings) do not change what the suite tests; the checksum settings
	// are LoadDefaultConfig's defaults (CRC32 on every upload).
	cfg := aws.Config{
		Region:                     o.region,
		Credentials:                credentials.StaticCredentialsProvider{Value: o.creds},
		Retryer:                    lostAnswerRetryer,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	cfg.HTTPClient = o.httpClient
	closeIdle(t, o.httpClient)
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(so *s3.Options) {
		so.BaseEndpoint = aws.String(o.endpoint)
		so.UsePathStyle = !o.vhost
		so.DisableLogOutputChecksumValidationSkipped = true
	}}, o.s3Opts...)...)
}

// lostAnswerRetryer makes a second attempt only when net/http closed the
// client's own connection under an answer (aws-sdk-go-v2 issues 1825 and
// 2737; the SDK's default retryer retries it too). Every answer the
// server gives, a 503 included, reaches the test on the first attempt.
func lostAnswerRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 2
		o.RateLimiter = ratelimit.None
		o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			return aws.BoolTernary(errors.Is(err, net.ErrClosed))
		})}
	})
}

// client is newS3 with the defaults.
func client(t testing.TB, srv *nastest.Server) *s3.Client { return newS3(t, srv, clientOpts{}) }

// onBranch makes every request of a client carry a (signed) x-nas-branch.
func onBranch(name string) func(*s3.Options) {
	return s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", name))
}

// newMinio returns a minio-go client for srv over plain HTTP: it signs
// bodies with STREAMING-AWS4-HMAC-SHA256-PAYLOAD chunks.
func newMinio(t testing.TB, srv *nastest.Server, tune ...func(*minio.Options)) *minio.Client {
	t.Helper()
	return newMinioAt(t, srv.Addr, tune...)
}

// newMinioAt is newMinio for an endpoint given as host:port.
func newMinioAt(t testing.TB, endpoint string, tune ...func(*minio.Options)) *minio.Client {
	t.Helper()
	o := &minio.Options{
		Creds:      miniocreds.NewStaticV4(nastest.AccessKey, nastest.SecretKey, ""),
		Secure:     false,
		Region:     regionB,
		MaxRetries: 1,
	}
	for _, f := range tune {
		f(o)
	}
	if o.Transport == nil {
		tr, err := minio.DefaultTransport(o.Secure)
		must(t, err)
		o.Transport = tr
	}
	closeIdle(t, &http.Client{Transport: o.Transport})
	mc, err := minio.New(endpoint, o)
	if err != nil {
		t.Fatalf("minio client: %v", err)
	}
	return mc
}

// closeIdle closes c's idle connections when the test ends, before the
// server stops: http.Server.Shutdown waits up to 5 s for a connection that
// was opened but never sent a request (Go treats StateNew as active until
// then), and the clients' spare keep-alive connections are just that.
func closeIdle(t testing.TB, c *http.Client) {
	t.Cleanup(c.CloseIdleConnections)
	t.Cleanup(http.DefaultClient.CloseIdleConnections) // do, http.Get
}

// startTLS serves srv's gateway handler over HTTPS as well, so clients take
// their TLS-only paths (aws-sdk-go-v2 sends trailing checksums only over
// TLS). It returns the endpoint and an HTTP client trusting it.
func startTLS(t testing.TB, srv *nastest.Server) (string, *http.Client) {
	t.Helper()
	ts := httptest.NewTLSServer(srv.Gateway.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, ts.Client()
}

// dialAll returns an HTTP client that connects every request to addr,
// whatever its host says: BUCKET.localhost need not resolve.
func dialAll(addr string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// recorder is a RoundTripper that keeps the headers (and Host) of every
// request.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex // guards reqs
	reqs []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h := req.Header.Clone()
	h.Set("Host", cmp.Or(req.Host, req.URL.Host))
	r.mu.Lock()
	r.reqs = append(r.reqs, h)
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

// CloseIdleConnections lets closeIdle reach the wrapped transport.
func (r *recorder) CloseIdleConnections() { closeIdleOf(r.base) }

func closeIdleOf(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (r *recorder) last() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		return nil
	}
	return r.reqs[len(r.reqs)-1]
}

// headerInjector adds headers after the client has signed the request.
type headerInjector struct {
	base http.RoundTripper
	h    http.Header
}

func (hi headerInjector) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range hi.h {
		req.Header[k] = vs
	}
	return hi.base.RoundTrip(req)
}

// CloseIdleConnections lets closeIdle reach the wrapped transport.
func (hi headerInjector) CloseIdleConnections() { closeIdleOf(hi.base) }

// signedHeaders returns the SignedHeaders list of an Authorization header.
func signedHeaders(auth string) []string {
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return nil
	}
	list, _, _ := strings.Cut(rest, ",")
	return strings.Split(list, ";")
}

// errCode is the S3 error code of err ("" if none).
func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// errStatus is the HTTP status of a failed SDK call (0 if none).
func errStatus(err error) int {
	// awshttp.ResponseError embeds *smithyhttp.ResponseError but unwraps to
	// the API error, so match the method rather than the type.
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// wantErr asserts that err is an S3 error with this status and code; an
// empty code checks the status only (HEAD responses have no body).
func wantErr(t testing.TB, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %d %s", status, code)
	}
	if got := errStatus(err); got != status {
		t.Fatalf("status %d, want %d %s (err: %v)", got, status, code, err)
	}
	if code != "" {
		if got := errCode(err); got != code {
			t.Fatalf("code %q, want %q (err: %v)", got, code, err)
		}
	}
}

// wantMinioErr is wantErr for minio-go.
func wantMinioErr(t testing.TB, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %d %s", status, code)
	}
	r := minio.ToErrorResponse(err)
	if r.StatusCode != status || (code != "" && r.Code != code) {
		t.Fatalf("got %d %q, want %d %q (err: %v)", r.StatusCode, r.Code, status, code, err)
	}
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rawStatus is the HTTP status of a successful SDK call.
func rawStatus(t testing.TB, md middleware.Metadata) int {
	t.Helper()
	resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
	if !ok {
		t.Fatal("no raw response in metadata")
	}
	return resp.StatusCode
}

// randBytes returns n deterministic pseudo-random bytes for seed.
func randBytes(seed string, n int) []byte {
	var s [32]byte
	copy(s[:], seed)
	r := rand.NewChaCha8(s)
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// etagOf is the S3 ETag of a single-part body: its quoted hex MD5.
func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// multipartETag is the ETag of an object uploaded in these parts.
func multipartETag(parts ...[]byte) string {
	h := md5.New()
	for _, p := range parts {
		sum := md5.Sum(p)
		h.Write(sum[:])
	}
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(h.Sum(nil)), len(parts))
}

// createBucket creates a bucket and fails the test on error.
func createBucket(t testing.TB, c *s3.Client, name string) {
	t.Helper()
	_, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	must(t, err)
}

// put stores body under key and returns the response.
func put(t testing.TB, c *s3.Client, bucket, key string, body []byte, tune ...func(*s3.PutObjectInput)) *s3.PutObjectOutput {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}
	for _, f := range tune {
		f(in)
	}
	out, err := c.PutObject(context.Background(), in)
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return out
}

// get reads key and returns its bytes and the response.
func get(t testing.TB, c *s3.Client, bucket, key string, tune ...func(*s3.GetObjectInput)) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	b, out, err := tryGet(c, bucket, key, tune...)
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	return b, out
}

func tryGet(c *s3.Client, bucket, key string, tune ...func(*s3.GetObjectInput)) ([]byte, *s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	for _, f := range tune {
		f(in)
	}
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, out, err
}

// wantBytes compares bodies without printing megabytes.
func wantBytes(t testing.TB, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("body differs: got %d bytes, want %d; first difference at %d", len(got), len(want), i)
	}
}

// listAll lists every key under prefix with ListObjectsV2.
func listAll(t testing.TB, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		must(t, err)
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// rawRequest builds a request signed with creds at signTime, the way an S3
// client signs: the path is not re-escaped and the payload hash is sent in
// x-amz-content-sha256 (its SHA-256 unless hdr names a streaming mode).
func rawRequest(t testing.TB, method, url string, body []byte, signTime time.Time, creds aws.Credentials, hdr http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	must(t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	hash := req.Header.Get("X-Amz-Content-Sha256") // a streaming mode, if set
	if hash == "" {
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	must(t, signer.SignHTTP(context.Background(), creds, req, hash, "s3", regionA, signTime))
	return req
}

// do sends req and returns the status, headers and body.
func do(t testing.TB, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header, b
}

// xmlCode extracts <Code> from an S3 error document.
func xmlCode(body []byte) string {
	s := string(body)
	_, rest, ok := strings.Cut(s, "<Code>")
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, "</Code>")
	return code
}
