//go:build !linux

package kv

import (
	"os"
	"time"
)

// syncData makes f's data durable (fsync where fdatasync is not known).
func syncData(f *os.File) error { return f.Sync() }

// dirStamp is not known here: every round lists the directory.
type dirStamp struct{}

func (dirStamp) changed() time.Time { return time.Time{} }

func statDir(string) (dirStamp, bool) { return dirStamp{}, false }

func stampable(string) bool { return false }
