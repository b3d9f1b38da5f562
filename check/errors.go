package check

import "errors"

// Errors of the package.
var (
	// ErrNotFound is returned for an unknown check, or a proposal no
	// check ran on.
	ErrNotFound = errors.New("check: not found")
	// ErrInvalid is returned for a name, URL, command or answer that is
	// not acceptable, and for a command outside the folder.
	ErrInvalid = errors.New("check: invalid")
)
