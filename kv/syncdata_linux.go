package kv

import (
	"os"
	"time"

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

// dirStamp is what stat says of a directory that any change of its
// entries changes.
type dirStamp struct {
	ino, nlink   uint64
	size         int64
	mtime, ctime unix.Timespec
}

// changed is the directory's change time.
func (d dirStamp) changed() time.Time { return time.Unix(d.ctime.Unix()) }

// stampable reports whether the directory at path is on a local file
// system whose change times the kernel keeps itself (not a network file
// system, whose attributes a client may cache): only there may a stamp
// stand for a listing.
func stampable(path string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false
	}
	switch fs.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// statDir stamps the directory at path (false: unknown).
func statDir(path string) (dirStamp, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return dirStamp{}, false
	}
	return dirStamp{ino: st.Ino, nlink: uint64(st.Nlink), size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, true
}
