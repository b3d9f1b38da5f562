//go:build !unix

package cas

import (
	"errors"
	"syscall"
)

// diskSpace is not available here: the floor is not checked.
func diskSpace(string) (free, size int64, err error) {
	return 0, 0, errors.New("cas: free space is not known on this platform")
}

// isNoSpace reports a write the file system refused for want of space.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
