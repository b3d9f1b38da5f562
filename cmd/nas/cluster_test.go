package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/nastest"
)

// clusterGateway is one `nas serve` child of a cluster.
type clusterGateway struct {
	addr string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	s3   *s3.Client
}

// startClusterGateways starts n `nas serve` processes on one PostgreSQL
// database and one chunk directory, and waits until each is ready.
func startClusterGateways(t *testing.T, n int) []*clusterGateway {
	t.Helper()
	dsn := pgtest.Start(t)
	chunks, keys := t.TempDir(), t.TempDir()
	env := []string{"NAS_ACCESS_KEY=" + nastest.AccessKey, "NAS_SECRET_KEY=" + nastest.SecretKey}
	var gws []*clusterGateway
	for range n {
		addr := freeAddr(t)
		cmd, out := nasChild(t, env, "serve", "--addr", addr, "--data", filepath.Join(t.TempDir(), "data"),
			"--meta", dsn, "--chunks", chunks, "--keys", keys, "--gc-interval", "0")
		gw := &clusterGateway{addr: addr, cmd: cmd, out: out, s3: clusterS3(t, addr)}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		gws = append(gws, gw)
	}
	for _, gw := range gws {
		waitReady(t, gw)
	}
	return gws
}

// freeAddr is a loopback address free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady waits until gw answers its readiness probe.
func waitReady(t *testing.T, gw *clusterGateway) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + gw.addr + "/_nas/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gateway %s did not become ready:\n%s", gw.addr, gw.out)
}

// clusterS3 is an owner's S3 client of one gateway, without retries.
func clusterS3(t *testing.T, addr string) *s3.Client {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	cfg := aws.Config{Region: "us-east-1", RetryMaxAttempts: 1, HTTPClient: hc,
		Credentials: credentials.StaticCredentialsProvider{Value: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String("http://" + addr)
		o.UsePathStyle = true
	})
}

// TestClusterKillOneGateway kills one of three gateways (SIGKILL) during
// 16 concurrent PUT streams spread over all three; a client that fails
// retries on the next gateway. Every acknowledged object reads back
// from both survivors, and fsck of the shared stores is clean.
func TestClusterKillOneGateway(t *testing.T) {
	gws := startClusterGateways(t, 3)
	ctx := context.Background()
	const repo = "kill"
	if _, err := gws[0].s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(repo)}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string][]byte{}
	halfway := make(chan struct{})
	var failovers atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 12 {
				key := fmt.Sprintf("w%02d/k%02d", w, i)
				// 1.4 KB to 590 KB: inline chunks and segments.
				body := bytes.Repeat([]byte(key), 200*(i+1)*(1+(i%3)*20))
				ok, failed := putAnywhere(ctx, gws, w+i, repo, key, body)
				failovers.Add(int64(failed))
				if ok {
					mu.Lock()
					if acked[key] = body; len(acked) == 48 {
						close(halfway)
					}
					mu.Unlock()
				}
			}
		})
	}
	<-halfway
	if err := gws[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(acked) != 16*12 {
		t.Fatalf("%d of %d PUTs acknowledged by some gateway", len(acked), 16*12)
	}
	for _, gw := range []*clusterGateway{gws[0], gws[2]} {
		for key, body := range acked {
			out, err := gw.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("acknowledged %s not on %s: %v", key, gw.addr, err)
			}
			got, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%s on %s: %d bytes, %v", key, gw.addr, len(got), err)
			}
		}
	}
	code, out := runCLI(t, "--endpoint", "http://"+gws[2].addr, "--access-key", nastest.AccessKey, "--secret-key", nastest.SecretKey, "fsck")
	if code != 0 {
		t.Fatalf("fsck of the shared stores after a killed gateway: %d\n%s", code, out)
	}
	if failovers.Load() == 0 {
		t.Error("no PUT failed over: the gateway was killed after the load")
	}
	t.Logf("%d PUTs acknowledged, %d attempts failed over; fsck: %s", len(acked), failovers.Load(), out)
}

// putAnywhere PUTs on gateway start%len(gws), and on the next ones
// when one fails; it reports whether one acknowledged it and how many
// attempts failed.
func putAnywhere(ctx context.Context, gws []*clusterGateway, start int, repo, key string, body []byte) (bool, int) {
	for k := range len(gws) {
		gw := gws[(start+k)%len(gws)]
		_, err := gw.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err == nil {
			return true, k
		}
	}
	return false, len(gws)
}
