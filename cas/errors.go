package cas

import "errors"

var (
	// ErrNotFound is returned when a chunk is not in the store.
	ErrNotFound = errors.New("chunk not found")
	// ErrCorrupt is returned when stored bytes do not hash to their name.
	ErrCorrupt = errors.New("chunk corrupt")
)
