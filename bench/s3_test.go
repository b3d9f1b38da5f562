package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

func client(srv *nastest.Server) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		// Measure the server, not the client's checksum: send the body as is.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
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
				data := randomBytes(size)
				var n atomic.Int64
				b.SetBytes(int64(size))
				b.SetParallelism(conc)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						// Vary the first bytes so every object is new content.
						d := append([]byte(fmt.Sprintf("%016d", i)), data[16:]...)
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
