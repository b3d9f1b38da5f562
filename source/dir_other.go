//go:build !unix

package source

import "io/fs"

func fileID(fs.FileInfo) uint64 { return 0 }

func linkCount(fs.FileInfo) uint64 { return 1 }
