//go:build unix

package source

import (
	"io/fs"
	"syscall"
)

// fileID returns a file's inode number, so a file replaced by another of
// the same size and time still reads as changed.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// linkCount returns a file's number of hard links (1 when unknown).
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
