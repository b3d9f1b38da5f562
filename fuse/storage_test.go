package fuse_test

import (
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestStorageFull: on a gateway at its free-space floor a file written
// through the mount fails with ENOSPC at close, whether it was sent whole
// (small) or streamed in parts while written (large), and the gateway
// keeps neither.
func TestStorageFull(t *testing.T) {
	e := newEnv(t, nastest.Options{MinFree: math.MaxInt64})
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	for name, size := range map[string]int{"small.txt": 1000, "large.bin": 40 << 20} {
		err := os.WriteFile(filepath.Join(mnt, name), pattern(size, size), 0o644)
		wantErrno(t, err, syscall.ENOSPC)
		if _, err := e.get(e.owner, "dev", name); client.Code(err) != "NoSuchKey" {
			t.Fatalf("%s after a refused write: %v, want NoSuchKey", name, err)
		}
	}
}
