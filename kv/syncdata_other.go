//go:build !linux

package kv

import "os"

// syncData makes f's data durable (fsync where fdatasync is not known).
func syncData(f *os.File) error { return f.Sync() }
