package fuse_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
