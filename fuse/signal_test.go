package fuse_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/client"
)

// TestCloseUnderSignals: signals to the writing program (Go's scheduler
// sends SIGURG all the time) interrupt close's FUSE request; close must
// still upload and succeed, never fail with EINTR.
func TestCloseUnderSignals(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{noStream: true})
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			syscall.Kill(os.Getpid(), syscall.SIGURG)
			time.Sleep(20 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for i := range 20 {
		p := filepath.Join(mnt, fmt.Sprintf("f%02d", i))
		data := pattern(i, 3<<20)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got, err := e.get(e.owner, "dev", fmt.Sprintf("f%02d", i)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("gateway %d: %v", i, err)
		}
	}
}

// TestUnlinkUnderSignal: a signal that reaches a program while the
// gateway has deleted its file but not yet answered does not fail the
// unlink with EINTR (a program that retries, as Go's os.Remove does,
// would then find the file gone: ENOENT). The program is Python: one
// thread, so the signal interrupts the one in unlink.
func TestUnlinkUnderSignal(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.put(t, "dev", "d/victim", []byte("v"))
	deleted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := e.ownerAround(t, nil, func(r *http.Request) {
		if r.Method == http.MethodDelete {
			once.Do(func() { close(deleted); <-release })
		}
	})
	mnt, _ := e.mount(t, mountOpts{c: c})
	p := filepath.Join(mnt, "d", "victim")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	script := "import os, signal, sys\n" +
		"signal.signal(signal.SIGUSR1, lambda *a: None)\n" +
		"print('ready', flush=True)\n" +
		"os.unlink(sys.argv[1])\n"
	cmd := exec.Command(py, "-c", script, p)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	defer cmd.Wait()
	select {
	case <-deleted:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatalf("no DELETE reached the gateway: %s", out.String())
	}
	// Past the mount's TTL, so that a retry asks the gateway again.
	time.Sleep(300 * time.Millisecond)
	must(t, cmd.Process.Signal(syscall.SIGUSR1))
	time.Sleep(300 * time.Millisecond) // time for an EINTR and its retry
	close(release)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("unlink interrupted by a signal once the gateway deleted: %v\n%s", err, out.String())
	}
	if _, err := e.get(e.owner, "dev", "d/victim"); client.Code(err) != "NoSuchKey" {
		t.Fatalf("after the unlink: %v", err)
	}
}
