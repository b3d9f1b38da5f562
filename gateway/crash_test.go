package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gateway"
)

const (
	crashAK = "AKIACRASHTEST0000001"
	crashSK = "crash-test-secret"
)

// TestMain doubles as the gateway process the crash test kills: with
// NAS_CRASH_CHILD set it serves DATA on 127.0.0.1:0 and prints its address.
func TestMain(m *testing.M) {
	if dir := os.Getenv("NAS_CRASH_CHILD"); dir != "" {
		os.Exit(crashChild(dir))
	}
	os.Exit(m.Run())
}

func crashChild(dir string) int {
	log := slog.New(slog.DiscardHandler)
	g, err := gateway.Open(gateway.Config{DataDir: dir, Owner: auth.Owner{AccessKey: crashAK, SecretKey: crashSK}, Log: log})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer g.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{
		Addr:  "127.0.0.1:0",
		Ready: func(a net.Addr) { fmt.Println("READY", a.String()) },
	}, log)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	return 0
}

type child struct {
	cmd  *exec.Cmd
	addr string
}

func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NAS_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	ready := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), "READY "); ok {
				ready <- a
			}
		}
	}()
	select {
	case a := <-ready:
		return &child{cmd: cmd, addr: a}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child gateway did not start")
	}
	return nil
}

func (c *child) client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + c.addr),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(crashAK, crashSK, ""),
		Retryer:      aws.NopRetryer{},
	})
}

// payload returns the deterministic content of object i.
func payload(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	sizes := []int{0, 100, 4 << 10, 70 << 10, 300 << 10, 1 << 20, 3<<20 + 5}
	b := make([]byte, sizes[i%len(sizes)])
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// TestCrashDuringUploads kills the gateway with SIGKILL while uploads are in
// flight, restarts it, and checks that every acknowledged object reads back
// byte for byte, that no listed object is partial, and that fsck is clean.
func TestCrashDuringUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	ctx := context.Background()
	acked := map[string]int{} // key -> payload index
	next := 0
	for round := 0; round < 3; round++ {
		c := startChild(t, dir)
		cl := c.client()
		if round == 0 {
			if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("crash")}); err != nil {
				t.Fatal(err)
			}
		}
		// Everything acknowledged before must have survived.
		verify(t, cl, acked)

		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					key := fmt.Sprintf("obj/%06d", i)
					_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("crash"), Key: aws.String(key), Body: bytes.NewReader(payload(i))})
					if err == nil {
						mu.Lock()
						acked[key] = i
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.cmd.Wait()
		close(stop)
		wg.Wait()
		t.Logf("round %d: %d objects acknowledged so far", round, len(acked))
	}
	c := startChild(t, dir)
	verify(t, c.client(), acked)
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("gateway did not shut down cleanly: %v", err)
	}
	g, err := gateway.Open(gateway.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rep, err := g.Branches.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
	if rep.Entries == 0 {
		t.Fatal("fsck saw no entries")
	}
}

// verify reads every acknowledged object and checks that every listed
// object is complete.
func verify(t *testing.T, cl *s3.Client, acked map[string]int) {
	t.Helper()
	ctx := context.Background()
	for key, i := range acked {
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("crash"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("acknowledged %s lost: %v", key, err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(b, payload(i)) {
			t.Fatalf("acknowledged %s reads back wrong (%d bytes, err %v)", key, len(b), err)
		}
	}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String("crash")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			var i int
			fmt.Sscanf(strings.TrimPrefix(*o.Key, "obj/"), "%d", &i)
			sum := md5.Sum(payload(i))
			if strings.Trim(*o.ETag, `"`) != hex.EncodeToString(sum[:]) || *o.Size != int64(len(payload(i))) {
				t.Fatalf("listed %s is not the complete object (size %d)", *o.Key, *o.Size)
			}
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
