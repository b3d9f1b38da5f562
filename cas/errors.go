package cas

import "errors"

var (
	// ErrNotFound is returned when a chunk is not in the store.
	ErrNotFound = errors.New("chunk not found")
	// ErrCorrupt is returned when stored bytes do not hash to their name.
	ErrCorrupt = errors.New("chunk corrupt")
)

// ErrStorageFull is returned when a write would leave less free space than
// the store's floor (Options.MinFree) on the file system of its segments or
// of a directory in Options.FreeDirs. Nothing of the write is kept.
var ErrStorageFull = errors.New("storage full")

// IsStorageFull reports whether err is a write refused for want of space:
// the store's floor (ErrStorageFull), or the disk itself (ENOSPC, or
// EDQUOT for the gateway's own disk quota).
func IsStorageFull(err error) bool {
	return errors.Is(err, ErrStorageFull) || isNoSpace(err)
}
