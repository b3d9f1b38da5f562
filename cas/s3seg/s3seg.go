// Package s3seg keeps the chunk store's segments in an S3 bucket (any
// S3-compatible store: AWS, MinIO, Ceph, another Agent NAS gateway), so
// that gateways sharing a metadata store share their chunks too
// (`nas serve --chunks s3://BUCKET/PREFIX`). It is a cas.Remote.
//
// A segment is one object, PREFIX + the store's name of it
// ("3f/3f0c….seg"). It is written once, whole: a PUT, or a multipart
// upload of 16 MiB parts above 64 MiB (the transfer manager's), and the
// write is durable when the PUT or the completion returned, which is
// before the store records any chunk of it. Reads are ranged GETs of the
// chunk they need. Every request is retried with the SDK's backoff (up
// to 5 attempts); a store that stays down surfaces as the error of the
// read or the upload that needed it.
package s3seg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Config names the bucket and how to reach it.
type Config struct {
	// URL is s3://BUCKET or s3://BUCKET/PREFIX.
	URL string
	// Endpoint is the store's URL; "" means AWS S3 (virtual-host style).
	Endpoint string
	Region   string // "" means us-east-1
	// AccessKey and SecretKey sign requests (required).
	AccessKey, SecretKey string
	// HTTPClient, when set, carries the requests (tests).
	HTTPClient *http.Client
}

// Store is a bucket prefix holding segments.
type Store struct {
	c      *s3.Client
	tm     *transfermanager.Client
	bucket string
	prefix string
}

// multipartAbove is the size from which a segment is stored in parts.
const (
	multipartAbove = 64 << 20
	partSize       = 16 << 20
)

// IsURL reports whether s names a bucket (s3://...).
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// Open checks c and returns the Store; it makes no request.
func Open(c Config) (*Store, error) {
	bucket, prefix, err := parseURL(c.URL)
	if err != nil {
		return nil, err
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return nil, errors.New("s3seg: the chunk bucket needs an access key and a secret key")
	}
	cfg := aws.Config{
		Region:           cmpOr(c.Region, "us-east-1"),
		Credentials:      credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, ""),
		RetryMaxAttempts: 5,
		// Segments are checked by their chunks' BLAKE3 names on read; the
		// SDK's CRC on every request adds nothing but a pass over them.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if c.HTTPClient != nil {
		cfg.HTTPClient = c.HTTPClient
	}
	cl := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
			o.UsePathStyle = true
		}
	})
	tm := transfermanager.New(cl, func(o *transfermanager.Options) {
		o.MultipartUploadThreshold = multipartAbove
		o.PartSizeBytes = partSize
		o.Concurrency = 4
	})
	return &Store{c: cl, tm: tm, bucket: bucket, prefix: prefix}, nil
}

// parseURL splits s3://BUCKET/PREFIX; the prefix ends in "/" unless empty.
func parseURL(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("s3seg: %q is not s3://BUCKET[/PREFIX]", s)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return u.Host, prefix, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Check asks the bucket whether it is there and ours to write: a listing
// of the prefix, and a small probe object written and deleted, so a
// gateway that could not store its chunks says so when it starts rather
// than at its first large upload.
func (s *Store) Check(ctx context.Context) error {
	where := fmt.Sprintf("chunk bucket s3://%s/%s", s.bucket, s.prefix)
	_, err := s.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix), MaxKeys: aws.Int32(1)})
	if err != nil {
		return fmt.Errorf("%s: list: %w", where, err)
	}
	probe := s.prefix + "probe/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &probe, Body: strings.NewReader("probe")}); err != nil {
		return fmt.Errorf("%s: write: %w", where, err)
	}
	if _, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &probe}); err != nil {
		return fmt.Errorf("%s: delete: %w", where, err)
	}
	return nil
}

// Put implements cas.Remote.
func (s *Store) Put(ctx context.Context, name string, r io.ReaderAt, size int64) error {
	key := s.prefix + name
	body := io.NewSectionReader(r, 0, size)
	if size <= multipartAbove {
		_, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: body, ContentLength: aws.Int64(size)})
		return err
	}
	_, err := s.tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &s.bucket, Key: &key, Body: body})
	return err
}

// Open implements cas.Remote.
func (s *Store) Open(ctx context.Context, name string) io.ReaderAt {
	return &segment{ctx: ctx, s: s, key: s.prefix + name}
}

// Delete implements cas.Remote.
func (s *Store) Delete(ctx context.Context, name string) error {
	_, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + name)})
	var nf *types.NoSuchKey
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// List implements cas.Remote.
func (s *Store) List(ctx context.Context, fn func(name string, size int64, modified time.Time) error) error {
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if err := fn(strings.TrimPrefix(aws.ToString(o.Key), s.prefix), aws.ToInt64(o.Size), aws.ToTime(o.LastModified)); err != nil {
				return err
			}
		}
	}
	return nil
}

// segment reads a segment object's byte ranges.
type segment struct {
	ctx context.Context // the read's
	s   *Store
	key string
}

// ReadAt implements io.ReaderAt with one ranged GET.
func (g *segment) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 {
		return 0, fmt.Errorf("s3seg: read at %d", off)
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)
	out, err := g.s.c.GetObject(g.ctx, &s3.GetObjectInput{Bucket: &g.s.bucket, Key: &g.key, Range: &rng})
	var nf *types.NoSuchKey
	if errors.As(err, &nf) {
		// Missing, not unreachable: the caller must not take it for an
		// outage to wait out.
		return 0, fmt.Errorf("segment %s: %w", g.key, fs.ErrNotExist)
	}
	if err != nil {
		return 0, fmt.Errorf("segment %s: %w", g.key, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}
