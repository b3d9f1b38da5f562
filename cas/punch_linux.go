package cas

import (
	"os"

	"golang.org/x/sys/unix"
)

// punch frees n bytes of f at off (they read as zeros after), keeping the
// file's size; where the file system cannot punch holes it writes zeros.
func punch(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := rc.Control(func(fd uintptr) {
		perr = unix.Fallocate(int(fd), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	}); err != nil {
		return err
	}
	if perr != nil {
		return zeroes(f, off, n)
	}
	return nil
}
