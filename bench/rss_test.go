package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/s3api"
)

// TestMain doubles as a gateway process whose memory the RSS benchmark
// measures from outside.
func TestMain(m *testing.M) {
	if dir := os.Getenv("NAS_BENCH_CHILD"); dir != "" {
		os.Exit(serveChild(dir))
	}
	os.Exit(m.Run())
}

func serveChild(dir string) int {
	log := slog.New(slog.DiscardHandler)
	g, err := gateway.Open(gateway.Config{DataDir: dir, Owner: s3api.Credentials{AccessKey: nastest.AccessKey, SecretKey: nastest.SecretKey}, Log: log})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer g.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{
		Addr: "127.0.0.1:0", Ready: func(a net.Addr) { fmt.Println("READY", a) }}, log)
	if err != nil {
		return 1
	}
	return 0
}

// rss returns the resident set of pid in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sampler records the peak RSS of pid until stopped.
type sampler struct {
	pid  int
	peak int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func sample(pid int) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			s.peak = max(s.peak, rss(pid))
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) done() int64 { close(s.stop); s.wg.Wait(); return s.peak }

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
// means the peaks stay flat whatever the object size.
func BenchmarkStreamingRSS(b *testing.B) {
	size := int64(2 << 30)
	if v := os.Getenv("NAS_BENCH_RSS_MIB"); v != "" {
		mib, _ := strconv.ParseInt(v, 10, 64)
		size = mib << 20
	}
	dir := b.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "NAS_BENCH_CHILD="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		b.Fatal("gateway did not start")
	}
	cl, err := minio.New(addr, &minio.Options{Creds: miniocreds.NewStaticV4(nastest.AccessKey, nastest.SecretKey, "")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "rss", minio.MakeBucketOptions{}); err != nil {
		b.Fatal(err)
	}
	pid := cmd.Process.Pid
	before := rss(pid)
	b.SetBytes(2 * size)
	b.ResetTimer()
	var putPeak, getPeak int64
	for i := 0; i < b.N; i++ {
		s := sample(pid)
		_, err := cl.PutObject(ctx, "rss", "big", io.LimitReader(&pattern{n: uint64(i)}, size), size,
			minio.PutObjectOptions{DisableMultipart: true, SendContentMd5: false})
		putPeak = max(putPeak, s.done())
		if err != nil {
			b.Fatal(err)
		}
		s = sample(pid)
		obj, err := cl.GetObject(ctx, "rss", "big", minio.GetObjectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, obj)
		obj.Close()
		getPeak = max(getPeak, s.done())
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
