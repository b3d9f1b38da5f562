//go:build !linux

package cas

import (
	"errors"
	"os"
)

// errDirectRefused is never returned where O_DIRECT does not exist.
var errDirectRefused = errors.New("cas: direct I/O refused")

// setDirect refuses: segments go through the page cache.
func setDirect(f *os.File, on bool) error {
	if !on {
		return nil
	}
	return errors.ErrUnsupported
}
