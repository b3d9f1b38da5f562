package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// TestMain doubles as a server process (ServeChild) that the memory
// workload and BenchmarkStreamingRSS measure from outside:
// NAS_BENCH_SERVE=kind,dir,addr.
func TestMain(m *testing.M) {
	if v := os.Getenv("NAS_BENCH_SERVE"); v != "" {
		os.Exit(serveChild(v))
	}
	os.Exit(m.Run())
}

func serveChild(spec string) int {
	parts := strings.SplitN(spec, ",", 3)
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "NAS_BENCH_SERVE: want kind,dir,addr")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := ServeChild(ctx, parts[0], parts[1], parts[2]); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// testSpawner runs servers as this test binary.
func testSpawner(kind, dir, addr string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "NAS_BENCH_SERVE="+kind+","+dir+","+addr)
	return cmd
}

// pattern is an endless, cheap, incompressible-enough byte stream.
type pattern struct{ n uint64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		p.n = p.n*6364136223846793005 + 1442695040888963407
		b[i] = byte(p.n >> 56)
	}
	return len(b), nil
}

// BenchmarkStreamingRSS uploads and downloads one large object (2 GiB, or
// NAS_BENCH_RSS_MIB MiB) through a gateway in a separate process and reports
// its resident set before, during the PUT, and during the GET. Streaming
// means the peaks stay flat whatever the object size. Unlike the harness's
// memory workload it uploads with minio-go (aws-chunked, signed chunks).
func BenchmarkStreamingRSS(b *testing.B) {
	size := int64(2 << 30)
	if v := os.Getenv("NAS_BENCH_RSS_MIB"); v != "" {
		mib, _ := strconv.ParseInt(v, 10, 64)
		size = mib << 20
	}
	ctx := context.Background()
	child, err := StartChild(ctx, testSpawner, KindNAS, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer child.Stop()
	cl, err := minio.New(strings.TrimPrefix(child.Endpoint, "http://"), &minio.Options{Creds: miniocreds.NewStaticV4(benchAccessKey, benchSecretKey, "")})
	if err != nil {
		b.Fatal(err)
	}
	if err := cl.MakeBucket(ctx, "rss", minio.MakeBucketOptions{}); err != nil {
		b.Fatal(err)
	}
	pid := child.Cmd.Process.Pid
	before := RSS(pid)
	b.SetBytes(2 * size)
	b.ResetTimer()
	var putPeak, getPeak int64
	for i := 0; i < b.N; i++ {
		s := SampleRSS(pid, 50*time.Millisecond)
		_, err := cl.PutObject(ctx, "rss", "big", io.LimitReader(&pattern{n: uint64(i)}, size), size,
			minio.PutObjectOptions{DisableMultipart: true, SendContentMd5: false})
		putPeak = max(putPeak, s.Stop())
		if err != nil {
			b.Fatal(err)
		}
		s = SampleRSS(pid, 50*time.Millisecond)
		obj, err := cl.GetObject(ctx, "rss", "big", minio.GetObjectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, obj)
		obj.Close()
		getPeak = max(getPeak, s.Stop())
		if err != nil || n != size {
			b.Fatalf("GET returned %d of %d bytes: %v", n, size, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(before)/(1<<20), "rss-before-MiB")
	b.ReportMetric(float64(putPeak)/(1<<20), "rss-put-peak-MiB")
	b.ReportMetric(float64(getPeak)/(1<<20), "rss-get-peak-MiB")
	b.ReportMetric(float64(size)/(1<<20), "object-MiB")
}
