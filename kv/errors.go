package kv

import "errors"

var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = errors.New("kv: key not found")
	// ErrConflict is returned by Update when its transaction kept conflicting
	// with concurrent ones after every retry.
	ErrConflict = errors.New("kv: transaction conflict")
	// ErrTooBig is returned when a transaction holds more than the engine
	// can commit at once; the caller must split the work.
	ErrTooBig = errors.New("kv: transaction too big")
	// ErrUnavailable wraps the errors of an engine whose store cannot be
	// reached (a database server down or unreachable); the operation may be
	// retried later. An Update that fails with it while committing may or
	// may not have committed.
	ErrUnavailable = errors.New("kv: store unavailable")
	// ErrStop may be returned by a Scan callback to end the scan early; Scan
	// then returns nil.
	ErrStop = errors.New("kv: stop scan")
)
