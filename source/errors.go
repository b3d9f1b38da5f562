package source

import (
	"errors"
	"fmt"
)

// Categories; specific errors wrap one of them.
var (
	// ErrNotFound is returned when no attachment has the given ID.
	ErrNotFound = errors.New("source: not found")
	// ErrInvalid is returned for a malformed source URL, prefix or option.
	ErrInvalid = errors.New("source: invalid argument")
	// ErrConflict is returned when an attachment would overlap another, or
	// the target prefix already holds objects.
	ErrConflict = errors.New("source: conflict")
	// ErrChanged is returned when the remote object is no longer the pinned
	// version (its ETag differs, it was deleted, the pinned version is
	// gone): the remote drifted. Refresh pins the current version.
	ErrChanged = errors.New("remote object changed since it was pinned")
	// ErrUnavailable is returned when the remote cannot serve a read after
	// the retries: unreachable, 5xx, timeouts, a body cut short, or the
	// remote refusing the gateway's credentials.
	ErrUnavailable = errors.New("remote source unavailable")
	// ErrCorrupt is returned when fetched bytes fail verification (length
	// or checksum); nothing of them is recorded.
	ErrCorrupt = errors.New("remote bytes failed verification")
	// ErrRemoved is returned when a lazy entry's source was detached and
	// the object was never materialised.
	ErrRemoved = errors.New("the object's source was removed")
)

// Specific errors.
var (
	// ErrThrottled is returned when the remote asks to slow down (503
	// SlowDown, 429) after the retries.
	ErrThrottled = fmt.Errorf("remote is throttling requests: %w", ErrUnavailable)
	// ErrDenied is returned when the remote refuses the gateway's
	// credentials for this source.
	ErrDenied = fmt.Errorf("remote refused the gateway's credentials: %w", ErrUnavailable)
	// ErrEscape is returned when a folder source is asked for a path that
	// leads outside its root (through ".." or a symbolic link).
	ErrEscape = fmt.Errorf("path escapes the folder: %w", ErrChanged)
	// ErrPrefixInUse is returned when attaching to a prefix that already
	// holds objects or overlaps another attachment.
	ErrPrefixInUse = fmt.Errorf("prefix in use: %w", ErrConflict)
)
