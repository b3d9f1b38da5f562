package cas

import (
	"os"

	"golang.org/x/sys/unix"
)

// errDirectRefused is what a write answers when the file system accepted
// O_DIRECT on the descriptor but cannot do the write directly.
var errDirectRefused = unix.EINVAL

// setDirect turns O_DIRECT on or off for f.
func setDirect(f *os.File, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			serr = err
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, serr = unix.FcntlInt(fd, unix.F_SETFL, fl)
	})
	if err != nil {
		return err
	}
	return serr
}
