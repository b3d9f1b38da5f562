package source

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/manifest"
)

// S3Config configures an S3 source.
type S3Config struct {
	// Endpoint is the remote's URL; "" means AWS S3.
	Endpoint string
	Region   string // "" means us-east-1
	Bucket   string
	// Prefix is the source's root inside the bucket ("" or ending in "/").
	Prefix string
	// AccessKey and SecretKey (and SessionToken) sign requests; without
	// them requests are anonymous (public buckets).
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses the bucket in the path, as most S3-compatible
	// stores want; AWS S3 takes virtual-host style.
	PathStyle bool
	// Versioned pins version IDs: listings come from ListObjectVersions and
	// reads name the pinned version, so the pinned bytes stay readable
	// after the remote object is overwritten.
	Versioned bool
	// HTTPClient, when set, carries the requests (tests inject faults).
	HTTPClient *http.Client
	// HeaderTimeout bounds the wait for a response's headers, StallTimeout
	// a pause of a response body (both 0 means 30 s).
	HeaderTimeout, StallTimeout time.Duration
	Retry                       Retry
}

// S3 is a bucket (or a prefix of one) as a Source.
type S3 struct {
	c  S3Config
	cl *s3.Client
	hc *http.Client
}

var _ Source = (*S3)(nil)

// removeOutputValidation drops the SDK's own response checksum check:
// the verifier checks the same checksum and reports it as ErrCorrupt.
func removeOutputValidation(st *middleware.Stack) error {
	_, _ = st.Finalize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
	_, _ = st.Deserialize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
	_, _ = st.Initialize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
	return nil
}

// NewS3 returns an S3 source; it makes no request.
func NewS3(c S3Config) (*S3, error) {
	if c.Bucket == "" {
		return nil, fmt.Errorf("s3 source without a bucket: %w", ErrInvalid)
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		return nil, fmt.Errorf("s3 source prefix %q must end with /: %w", c.Prefix, ErrInvalid)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = 30 * time.Second
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = 30 * time.Second
	}
	c.Retry = c.Retry.withDefaults()
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: c.HeaderTimeout,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
		}}
	}
	o := s3.Options{
		Region:                     c.Region,
		UsePathStyle:               c.PathStyle,
		HTTPClient:                 hc,
		Retryer:                    aws.NopRetryer{}, // Retry governs, bounded and typed
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		APIOptions:                 []func(*middleware.Stack) error{removeOutputValidation},
	}
	if c.Endpoint != "" {
		o.BaseEndpoint = aws.String(c.Endpoint)
	}
	if c.AccessKey != "" {
		o.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, c.SessionToken)
	} else {
		o.Credentials = aws.AnonymousCredentials{}
	}
	return &S3{c: c, cl: s3.New(o), hc: hc}, nil
}

// Close releases idle connections.
func (s *S3) Close() error {
	s.hc.CloseIdleConnections()
	return nil
}

// DetectVersioning reports whether the bucket has versioning enabled. A
// remote that does not answer (or refuses the question) is taken as
// unversioned.
func (s *S3) DetectVersioning(ctx context.Context) bool {
	var out *s3.GetBucketVersioningOutput
	err := s.c.Retry.do(ctx, func() error {
		var err error
		out, err = s.cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &s.c.Bucket})
		return s.classify(ctx, err, "")
	})
	return err == nil && out.Status == types.BucketVersioningStatusEnabled
}

// Probe checks that the bucket can be listed with the configured
// credentials.
func (s *S3) Probe(ctx context.Context) error {
	return s.c.Retry.do(ctx, func() error {
		_, err := s.cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.c.Bucket, Prefix: &s.c.Prefix, MaxKeys: aws.Int32(1)})
		return s.classifyList(ctx, err)
	})
}

// List implements Source.
func (s *S3) List(ctx context.Context, after string, fn func(Object) error) error {
	if s.c.Versioned {
		return s.listVersions(ctx, after, fn)
	}
	in := &s3.ListObjectsV2Input{Bucket: &s.c.Bucket, Prefix: &s.c.Prefix, MaxKeys: aws.Int32(1000)}
	if after != "" {
		in.StartAfter = aws.String(s.c.Prefix + after)
	}
	for {
		var out *s3.ListObjectsV2Output
		err := s.c.Retry.do(ctx, func() error {
			var err error
			out, err = s.cl.ListObjectsV2(ctx, in)
			return s.classifyList(ctx, err)
		})
		if err != nil {
			return err
		}
		for _, o := range out.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), s.c.Prefix)
			if !ok || key == "" {
				continue
			}
			obj := Object{Key: key, Size: aws.ToInt64(o.Size), ETag: unquote(aws.ToString(o.ETag)), ModTime: aws.ToTime(o.LastModified)}
			if err := fn(obj); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) || len(out.Contents) == 0 && out.NextContinuationToken == nil {
			return nil
		}
		if out.NextContinuationToken != nil {
			in.ContinuationToken = out.NextContinuationToken
		} else {
			in.StartAfter = out.Contents[len(out.Contents)-1].Key
		}
	}
}

func (s *S3) listVersions(ctx context.Context, after string, fn func(Object) error) error {
	in := &s3.ListObjectVersionsInput{Bucket: &s.c.Bucket, Prefix: &s.c.Prefix, MaxKeys: aws.Int32(1000)}
	if after != "" {
		in.KeyMarker = aws.String(s.c.Prefix + after)
	}
	for {
		var out *s3.ListObjectVersionsOutput
		err := s.c.Retry.do(ctx, func() error {
			var err error
			out, err = s.cl.ListObjectVersions(ctx, in)
			return s.classifyList(ctx, err)
		})
		if err != nil {
			return err
		}
		for _, v := range out.Versions {
			if !aws.ToBool(v.IsLatest) {
				continue
			}
			key, ok := strings.CutPrefix(aws.ToString(v.Key), s.c.Prefix)
			if !ok || key == "" || key <= after {
				continue
			}
			obj := Object{Key: key, Size: aws.ToInt64(v.Size), ETag: unquote(aws.ToString(v.ETag)),
				VersionID: aws.ToString(v.VersionId), ModTime: aws.ToTime(v.LastModified)}
			if err := fn(obj); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
}

// Stat implements Source.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	var out *s3.HeadObjectOutput
	err := s.c.Retry.do(ctx, func() error {
		var err error
		out, err = s.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.c.Bucket, Key: aws.String(s.c.Prefix + key)})
		return s.classify(ctx, err, key)
	})
	if err != nil {
		return Object{}, err
	}
	o := Object{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: unquote(aws.ToString(out.ETag)), ModTime: aws.ToTime(out.LastModified),
		ContentType: aws.ToString(out.ContentType), Meta: metaPairs(out.Metadata)}
	if s.c.Versioned {
		o.VersionID = aws.ToString(out.VersionId)
	}
	return o, nil
}

// ReadRange implements Source. A body that breaks off is resumed from
// where it stopped with a new ranged GET (still If-Match the pin), within
// the retry budget, so the verifier sees one continuous stream.
func (s *S3) ReadRange(ctx context.Context, p Pin, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off+n > p.Size {
		return nil, fmt.Errorf("read %s [%d,+%d): %w", p, off, n, ErrInvalid)
	}
	b := &s3Body{s: s, ctx: ctx, p: p, off: off, end: off + n, whole: off == 0 && n == p.Size}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err := s.c.Retry.do(ctx, b.open); err != nil {
		return nil, err
	}
	v := newVerifier(b, n, p.String())
	if b.whole {
		switch {
		case b.sum != nil:
			v.expectChecksum(b.sumAlg, b.sum)
		case isMD5ETag(p.ETag) && !b.encrypted:
			v.expectMD5(p.ETag)
		}
	}
	return v, nil
}

// s3Body is a GET response body that resumes after a failure.
type s3Body struct {
	s *S3
	// ctx is the caller's, kept because a Reader's Read takes none: the
	// body lives only within the call that opened it. Each attempt
	// derives its own.
	ctx   context.Context
	p     Pin
	off   int64 // next byte to read
	end   int64
	whole bool

	body    io.ReadCloser
	cancel  context.CancelFunc // ends the current attempt
	stall   *time.Timer
	stalled bool       // guarded by mu
	mu      sync.Mutex // guards stalled
	retries int        // resumes so far
	lastErr error      // why the last attempt failed

	// What the first response vouched for (whole-object reads only).
	sumAlg    checksum.Algorithm
	sum       []byte
	encrypted bool
}

func (b *s3Body) open() error {
	s := b.s
	in := &s3.GetObjectInput{Bucket: &s.c.Bucket, Key: aws.String(s.c.Prefix + b.p.Key), IfMatch: aws.String(`"` + b.p.ETag + `"`)}
	if b.p.VersionID != "" {
		in.VersionId = aws.String(b.p.VersionID)
	}
	first := b.body == nil && b.retries == 0
	ranged := !(b.whole && b.off == 0)
	if ranged {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", b.off, b.end-1))
	} else {
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	actx, cancel := context.WithCancel(b.ctx)
	out, err := s.cl.GetObject(actx, in)
	if err != nil {
		cancel()
		return s.classify(b.ctx, err, b.p.Key)
	}
	fail := func(err error) error {
		out.Body.Close()
		cancel()
		return err
	}
	if got := unquote(aws.ToString(out.ETag)); got != b.p.ETag {
		return fail(fmt.Errorf("%s: remote ETag is now %q: %w", b.p, got, ErrChanged))
	}
	if b.p.VersionID != "" && aws.ToString(out.VersionId) != b.p.VersionID {
		return fail(fmt.Errorf("%s: remote answered version %q: %w", b.p, aws.ToString(out.VersionId), ErrChanged))
	}
	want := b.end - b.off
	if out.ContentLength != nil && *out.ContentLength != want {
		if !ranged && *out.ContentLength != b.p.Size {
			return fail(fmt.Errorf("%s: remote size is now %d: %w", b.p, *out.ContentLength, ErrChanged))
		}
		return fail(fmt.Errorf("%s: remote sent %d bytes for a range of %d: %w", b.p, *out.ContentLength, want, ErrUnavailable))
	}
	if ranged {
		start, total, ok := parseContentRange(aws.ToString(out.ContentRange))
		if !ok || start != b.off {
			return fail(fmt.Errorf("%s: remote did not honour the range (Content-Range %q): %w", b.p, aws.ToString(out.ContentRange), ErrUnavailable))
		}
		if total >= 0 && total != b.p.Size {
			return fail(fmt.Errorf("%s: remote size is now %d: %w", b.p, total, ErrChanged))
		}
	}
	if first && !ranged {
		b.encrypted = out.ServerSideEncryption == types.ServerSideEncryptionAwsKms ||
			out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse || out.SSECustomerAlgorithm != nil
		if out.ChecksumType != types.ChecksumTypeComposite {
			for _, c := range []struct {
				alg checksum.Algorithm
				v   *string
			}{{checksum.CRC64NVME, out.ChecksumCRC64NVME}, {checksum.CRC32C, out.ChecksumCRC32C}, {checksum.CRC32, out.ChecksumCRC32},
				{checksum.SHA256, out.ChecksumSHA256}, {checksum.SHA1, out.ChecksumSHA1}} {
				v := aws.ToString(c.v)
				if v == "" || strings.Contains(v, "-") {
					continue
				}
				if sum, err := base64.StdEncoding.DecodeString(v); err == nil && len(sum) == c.alg.Size() {
					b.sumAlg, b.sum = c.alg, sum
					break
				}
			}
		}
	}
	b.body, b.cancel = out.Body, cancel
	b.mu.Lock()
	b.stalled = false
	b.mu.Unlock()
	b.stall = time.AfterFunc(s.c.StallTimeout, func() {
		b.mu.Lock()
		b.stalled = true
		b.mu.Unlock()
		cancel()
	})
	return nil
}

func (b *s3Body) Read(p []byte) (int, error) {
	for {
		if b.off >= b.end {
			b.closeBody()
			return 0, io.EOF
		}
		if b.body == nil {
			if err := b.reopen(); err != nil {
				return 0, err
			}
		}
		if int64(len(p)) > b.end-b.off {
			p = p[:b.end-b.off]
		}
		n, err := b.body.Read(p)
		if n > 0 {
			b.stall.Reset(b.s.c.StallTimeout)
			b.off += int64(n)
		}
		if err == nil || err == io.EOF && b.off >= b.end {
			if n == 0 && err == nil {
				continue
			}
			return n, nil
		}
		// The body broke off or ended early: the next Read resumes at b.off.
		b.mu.Lock()
		stalled := b.stalled
		b.mu.Unlock()
		b.closeBody()
		if cerr := b.ctx.Err(); cerr != nil {
			return n, cerr
		}
		cause := err
		if stalled {
			cause = fmt.Errorf("no data for %s", b.s.c.StallTimeout)
		} else if err == io.EOF {
			cause = io.ErrUnexpectedEOF
		}
		b.lastErr = fmt.Errorf("%s: body broke off at byte %d: %v: %w", b.p, b.off, cause, ErrUnavailable)
		if n > 0 {
			return n, nil
		}
	}
}

// reopen starts a new GET for the rest of the range after a failure.
func (b *s3Body) reopen() error {
	r := b.s.c.Retry
	for {
		b.retries++
		if b.retries >= r.Attempts {
			return b.lastErr
		}
		if !r.backoff(b.ctx, b.retries) {
			return b.ctx.Err()
		}
		err := b.open()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		b.lastErr = err
	}
}

func (b *s3Body) closeBody() {
	if b.body == nil {
		return
	}
	b.stall.Stop()
	b.body.Close()
	b.cancel()
	b.body = nil
}

func (b *s3Body) Close() error {
	b.closeBody()
	return nil
}

// parseContentRange parses "bytes START-END/TOTAL" (TOTAL may be "*",
// then total is -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	v, ok = strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, tot, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, false
	}
	first, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if tot == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(tot, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return start, total, true
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }

// classify maps an SDK error of an object request to this package's
// errors; the caller's own cancellation passes through unchanged.
func (s *S3) classify(ctx context.Context, err error, key string) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	status, code := remoteStatus(err)
	what := "remote"
	if key != "" {
		what = "remote object " + key
	}
	switch {
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		return fmt.Errorf("%s: no longer matches the pinned ETag: %w", what, ErrChanged)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NoSuchVersion" || code == "NotFound":
		if code == "NoSuchBucket" {
			return fmt.Errorf("%s: the bucket is gone: %w", what, ErrChanged)
		}
		return fmt.Errorf("%s: gone from the remote: %w", what, ErrChanged)
	case status == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%s: shorter than pinned: %w", what, ErrChanged)
	}
	return s.classifyCommon(err, what, status, code)
}

// classifyList maps an SDK error of a listing.
func (s *S3) classifyList(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	status, code := remoteStatus(err)
	if status == http.StatusNotFound || code == "NoSuchBucket" {
		return fmt.Errorf("bucket %s: no such bucket: %w", s.c.Bucket, ErrInvalid)
	}
	return s.classifyCommon(err, "listing bucket "+s.c.Bucket, status, code)
}

func (s *S3) classifyCommon(err error, what string, status int, code string) error {
	switch {
	case status == http.StatusForbidden || status == http.StatusUnauthorized ||
		code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken":
		return fmt.Errorf("%s: %s: %w", what, statusText(status, code), ErrDenied)
	case status == http.StatusTooManyRequests || code == "SlowDown" || code == "Throttling" || code == "ThrottlingException" ||
		code == "RequestLimitExceeded" || code == "TooManyRequests":
		return fmt.Errorf("%s: %s: %w", what, statusText(status, code), ErrThrottled)
	case status >= 500 || status == 0:
		if status == 0 {
			return fmt.Errorf("%s: %v: %w", what, rootCause(err), ErrUnavailable)
		}
		return fmt.Errorf("%s: %s: %w", what, statusText(status, code), ErrUnavailable)
	}
	return fmt.Errorf("%s: %s: %w", what, statusText(status, code), errRejected)
}

// errRejected marks a 4xx answer that retrying will not change.
var errRejected = fmt.Errorf("remote rejected the request: %w", ErrUnavailable)

func statusText(status int, code string) string {
	if code != "" {
		return fmt.Sprintf("%d %s", status, code)
	}
	return fmt.Sprintf("%d %s", status, http.StatusText(status))
}

// remoteStatus digs the HTTP status and S3 error code out of an SDK error
// (0 and "" when the request got no answer).
func remoteStatus(err error) (int, string) {
	status, code := 0, ""
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// rootCause returns the innermost error, which for network failures is
// the useful part ("connection refused", "timeout awaiting headers").
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// metaPairs is a HEAD's user metadata as an entry keeps it: names
// lower-cased, sorted by name.
func metaPairs(m map[string]string) []manifest.Pair {
	if len(m) == 0 {
		return nil
	}
	out := make([]manifest.Pair, 0, len(m))
	for k, v := range m {
		out = append(out, manifest.Pair{Name: strings.ToLower(k), Value: v})
	}
	slices.SortFunc(out, func(a, b manifest.Pair) int { return strings.Compare(a.Name, b.Name) })
	return out
}
