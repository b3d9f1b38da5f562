package cas

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing n bytes of f at off to
// the disk, without waiting for them: the disk then works while the rest
// of the upload is still being read and hashed, and the fsync in Sync has
// less left to do. It is only a hint (errors are ignored); durability
// still comes from Sync alone.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
