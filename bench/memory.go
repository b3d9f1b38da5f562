package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The memory workload: the resident set of a server process while one
// large object streams in (a single PUT) and out (a GET). The server runs
// in a separate process (Env.Spawn) so that the client's buffers are not
// counted; its VmRSS is sampled every 20 ms.

// RSS returns the resident set of process pid in bytes (0 if unknown).
func RSS(pid int) int64 {
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

// Sampler records the peak resident set of a process until Stop.
type Sampler struct {
	pid  int
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex // guards peak
	peak int64
}

// SampleRSS starts sampling pid every interval.
func SampleRSS(pid int, interval time.Duration) *Sampler {
	s := &Sampler{pid: pid, stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			r := RSS(pid)
			s.mu.Lock()
			s.peak = max(s.peak, r)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peak in bytes.
func (s *Sampler) Stop() int64 {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Child is a server process started through a Spawner.
type Child struct {
	Cmd      *exec.Cmd
	Endpoint string
	done     chan error
}

// StartChild spawns a server of kind on dir and waits until it answers.
func StartChild(ctx context.Context, spawn Spawner, kind, dir string) (*Child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := spawn(kind, dir, addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", kind, err)
	}
	ch := &Child{Cmd: cmd, Endpoint: "http://" + addr, done: make(chan error, 1)}
	go func() { ch.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return ch, nil
		}
		select {
		case err := <-ch.done:
			if err == nil {
				err = errors.New("exit status 0")
			}
			return nil, fmt.Errorf("%s server exited before listening: %w", kind, err)
		case <-ctx.Done():
			ch.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ch.Stop()
			return nil, fmt.Errorf("%s server not listening on %s after 30s", kind, addr)
		}
	}
}

// Stop ends the child (SIGTERM, then SIGKILL after 30 seconds).
func (c *Child) Stop() {
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.Cmd.Process.Kill()
		<-c.done
	}
}

func runMemory(ctx context.Context, e *Env) ([]*Result, error) {
	size := e.Profile.MemorySize
	var rows []Row
	for _, s := range e.Specs {
		var (
			row Row
			err error
		)
		switch {
		case s.Kind == KindEndpoint && s.PID > 0:
			e.Logf("  memory: %s (pid %d), %s in and out", s.Name, s.PID, FormatSize(size))
			row, err = measureEndpointMemory(ctx, e, s, size)
		case s.Kind == KindEndpoint:
			rows = append(rows, Row{Subject: s.Name, Skipped: "give the endpoint's server process (--target-pid NAME=PID) to sample its resident set"})
			continue
		case e.Spawn == nil:
			rows = append(rows, Row{Subject: s.Name, Skipped: "no way to start a server process here (Env.Spawn is unset)"})
			continue
		default:
			e.Logf("  memory: %s, %s in and out", s.Name, FormatSize(size))
			row, err = measureChildMemory(ctx, e, s, size)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			row = Row{Subject: s.Name, Skipped: "failed: " + err.Error()}
		}
		rows = append(rows, row)
	}
	return []*Result{{Case: fmt.Sprintf("one %s object, single PUT then GET", FormatSize(size)), Rows: rows,
		Notes: []string{"Peak VmRSS of the server process, sampled every 20 ms; one run."}}}, nil
}

// measureChildMemory starts the target as a separate process and measures
// it.
func measureChildMemory(ctx context.Context, e *Env, s TargetSpec, size int64) (Row, error) {
	dir, err := e.TempDir("memory-" + s.Name)
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	child, err := StartChild(ctx, e.Spawn, s.Kind, dir)
	if err != nil {
		return Row{}, err
	}
	defer child.Stop()
	cl := NewClient(child.Endpoint, "us-east-1", BenchCredentials())
	defer cl.Close()
	if err := cl.CreateBucket(ctx, "memory"); err != nil {
		return Row{}, err
	}
	return measureMemory(ctx, s.Name, cl, "memory", child.Cmd.Process.Pid, size)
}

// measureEndpointMemory measures an endpoint whose server process the
// caller named.
func measureEndpointMemory(ctx context.Context, e *Env, s TargetSpec, size int64) (Row, error) {
	t, err := e.StartTarget(ctx, s)
	if err != nil {
		return Row{}, err
	}
	defer t.Close()
	bucket, err := t.Bucket(ctx, "memory")
	if err != nil {
		return Row{}, err
	}
	if RSS(s.PID) == 0 {
		return Row{}, fmt.Errorf("no resident set for pid %d (is it running on this machine?)", s.PID)
	}
	return measureMemory(ctx, s.Name, t.Client, bucket, s.PID, size)
}

func measureMemory(ctx context.Context, name string, cl *Client, bucket string, pid int, size int64) (Row, error) {
	idle := RSS(pid)
	smp := SampleRSS(pid, 20*time.Millisecond)
	start := time.Now()
	err := cl.Put(ctx, bucket, "big", DefaultContent().Reader(42, size), size)
	putPeak, putTime := smp.Stop(), time.Since(start)
	if err != nil {
		return Row{}, err
	}
	smp = SampleRSS(pid, 20*time.Millisecond)
	start = time.Now()
	n, err := cl.Get(ctx, bucket, "big")
	getPeak, getTime := smp.Stop(), time.Since(start)
	if err == nil && n != size {
		err = errors.New("short GET")
	}
	if err != nil {
		return Row{}, err
	}
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	rate := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	return Row{Subject: name, Metrics: []Metric{
		{Name: "peak RSS", Unit: "MiB", Value: mib(max(putPeak, getPeak)), Better: Lower},
		{Name: "idle", Unit: "MiB", Value: mib(idle), Better: Lower},
		{Name: "during PUT", Unit: "MiB", Value: mib(putPeak), Better: Lower},
		{Name: "during GET", Unit: "MiB", Value: mib(getPeak), Better: Lower},
		{Name: "PUT", Unit: "MiB/s", Value: rate(putTime)},
		{Name: "GET", Unit: "MiB/s", Value: rate(getTime)},
	}}, nil
}
