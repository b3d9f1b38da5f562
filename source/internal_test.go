package source

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentnas/nas/manifest"
)

func TestIndexKeys(t *testing.T) {
	refs := []objectRef{
		{"src_1", "a/b.txt", "etag"},
		{"src_1", "a/b.txt", "etag\x00v2"},
		{"src_12", "", "x"},
		{"s", strings.Repeat("k", 300), strings.Repeat("p", 200)},
	}
	for _, o := range refs {
		for _, n := range []int64{0, 1, 255, 256, 1 << 20, 1<<32 - 1} {
			k := o.blockKey(n)
			got, b, ok := parseIndexKey(k)
			if !ok || got != o || b != n {
				t.Fatalf("parse(blockKey(%v, %d)) = %v %d %v", o, n, got, b, ok)
			}
			if !bytes.HasPrefix(k, o.prefix()) || !bytes.HasPrefix(k, sourcePrefix(o.source)) {
				t.Fatalf("key of %v outside its prefixes", o)
			}
		}
		if bytes.Compare(o.blockKey(1), o.blockKey(2)) >= 0 || bytes.Compare(o.blockKey(255), o.blockKey(256)) >= 0 {
			t.Fatal("blocks out of order")
		}
	}
	// Length prefixes keep "src_1" from owning "src_12"'s keys.
	if bytes.HasPrefix(refs[2].blockKey(0), sourcePrefix("src_1")) {
		t.Fatal("source prefixes collide")
	}
	if r := refOf(&manifest.Remote{Source: "s", Key: "k", ETag: "e", VersionID: "v"}); r.pin != "e\x00v" {
		t.Fatalf("pin %q", r.pin)
	}
}

func FuzzParseIndexKey(f *testing.F) {
	f.Add(objectRef{"src_1", "a/b", "e"}.blockKey(3))
	f.Add([]byte("MI/"))
	f.Add([]byte("MI/\x05src_1\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, k []byte) {
		o, n, ok := parseIndexKey(k)
		if ok && !bytes.Equal(o.blockKey(n), k) {
			t.Fatalf("%q parsed as %v/%d, which encodes as %q", k, o, n, o.blockKey(n))
		}
	})
}

func TestParseLocation(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Location
		bad  bool
	}{
		{in: "s3://bucket", want: Location{Kind: KindS3, Bucket: "bucket"}},
		{in: "s3://bucket/", want: Location{Kind: KindS3, Bucket: "bucket"}},
		{in: "s3://my.bucket-1/data", want: Location{Kind: KindS3, Bucket: "my.bucket-1", Prefix: "data/"}},
		{in: "s3://b_k/a/b/", want: Location{Kind: KindS3, Bucket: "b_k", Prefix: "a/b/"}},
		{in: "dir:/srv/data", want: Location{Kind: KindDir, Path: "/srv/data"}},
		{in: "dir:/srv/data/../x/", want: Location{Kind: KindDir, Path: "/srv/x"}},
		{in: "file:///srv/data", want: Location{Kind: KindDir, Path: "/srv/data"}},
		{in: "dir:relative/path", bad: true},
		{in: "dir:", bad: true},
		{in: "file://host/srv", bad: true},
		{in: "s3://", bad: true},
		{in: "s3://ab", bad: true},
		{in: "s3://bucket//x", bad: true},
		{in: "s3://bu cket/x", bad: true},
		{in: "http://example.com/x", bad: true},
		{in: "exec:/usr/lib/nas/adapters/http", want: Location{Kind: KindExec, Path: "/usr/lib/nas/adapters/http"}},
		{in: "exec:/a/../b", want: Location{Kind: KindExec, Path: "/b"}},
		{in: "exec:http", bad: true},
		{in: "exec:/a\nb", bad: true},
		{in: "", bad: true},
	} {
		got, err := ParseLocation(c.in)
		if c.bad {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseLocation(%q) = %v, %v; want ErrInvalid", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"s3://bucket/data", "dir:/srv/x", "file:///a/b", "s3://b..c/%00", "dir:/../..", "git:/srv/r.git@main", "git:/a@b@c", "git:/x/../y", "git:https://h.example/r.git@main", "git:file:///srv/r@v1", "exec:/usr/lib/nas/http", "exec:rel", "exec:/a/../b\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			return
		}
		again, err := ParseLocation(l.String())
		if err != nil || again != l {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, l, l.String(), again, err)
		}
	})
}

func TestVerifier(t *testing.T) {
	data := []byte("the pinned bytes")
	sum := md5.Sum(data)
	etag := hex.EncodeToString(sum[:])
	read := func(r io.Reader) error {
		_, err := io.ReadAll(r)
		return err
	}
	v := newVerifier(io.NopCloser(bytes.NewReader(data)), int64(len(data)), "x")
	v.expectMD5(etag)
	if err := read(v); err != nil {
		t.Fatalf("good body: %v", err)
	}
	if err := read(newVerifier(io.NopCloser(bytes.NewReader(data[:5])), int64(len(data)), "x")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("short body: %v", err)
	}
	if err := read(newVerifier(io.NopCloser(bytes.NewReader(append(data, '!'))), int64(len(data)), "x")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("long body: %v", err)
	}
	bad := bytes.Clone(data)
	bad[3] ^= 1
	v = newVerifier(io.NopCloser(bytes.NewReader(bad)), int64(len(data)), "x")
	v.expectMD5(etag)
	if err := read(v); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}
	if !isMD5ETag(etag) || isMD5ETag(etag+"-2") || isMD5ETag("zz") {
		t.Fatal("isMD5ETag")
	}
}

func TestWindowHoldsTheLastByte(t *testing.T) {
	var out bytes.Buffer
	w := &window{w: &out, pos: 100, from: 103, to: 110}
	for _, p := range []string{"0123", "4567", "89ab"} { // offsets 100-111
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "345678" {
		t.Fatalf("before release: %q", out.String())
	}
	must(t, w.release())
	if out.String() != "3456789" {
		t.Fatalf("after release: %q", out.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sdkError(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err: &smithy.GenericAPIError{Code: code}}}}
}

func TestClassify(t *testing.T) {
	s := &S3{c: S3Config{Bucket: "b"}}
	ctx := context.Background()
	for _, c := range []struct {
		err       error
		want      error
		retryable bool
	}{
		{sdkError(412, "PreconditionFailed"), ErrChanged, false},
		{sdkError(404, "NoSuchKey"), ErrChanged, false},
		{sdkError(404, "NoSuchVersion"), ErrChanged, false},
		{sdkError(416, "InvalidRange"), ErrChanged, false},
		{sdkError(403, "AccessDenied"), ErrDenied, false},
		{sdkError(403, "SignatureDoesNotMatch"), ErrDenied, false},
		{sdkError(503, "SlowDown"), ErrThrottled, true},
		{sdkError(429, ""), ErrThrottled, true},
		{sdkError(500, "InternalError"), ErrUnavailable, true},
		{sdkError(400, "InvalidArgument"), errRejected, false},
		{errors.New("dial tcp: connection refused"), ErrUnavailable, true},
	} {
		got := s.classify(ctx, c.err, "k")
		if !errors.Is(got, c.want) || retryable(got) != c.retryable {
			t.Errorf("classify(%v) = %v (retryable %v), want %v (retryable %v)", c.err, got, retryable(got), c.want, c.retryable)
		}
	}
	if got := s.classifyList(ctx, sdkError(404, "NoSuchBucket")); !errors.Is(got, ErrInvalid) {
		t.Errorf("listing a missing bucket: %v", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := s.classify(cctx, sdkError(500, ""), "k"); !errors.Is(got, context.Canceled) {
		t.Errorf("the caller's cancellation: %v", got)
	}
}

func TestRetryIsBounded(t *testing.T) {
	r := Retry{Attempts: 3, Base: 1, Max: 1}
	n := 0
	err := r.do(context.Background(), func() error { n++; return ErrUnavailable })
	if n != 3 || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("%d tries, %v", n, err)
	}
	n = 0
	err = r.do(context.Background(), func() error { n++; return ErrChanged })
	if n != 1 || !errors.Is(err, ErrChanged) {
		t.Fatalf("drift retried: %d tries, %v", n, err)
	}
	n = 0
	err = r.do(context.Background(), func() error {
		if n++; n < 2 {
			return ErrThrottled
		}
		return nil
	})
	if n != 2 || err != nil {
		t.Fatalf("%d tries, %v", n, err)
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 0-9/100", 0, 100, true},
		{"bytes 5-9/*", 5, -1, true},
		{"bytes 5-9", 0, 0, false},
		{"items 0-1/2", 0, 0, false},
		{"bytes x-9/10", 0, 0, false},
	} {
		s, tot, ok := parseContentRange(c.in)
		if s != c.start || tot != c.total || ok != c.ok {
			t.Errorf("parseContentRange(%q) = %d %d %v", c.in, s, tot, ok)
		}
	}
}

// countingWaiter records the tokens a throttle asks for.
type countingWaiter struct {
	calls []int
	err   error
}

func (w *countingWaiter) WaitN(_ context.Context, n int) error {
	w.calls = append(w.calls, n)
	return w.err
}

// TestPacedBody: a paced fetch body reads at most a burst at a time,
// asks the limiter for every byte it got, counts them, and stops on the
// limiter's error.
func TestPacedBody(t *testing.T) {
	w := &countingWaiter{}
	var n atomic.Int64
	body := &pacedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, 4500))), p: newPacer(context.Background(), w, 1000, &n)}
	buf := make([]byte, 64<<10)
	total := 0
	for {
		k, err := body.Read(buf)
		if k > 1000 {
			t.Fatalf("read %d bytes at once with a burst of 1000", k)
		}
		total += k
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sum := 0
	for _, c := range w.calls {
		if c <= 0 || c > 1000 {
			t.Fatalf("asked for %d tokens with a burst of 1000", c)
		}
		sum += c
	}
	if total != 4500 || sum != 4500 || n.Load() != 4500 || len(w.calls) != 5 {
		t.Fatalf("read %d, asked for %d tokens in %d calls, counted %d; want 4500 in 5", total, sum, len(w.calls), n.Load())
	}
	w.err = context.Canceled
	body = &pacedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, 10))), p: newPacer(context.Background(), w, 1000, &n)}
	if _, err := body.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("a refused wait read on: %v", err)
	}
	// Without a limiter a body is only counted and read in pieces.
	free := &pacedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, 3*maxBurst+1))), p: newPacer(context.Background(), nil, maxBurst, &n)}
	if got, err := io.ReadAll(free); len(got) != 3*maxBurst+1 || err != nil || n.Load() != 4510+3*maxBurst+1 {
		t.Fatalf("unlimited body: %d %v %d", len(got), err, n.Load())
	}
}

// TestNewLimiter: the rate is the owner's, the burst at most 1 MiB and at
// most a second's worth.
func TestNewLimiter(t *testing.T) {
	if l, b := newLimiter(0); l != nil || b != maxBurst {
		t.Fatalf("no rate: %v %d", l, b)
	}
	for _, c := range []struct{ rate, burst int64 }{{1, 1}, {50 << 10, 50 << 10}, {1 << 20, 1 << 20}, {50 << 20, 1 << 20}} {
		l, b := newLimiter(c.rate)
		if l == nil || int64(b) != c.burst || l.Burst() != b || float64(l.Limit()) != float64(c.rate) {
			t.Fatalf("rate %d: limiter %v burst %d, want burst %d", c.rate, l, b, c.burst)
		}
	}
}
