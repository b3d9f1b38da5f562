package manifest

import "errors"

var (
	// ErrNotFound is returned when a node, content list or commit is absent.
	ErrNotFound = errors.New("manifest: not found")
	// ErrCorrupt is returned when stored bytes cannot be decoded or do not
	// hash to their name.
	ErrCorrupt = errors.New("manifest: corrupt")
	// ErrNoSuchCommit is returned when a commit ID names nothing.
	ErrNoSuchCommit = errorf("commit: %w", ErrNotFound)
)
