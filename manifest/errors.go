package manifest

import "errors"

var (
	// ErrNotFound is returned when a node, content list or commit is absent.
	ErrNotFound = errors.New("manifest: not found")
	// ErrCorrupt is returned when stored bytes cannot be decoded or do not
	// hash to their name.
	ErrCorrupt = errors.New("manifest: corrupt")
	// ErrLazy is returned by Store.Content for a lazy entry (Entry.Lazy):
	// its bytes are in an attached source, and only the source package's
	// materializer can produce them. Code that was not taught about lazy
	// entries fails here instead of serving an empty object.
	ErrLazy = errors.New("manifest: entry is lazy: its content is in an attached source")
	// ErrNoSuchCommit is returned when a commit ID names nothing.
	ErrNoSuchCommit = errorf("commit: %w", ErrNotFound)
)
