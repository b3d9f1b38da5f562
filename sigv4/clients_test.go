package sigv4

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

var clientKeys = []string{
	"plain",
	"dir/sub/file.txt",
	"with space and+plus",
	"unicode/ключ/日本語/€",
	"dots/../and/./more",
	"double//slash",
	"percent%2Fencoded%20literal",
	"specials!$&'()*,;=:@~",
	longKey()[:900],
}

// TestAWSSDKClient drives the real aws-sdk-go-v2 S3 client at a TLS
// server, so it uses its default wire formats (aws-chunked with an
// unsigned CRC32 trailer for PutObject).
func TestAWSSDKClient(t *testing.T) {
	ts := newTestServer(t, &Verifier{Lookup: testKeys}, true)
	cl := s3.New(s3.Options{
		Region:           testRegion,
		Credentials:      credentials.NewStaticCredentialsProvider(testAK, testSK, ""),
		BaseEndpoint:     aws.String(ts.URL),
		UsePathStyle:     true,
		HTTPClient:       ts.Client(),
		RetryMaxAttempts: 1,

		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
	ctx := context.Background()
	for _, key := range clientKeys {
		for i, n := range []int{0, 1, 100 << 10, 0, 1, 100 << 10} {
			data := randomData(n, uint64(n+len(key)))
			in := &s3.PutObjectInput{
				Bucket: aws.String("bucket"), Key: aws.String(key), Body: bytes.NewReader(data),
				Metadata: map[string]string{"a": "  spaced   value "},
			}
			if i >= 3 {
				// A reader that cannot seek makes the SDK stream the body
				// aws-chunked with a trailing checksum.
				in.Body, in.ContentLength = struct{ io.Reader }{bytes.NewReader(data)}, aws.Int64(int64(n))
			}
			_, err := cl.PutObject(ctx, in)
			o := ts.next(t)
			if err != nil || o.err != nil || o.bodyErr != nil {
				t.Fatalf("PutObject %q (%d bytes): client %v, Verify %v, body %v", key, n, err, o.err, o.bodyErr)
			}
			if !bytes.Equal(o.body, data) {
				t.Fatalf("PutObject %q: body differs", key)
			}
			if o.res.Mode == StreamingUnsignedTrailer {
				want := crcB64(crc32.ChecksumIEEE(data))
				if got := o.trailer.Get("X-Amz-Checksum-Crc32"); got != want {
					t.Fatalf("PutObject %q: trailer %v, want crc32 %s", key, o.trailer, want)
				}
			}
			t.Logf("PutObject %d bytes: mode %v", n, o.res.Mode)
		}
		if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bucket"), Key: aws.String(key)}); err != nil {
			t.Fatalf("HeadObject %q: %v", key, err)
		}
		if o := ts.next(t); o.err != nil {
			t.Fatalf("HeadObject %q: %v", key, o.err)
		}
		if _, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket"), Prefix: aws.String(key), Delimiter: aws.String("/")}); err != nil {
			t.Fatalf("ListObjectsV2 %q: %v", key, err)
		}
		if o := ts.next(t); o.err != nil {
			t.Fatalf("ListObjectsV2 %q: %v", key, o.err)
		}
		presigner := s3.NewPresignClient(cl)
		p, err := presigner.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(p.Method, p.URL, nil)
		if o := ts.do(t, req); o.err != nil || !o.res.Presigned {
			t.Fatalf("presigned GET %q: %v", key, o.err)
		}
	}

	// A wrong secret is refused.
	bad := s3.New(s3.Options{
		Region: testRegion, Credentials: credentials.NewStaticCredentialsProvider(testAK, "wrong", ""),
		BaseEndpoint: aws.String(ts.URL), UsePathStyle: true, HTTPClient: ts.Client(), RetryMaxAttempts: 1,
	})
	if _, err := bad.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bucket"), Key: aws.String("k")}); err == nil {
		t.Fatal("wrong secret accepted by client")
	}
	if o := ts.next(t); o.err == nil {
		t.Fatal("wrong secret verified")
	}
}

// TestMinioClient drives the real minio-go client: over plain HTTP it
// sends STREAMING-AWS4-HMAC-SHA256-PAYLOAD bodies (with a signed trailer
// when trailing headers are enabled), over TLS unsigned payloads.
func TestMinioClient(t *testing.T) {
	for _, tc := range []struct {
		tls, trailers bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("tls=%v/trailers=%v", tc.tls, tc.trailers), func(t *testing.T) {
			ts := newTestServer(t, &Verifier{Lookup: testKeys}, tc.tls)
			u, _ := url.Parse(ts.URL)
			opts := &minio.Options{
				Creds:           miniocreds.NewStaticV4(testAK, testSK, ""),
				Secure:          tc.tls,
				Region:          testRegion,
				TrailingHeaders: tc.trailers,
				MaxRetries:      1,
			}
			if tc.tls {
				opts.Transport = ts.Client().Transport
			}
			cl, err := minio.New(u.Host, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, key := range clientKeys {
				for i, n := range []int{0, 1, 65536, 200<<10 + 1, 0, 1, 65536, 200<<10 + 1} {
					data := randomData(n, uint64(n+len(key)+1))
					var rd io.Reader = bytes.NewReader(data)
					if i >= 4 {
						rd = struct{ io.Reader }{rd}
					}
					_, err := cl.PutObject(ctx, "bucket", key, rd, int64(n), minio.PutObjectOptions{DisableContentSha256: tc.trailers && !tc.tls})
					o := ts.next(t)
					if err != nil || o.err != nil || o.bodyErr != nil {
						t.Fatalf("PutObject %q (%d bytes): client %v, Verify %v, body %v", key, n, err, o.err, o.bodyErr)
					}
					if !bytes.Equal(o.body, data) {
						t.Fatalf("PutObject %q: body differs", key)
					}
					t.Logf("PutObject %d bytes: mode %v, trailer %v", n, o.res.Mode, o.trailer)
				}
				if _, err := cl.StatObject(ctx, "bucket", key, minio.StatObjectOptions{}); err != nil {
					t.Fatalf("StatObject %q: %v", key, err)
				}
				if o := ts.next(t); o.err != nil {
					t.Fatalf("StatObject %q: %v", key, o.err)
				}
				pu, err := cl.PresignedPutObject(ctx, "bucket", key, 3600e9)
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest("PUT", pu.String(), bytes.NewReader([]byte("presigned body")))
				o := ts.do(t, req)
				if o.err != nil || string(o.body) != "presigned body" {
					t.Fatalf("presigned PUT %q: %v", key, o.err)
				}
			}
		})
	}
}
