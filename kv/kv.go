package kv

import "context"

// DB is an ordered key-value store with atomic multi-key transactions.
type DB interface {
	// View runs fn in a read-only snapshot.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in a read-write transaction and commits it durably.
	// fn may run several times when transactions conflict.
	Update(ctx context.Context, fn func(Txn) error) error
	// Batch returns a writer for many independent, non-atomic writes.
	Batch(ctx context.Context) Batch
	// Close releases the store.
	Close() error
}

// Reader reads keys and ordered ranges.
type Reader interface {
	// Get returns a copy of the value of key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Scan calls fn for each key in r in order; key and value are valid only
	// during the call. Returning ErrStop ends the scan without error.
	Scan(r Range, fn func(key, value []byte) error) error
}

// Txn is a read-write transaction; its writes are visible to its own reads.
type Txn interface {
	Reader
	// Set stores value under key. The Txn keeps its own copies.
	Set(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
}

// Batch accumulates writes and flushes them durably on Flush. Writes are not
// atomic as a group, and a Batch is not safe for concurrent use.
type Batch interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	// Flush waits until every write is durable.
	Flush() error
	// Cancel discards unflushed writes.
	Cancel()
}

// Range is the half-open key interval [Start, End); a nil End means no upper
// bound. Reverse scans from the end.
type Range struct {
	Start, End []byte
	Reverse    bool
}

// Prefix returns the Range of every key that starts with p.
func Prefix(p []byte) Range {
	return Range{Start: p, End: PrefixEnd(p)}
}

// PrefixEnd returns the smallest key greater than every key with prefix p, or
// nil when there is none (p is empty or all 0xff).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
