package chunk

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/zeebo/blake3"
)

// HashSize is the length in bytes of a Hash.
const HashSize = 32

// MaxSize is the largest chunk content-defined chunking produces; a chunk
// longer than this is corrupt wherever it is found.
const MaxSize = 4 << 20

// ErrBadHash is returned when a textual hash cannot be parsed.
var ErrBadHash = errors.New("malformed hash")

// Hash is the BLAKE3-256 digest of a chunk or a metadata node; it is the
// chunk's name in every store and cache.
type Hash [HashSize]byte

// Sum returns the BLAKE3-256 hash of b.
func Sum(b []byte) Hash {
	return Hash(blake3.Sum256(b))
}

// String returns the lower-case hex form of h.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero hash, which names nothing.
func (h Hash) IsZero() bool { return h == Hash{} }

// ParseHash parses the 64-character hex form of a Hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize {
		return h, fmt.Errorf("parse hash %q: %w", s, ErrBadHash)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("parse hash %q: %w", s, ErrBadHash)
	}
	return h, nil
}

// Hasher computes a Hash incrementally.
type Hasher struct{ h *blake3.Hasher }

// NewHasher returns a Hasher for BLAKE3-256.
func NewHasher() *Hasher { return &Hasher{h: blake3.New()} }

// Write adds p to the running hash; it never fails.
func (h *Hasher) Write(p []byte) (int, error) { return h.h.Write(p) }

// Sum returns the hash of everything written so far.
func (h *Hasher) Sum() Hash {
	var out Hash
	h.h.Sum(out[:0])
	return out
}

// Reset clears the Hasher for reuse.
func (h *Hasher) Reset() { h.h.Reset() }

// Ref names a chunk and its length; an object's content is a list of Refs.
type Ref struct {
	Hash Hash
	Size uint32
}
