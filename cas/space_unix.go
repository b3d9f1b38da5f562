//go:build unix

package cas

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// diskSpace returns the bytes available to an unprivileged writer and the
// size of the file system holding dir.
func diskSpace(dir string) (free, size int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := max(uint64(st.Bsize), 1)
	return bytesOf(uint64(st.Bavail), bs), bytesOf(uint64(st.Blocks), bs), nil
}

// bytesOf is n blocks of bs bytes, saturated at the largest int64.
func bytesOf(n, bs uint64) int64 {
	if n > math.MaxInt64/bs {
		return math.MaxInt64
	}
	return int64(n * bs)
}

// isNoSpace reports a write the file system refused for want of space.
func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}
