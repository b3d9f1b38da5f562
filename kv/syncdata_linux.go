package kv

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable, with the metadata needed to read it
// back (its size and blocks) but not its times: fdatasync, which is also
// what Badger's own synchronous mode asks of its logs (msync with
// MS_SYNC).
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
