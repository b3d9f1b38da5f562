package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentnas/nas/nastest"
)

func client(srv *nastest.Server) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		// Measure the server, not the client's hashing: no checksum and an
		// unsigned payload, so the SDK does not SHA-256 the body first.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		APIOptions:                 []func(*middleware.Stack) error{v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware},
	})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func BenchmarkPut(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		for _, conc := range []int{1, 8} {
			b.Run(fmt.Sprintf("size=%d/conc=%d", size, conc), func(b *testing.B) {
				srv := nastest.Start(b)
				cl := client(srv)
				ctx := context.Background()
				if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
					b.Fatal(err)
				}
				var n atomic.Int64
				b.SetBytes(int64(size))
				b.SetParallelism(conc)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						// New content in every chunk: varying only the first
						// bytes would let the chunk store deduplicate the rest.
						d := DefaultContent().Bytes(uint64(i), int64(size))
						_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(fmt.Sprintf("k%d", i)), Body: bytes.NewReader(d)})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			srv := nastest.Start(b)
			cl := client(srv)
			ctx := context.Background()
			cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")})
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("obj"), Body: bytes.NewReader(randomBytes(size))}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("obj")})
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, out.Body)
				out.Body.Close()
			}
		})
	}
}

// BenchmarkPutVsFile times, alternately in one run, a PUT through the
// gateway and the physical baseline for the same bytes: writing a new file
// in the same file system and fsyncing it (and its directory). It reports
// both and their ratio.
func BenchmarkPutVsFile(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			srv := nastest.Start(b)
			cl := client(srv)
			ctx := context.Background()
			cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")})
			dir := b.TempDir()
			var gw, disk time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// New content in every chunk (see Content), outside the timing.
				data := DefaultContent().Bytes(uint64(i), int64(size))
				b.StartTimer()
				start := time.Now()
				_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(fmt.Sprintf("k%d", i)), Body: bytes.NewReader(data)})
				if err != nil {
					b.Fatal(err)
				}
				gw += time.Since(start)
				start = time.Now()
				if err := writeSynced(filepath.Join(dir, fmt.Sprintf("f%d", i)), data); err != nil {
					b.Fatal(err)
				}
				disk += time.Since(start)
			}
			b.StopTimer()
			report(b, size, gw, disk)
		})
	}
}

// BenchmarkGetVsFile does the same for reads: a GET of the object against
// reading the same bytes from a plain file (both from the page cache).
func BenchmarkGetVsFile(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			srv := nastest.Start(b)
			cl := client(srv)
			ctx := context.Background()
			cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")})
			data := randomBytes(size)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("obj"), Body: bytes.NewReader(data)}); err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(b.TempDir(), "f")
			if err := writeSynced(path, data); err != nil {
				b.Fatal(err)
			}
			var gw, disk time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("obj")})
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, out.Body)
				out.Body.Close()
				gw += time.Since(start)
				start = time.Now()
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, f)
				f.Close()
				disk += time.Since(start)
			}
			b.StopTimer()
			report(b, size, gw, disk)
		})
	}
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// report prints both sides and the ratio gateway/baseline (1 = as fast as
// the baseline, 2 = twice as slow).
func report(b *testing.B, size int, gw, base time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(size)*n/gw.Seconds()/(1<<20), "gw-MiB/s")
	b.ReportMetric(float64(size)*n/base.Seconds()/(1<<20), "file-MiB/s")
	b.ReportMetric(gw.Seconds()/base.Seconds(), "x-file-time")
}
