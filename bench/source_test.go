package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
)

// The lazy-source benchmarks put gofakes3 on loopback as the remote
// bucket and measure, in the same run, the gateway against that remote
// read directly:
//
//	go test -run '^$' -bench Source -benchtime 3x ./bench

// fakeRemote is an in-memory S3 endpoint on loopback.
type fakeRemote struct {
	url string
	mem *s3mem.Backend
	cl  *s3.Client
}

func startFakeRemote(b *testing.B) *fakeRemote {
	mem := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	b.Cleanup(srv.Close)
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}})
	if err := mem.CreateBucket("remote"); err != nil {
		b.Fatal(err)
	}
	return &fakeRemote{url: srv.URL, mem: mem, cl: cl}
}

func (r *fakeRemote) put(b *testing.B, key string, data []byte) {
	if _, err := r.mem.PutObject("remote", key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		b.Fatal(err)
	}
}

// attach attaches the remote's prefix to repo at "ds/" and waits.
func attach(b *testing.B, srv *nastest.Server, rm *fakeRemote, repo, prefix string) *source.Info {
	ctx := context.Background()
	if _, err := client(srv).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(repo)}); err != nil {
		b.Fatal(err)
	}
	reg := srv.Gateway.Sources
	info, err := reg.Add(ctx, source.Spec{Repo: repo, Prefix: "ds/", URL: "s3://remote/" + prefix, Endpoint: rm.url, AccessKey: "k", SecretKey: "s"})
	if err != nil {
		b.Fatal(err)
	}
	if info, err = reg.Wait(ctx, info.ID); err != nil {
		b.Fatal(err)
	}
	return info
}

// timedGet GETs an object and returns the time to its first byte and to
// its last.
func timedGet(b *testing.B, cl *s3.Client, bucket, key string) (ttfb, total time.Duration) {
	start := time.Now()
	out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		b.Fatal(err)
	}
	var one [1]byte
	if _, err := io.ReadFull(out.Body, one[:]); err != nil {
		b.Fatal(err)
	}
	ttfb = time.Since(start)
	if _, err := io.Copy(io.Discard, out.Body); err != nil {
		b.Fatal(err)
	}
	out.Body.Close()
	return ttfb, time.Since(start)
}

// BenchmarkSourceAttach attaches buckets of 1,000 to 100,000 objects (a
// million with NAS_BENCH_FULL) and reports the time per attach beside a
// bare listing of the same bucket (ListObjectsV2, all pages) in the same
// run: attach lists once and imports the entries, so x-list-time is what
// the import adds to the listing.
func BenchmarkSourceAttach(b *testing.B) {
	ns := []int{1000, 10000, 100000}
	if os.Getenv("NAS_BENCH_FULL") != "" {
		ns = append(ns, 1000000)
	}
	for _, n := range ns {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			rm := startFakeRemote(b)
			prefix := fmt.Sprintf("set%d/", n)
			for i := 0; i < n; i++ {
				rm.put(b, fmt.Sprintf("%spart-%07d.json", prefix, i), []byte(fmt.Sprintf(`{"i":%d}`, i)))
			}
			srv := nastest.Start(b)
			var att, list time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				info := attach(b, srv, rm, fmt.Sprintf("att-%d-%d", n, i), prefix)
				att += time.Since(start)
				if info.Added != int64(n) {
					b.Fatalf("attached %d objects, want %d", info.Added, n)
				}
				start = time.Now()
				p := s3.NewListObjectsV2Paginator(rm.cl, &s3.ListObjectsV2Input{Bucket: aws.String("remote"), Prefix: aws.String(prefix)})
				seen := 0
				for p.HasMorePages() {
					page, err := p.NextPage(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					seen += len(page.Contents)
				}
				list += time.Since(start)
				if seen != n {
					b.Fatalf("listed %d", seen)
				}
			}
			b.StopTimer()
			k := float64(b.N)
			b.ReportMetric(att.Seconds()/k*1000, "attach-ms")
			b.ReportMetric(list.Seconds()/k*1000, "list-ms")
			b.ReportMetric(float64(n)*k/att.Seconds(), "objects/s")
			b.ReportMetric(att.Seconds()/list.Seconds(), "x-list-time")
		})
	}
}

// BenchmarkSourceFirstRead times the first read of a remote object through
// the gateway (fetch, chunk, store, stream) against a direct GET of the
// same object from the remote, alternately in one run. Each iteration reads
// a new object (new content, pinned by a refresh outside the timing).
func BenchmarkSourceFirstRead(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rm := startFakeRemote(b)
			srv := nastest.Start(b)
			data := randomBytes(size)
			rm.put(b, "first/seed", data[:1])
			info := attach(b, srv, rm, "firstread", "first/")
			cl := client(srv)
			var gwTTFB, gwTotal, dTTFB, dTotal time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				copy(data, fmt.Sprintf("%016d", i)) // new content: nothing to deduplicate
				key := fmt.Sprintf("obj-%d", i)
				rm.put(b, "first/"+key, data)
				if _, err := srv.Gateway.Sources.Refresh(context.Background(), info.ID, ""); err != nil {
					b.Fatal(err)
				}
				if _, err := srv.Gateway.Sources.Wait(context.Background(), info.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				f, t := timedGet(b, cl, "firstread", "ds/"+key)
				gwTTFB, gwTotal = gwTTFB+f, gwTotal+t
				f, t = timedGet(b, rm.cl, "remote", "first/"+key)
				dTTFB, dTotal = dTTFB+f, dTotal+t
			}
			b.StopTimer()
			k := float64(b.N)
			b.ReportMetric(float64(size)*k/gwTotal.Seconds()/(1<<20), "gw-MiB/s")
			b.ReportMetric(float64(size)*k/dTotal.Seconds()/(1<<20), "direct-MiB/s")
			b.ReportMetric(gwTotal.Seconds()/dTotal.Seconds(), "x-direct-time")
			b.ReportMetric(gwTTFB.Seconds()/k*1000, "gw-ttfb-ms")
			b.ReportMetric(dTTFB.Seconds()/k*1000, "direct-ttfb-ms")
		})
	}
}

// BenchmarkSourceSecondRead times reads of a materialised remote object
// against reads of an object PUT into the gateway (same size), alternately
// in one run, and, as a reference, a direct GET from the remote.
func BenchmarkSourceSecondRead(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rm := startFakeRemote(b)
			srv := nastest.Start(b)
			data := randomBytes(size)
			rm.put(b, "second/obj", data)
			attach(b, srv, rm, "secondread", "second/")
			cl := client(srv)
			ctx := context.Background()
			local := append([]byte("local"), data[5:]...)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("secondread"), Key: aws.String("local/obj"), Body: bytes.NewReader(local)}); err != nil {
				b.Fatal(err)
			}
			timedGet(b, cl, "secondread", "ds/obj") // materialise
			g0 := srv.Gateway.Sources.Materializer().Stats().Fetches
			var lazy, loc, direct time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, t := timedGet(b, cl, "secondread", "ds/obj")
				lazy += t
				_, t = timedGet(b, cl, "secondread", "local/obj")
				loc += t
				_, t = timedGet(b, rm.cl, "remote", "second/obj")
				direct += t
			}
			b.StopTimer()
			if srv.Gateway.Sources.Materializer().Stats().Fetches != g0 {
				b.Fatal("a second read went to the remote")
			}
			k := float64(b.N)
			b.ReportMetric(float64(size)*k/lazy.Seconds()/(1<<20), "gw-MiB/s")
			b.ReportMetric(float64(size)*k/loc.Seconds()/(1<<20), "local-MiB/s")
			b.ReportMetric(float64(size)*k/direct.Seconds()/(1<<20), "direct-MiB/s")
			b.ReportMetric(lazy.Seconds()/loc.Seconds(), "x-local-time")
		})
	}
}
