package cas

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readCached reads into p from f at off only what the page cache holds:
// preadv2 with RWF_NOWAIT returns what it can without waiting for the
// disk. It returns how many bytes it read, 0 where it cannot tell.
func readCached(r io.ReaderAt, p []byte, off int64) int {
	f, ok := r.(*os.File)
	if !ok {
		return 0
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Read(func(fd uintptr) bool {
		for n < len(p) {
			m, err := unix.Preadv2(int(fd), [][]byte{p[n:]}, off+int64(n), unix.RWF_NOWAIT)
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true
	})
	return n
}

// changeTime returns the status-change time of the file behind r (any
// write to it, or to its metadata, moves it), false where it cannot tell.
func changeTime(r io.ReaderAt) (int64, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return 0, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return 0, false
	}
	return st.Ctim.Nano(), true
}
