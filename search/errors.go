package search

import "errors"

var (
	// ErrInvalid is returned for a query that cannot be parsed (an
	// unclosed quote, no words) or a repository name that cannot name
	// a directory.
	ErrInvalid = errors.New("search: invalid argument")
	// ErrClosed is returned by a Service after Close.
	ErrClosed = errors.New("search: index closed")
)
