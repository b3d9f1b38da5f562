package source_test

// Test doubles and helpers: an in-process remote (gofakes3) that counts
// what it serves, a fault-injecting proxy, a gateway with fast retries,
// and the control API.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// remote is a gofakes3 bucket store on loopback that counts object GETs
// (not listings) and the body bytes they sent.
type remote struct {
	URL    string
	srv    *httptest.Server
	cl     *s3.Client
	gets   atomic.Int64
	reqs   atomic.Int64
	sent   atomic.Int64
	down   atomic.Bool // when set, every request's connection is dropped
	mem    *s3mem.Backend
	getsMu sync.Mutex
	ranges []string // Range headers of object GETs, in order
}

func isObjectGet(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	_, key, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return ok && key != ""
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func startRemote(t testing.TB, opts ...gofakes3.Option) *remote {
	rm := &remote{mem: s3mem.New()}
	fake := gofakes3.New(rm.mem, opts...)
	h := fake.Server()
	rm.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.reqs.Add(1)
		if rm.down.Load() {
			dropConnection(w)
			return
		}
		if isObjectGet(r) {
			rm.gets.Add(1)
			rm.getsMu.Lock()
			rm.ranges = append(rm.ranges, r.Header.Get("Range"))
			rm.getsMu.Unlock()
			w = countingWriter{w, &rm.sent}
		}
		h.ServeHTTP(w, r)
	}))
	rm.srv.Config.ErrorLog = quietLog
	rm.srv.Start()
	t.Cleanup(rm.srv.Close)
	rm.URL = rm.srv.URL
	rm.cl = s3Client(rm.URL, aws.Credentials{AccessKeyID: "remote-key", SecretAccessKey: "remote-secret"})
	return rm
}

func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func s3Client(endpoint string, c aws.Credentials) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func (rm *remote) mkBucket(t testing.TB, name string) {
	t.Helper()
	_, err := rm.cl.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	must(t, err)
}

func putObject(t testing.TB, cl *s3.Client, bucket, key string, body io.Reader) string {
	t.Helper()
	out, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: body})
	must(t, err)
	return strings.Trim(aws.ToString(out.ETag), `"`)
}

func (rm *remote) put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	return putObject(t, rm.cl, bucket, key, bytes.NewReader(data))
}

// testGW is a gateway with fast retries and short timeouts.
type testGW struct {
	G   *gateway.Gateway
	URL string
	S3  *s3.Client // the owner's
	srv *httptest.Server

	closeOnce sync.Once
}

// close stops the gateway; it is safe to call twice.
func (g *testGW) close() {
	g.closeOnce.Do(func() {
		g.srv.Close()
		g.G.Close()
	})
}

var testRetry = source.Retry{Attempts: 3, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond}

func startGateway(t testing.TB, o source.Options) *testGW {
	t.Helper()
	return startGatewayAt(t, t.TempDir(), o)
}

// startGatewayAt opens the gateway of data directory dir.
func startGatewayAt(t testing.TB, dir string, o source.Options) *testGW {
	t.Helper()
	if o.Retry.Attempts == 0 {
		o.Retry = testRetry
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = 2 * time.Second
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = 10 * time.Second
	}
	g, err := gateway.Open(gateway.Config{DataDir: dir,
		Owner: auth.Owner{AccessKey: nastest.AccessKey, SecretKey: nastest.SecretKey}, Sources: o})
	must(t, err)
	g.Start()
	srv := httptest.NewServer(g.Handler())
	gw := &testGW{G: g, URL: srv.URL, srv: srv}
	t.Cleanup(gw.close)
	gw.S3 = s3Client(srv.URL, aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey})
	return gw
}

// ctl calls the control API with creds and returns status and answer.
func ctl(t testing.TB, endpoint string, creds aws.Credentials, op string, args any) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(args)
	must(t, err)
	req, err := http.NewRequest(http.MethodPost, endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	must(t, err)
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	must(t, v4.NewSigner().SignHTTP(context.Background(), creds, req, h, "s3", "us-east-1", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %d, not JSON: %s", op, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

var ownerCreds = aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}

// owner calls the control API as the owner and requires success.
func (g *testGW) owner(t testing.TB, op string, args any) map[string]any {
	t.Helper()
	st, out := ctl(t, g.URL, ownerCreds, op, args)
	if st != http.StatusOK {
		t.Fatalf("%s %v: %d %v", op, args, st, out)
	}
	return out
}

func (g *testGW) mkRepo(t testing.TB, name string) {
	t.Helper()
	g.owner(t, "repo/create", map[string]any{"repo": name, "protected": false})
}

// attach attaches an S3 bucket of rm at prefix and waits for the import.
func (g *testGW) attach(t testing.TB, repo, prefix, url, endpoint string, extra map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{"repo": repo, "prefix": prefix, "url": url, "endpoint": endpoint, "wait": true}
	if endpoint != "" {
		args["access_key"], args["secret_key"] = "remote-key", "remote-secret"
	}
	for k, v := range extra {
		args[k] = v
	}
	return g.owner(t, "source/add", args)["source"].(map[string]any)
}

func get(t testing.TB, cl *s3.Client, bucket, key string, rng string) ([]byte, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := cl.GetObject(context.Background(), in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func mustGet(t testing.TB, cl *s3.Client, bucket, key string, want []byte) {
	t.Helper()
	got, err := get(t, cl, bucket, key, "")
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("get %s/%s: %d bytes, want %d (equal prefix %d)", bucket, key, len(got), len(want), commonPrefix(got, want))
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// errCode returns an S3 error's code and status.
func errCode(err error) (string, int) {
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re interface{ HTTPStatusCode() int }
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

func wantCode(t testing.TB, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %d %s", status, code)
	}
	c, s := errCode(err)
	if c != code || s != status {
		t.Fatalf("got %d %q (%v), want %d %s", s, c, err, status, code)
	}
}

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// genReader generates n bytes without holding them, cheaply: a random
// base of genPeriod bytes (a prime, so block-sized shifts change its phase)
// repeats, and every 4 KiB starts with 8 bytes naming the page. Any range
// can be recomputed, and a read at the wrong offset differs.
type genReader struct {
	seed uint64
	off  int64
	n    int64
}

const genPeriod = 1048573

var genBases sync.Map // seed -> []byte

func genBase(seed uint64) []byte {
	if b, ok := genBases.Load(seed); ok {
		return b.([]byte)
	}
	b := randomBytes(seed, genPeriod)
	genBases.Store(seed, b)
	return b
}

func genRange(seed uint64, off, n int64) []byte {
	b := make([]byte, n)
	io.ReadFull(&genReader{seed: seed, off: off, n: off + n}, b)
	return b
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), g.n-g.off)
	p = p[:k]
	base := genBase(g.seed)
	for i := int64(0); i < k; {
		ph := (g.off + i) % genPeriod
		i += int64(copy(p[i:], base[ph:]))
	}
	var word [8]byte
	for page := g.off / 4096; page*4096 < g.off+k; page++ {
		binary.LittleEndian.PutUint64(word[:], uint64(page)*0x9E3779B97F4A7C15+g.seed)
		for j := int64(0); j < 8; j++ {
			if o := page*4096 + j - g.off; o >= 0 && o < k {
				p[o] = word[j]
			}
		}
	}
	g.off += k
	return int(k), nil
}

// faultProxy is an HTTP proxy in front of a remote that injects faults
// into object GETs: the next faults popped from its queue apply, one per
// request.
type faultProxy struct {
	URL   string
	mu    sync.Mutex // guards queue
	queue []fault
	heads []getHeaders // of every object GET; guarded by mu
	gets  atomic.Int64
}

// getHeaders is what an object GET named.
type getHeaders struct{ ifMatch, versionID, rng string }

func (fp *faultProxy) seen() []getHeaders {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]getHeaders(nil), fp.heads...)
}

// fault is what the proxy does to one object GET.
type fault struct {
	status  int           // answer this status (with an S3 error code) instead
	code    string        // the S3 error code for status
	delay   time.Duration // wait this long before forwarding
	resetAt int64         // > 0: drop the connection after this many body bytes
	stallAt int64         // > 0: stop sending after this many body bytes
	corrupt int64         // > 0: flip the body byte at corrupt-1
	sticky  bool          // stays in the queue (every later GET too)
}

func startFaultProxy(t testing.TB, target string) *faultProxy {
	u, err := url.Parse(target)
	must(t, err)
	fp := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = quietLog
	rp.ModifyResponse = func(resp *http.Response) error {
		f, ok := resp.Request.Context().Value(faultKey{}).(fault)
		if !ok {
			return nil
		}
		resp.Body = &faultyBody{ReadCloser: resp.Body, f: f, ctx: resp.Request.Context()}
		return nil
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isObjectGet(r) {
			fp.gets.Add(1)
			fp.mu.Lock()
			fp.heads = append(fp.heads, getHeaders{r.Header.Get("If-Match"), r.URL.Query().Get("versionId"), r.Header.Get("Range")})
			var f fault
			have := len(fp.queue) > 0
			if have {
				f = fp.queue[0]
				if !f.sticky {
					fp.queue = fp.queue[1:]
				}
			}
			fp.mu.Unlock()
			if have {
				if f.delay > 0 {
					select {
					case <-time.After(f.delay):
					case <-r.Context().Done():
						return
					}
				}
				if f.status != 0 {
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(f.status)
					fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, f.code)
					return
				}
				r = r.WithContext(context.WithValue(r.Context(), faultKey{}, f))
			}
		}
		rp.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = quietLog
	srv.Start()
	t.Cleanup(srv.Close)
	fp.URL = srv.URL
	return fp
}

type faultKey struct{}

// quietLog swallows the servers' logs of the faults the tests inject.
var quietLog = log.New(io.Discard, "", 0)

func (fp *faultProxy) inject(fs ...fault) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.queue = append(fp.queue, fs...)
}

func (fp *faultProxy) clear() {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.queue = nil
}

// faultyBody applies a fault to a response body.
type faultyBody struct {
	io.ReadCloser
	f   fault
	ctx context.Context
	off int64
}

var errInjectedReset = errors.New("injected connection reset")

func (b *faultyBody) Read(p []byte) (int, error) {
	limit := int64(-1)
	switch {
	case b.f.resetAt > 0:
		limit = b.f.resetAt
	case b.f.stallAt > 0:
		limit = b.f.stallAt
	}
	if limit >= 0 {
		if b.off >= limit {
			if b.f.stallAt > 0 {
				<-b.ctx.Done()
				return 0, b.ctx.Err()
			}
			// The reverse proxy aborts the response: the client sees
			// its connection drop mid-body.
			return 0, errInjectedReset
		}
		if int64(len(p)) > limit-b.off {
			p = p[:limit-b.off]
		}
	}
	n, err := b.ReadCloser.Read(p)
	if c := b.f.corrupt - 1; c >= b.off && c < b.off+int64(n) {
		p[c-b.off] ^= 0x55
	}
	b.off += int64(n)
	return n, err
}
