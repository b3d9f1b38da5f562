package apiv1

import (
	"errors"
	"strconv"
	"strings"
)

// ChunkMapHeader asks a PutObject, with the value "1", to answer the new
// version's chunk map in the same header, as "HASH:SIZE" pairs joined by
// commas (FormatChunkMap). The map describes only the bytes the caller
// just sent, so it confirms nothing the caller did not know; a mount uses
// it to read its own writes back from its chunk cache without a stat.
// The gateway leaves the answer out for a sealed object and for one of
// more than MaxChunkMapChunks chunks.
const ChunkMapHeader = "X-Nas-Chunk-Map"

// MaxChunkMapChunks bounds the chunk map a PutObject answers in a header.
const MaxChunkMapChunks = 64

// FormatChunkMap spells chunks as ChunkMapHeader carries them.
func FormatChunkMap(chunks []Chunk) string {
	var b strings.Builder
	for i, c := range chunks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.Hash)
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(uint64(c.Size), 10))
	}
	return b.String()
}

// errChunkMap says a ChunkMapHeader answer is not one FormatChunkMap
// writes.
var errChunkMap = errors.New("malformed chunk map")

// ParseChunkMap reads what FormatChunkMap wrote: at most
// MaxChunkMapChunks pairs of a lower-case hex hash of 64 digits and a
// size from 1 to 2^32-1.
func ParseChunkMap(s string) ([]Chunk, error) {
	if s == "" {
		return nil, errChunkMap
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxChunkMapChunks {
		return nil, errChunkMap
	}
	out := make([]Chunk, 0, len(parts))
	for _, p := range parts {
		hash, size, ok := strings.Cut(p, ":")
		if !ok || !isHash(hash) {
			return nil, errChunkMap
		}
		n, err := strconv.ParseUint(size, 10, 32)
		if err != nil || n == 0 || strconv.FormatUint(n, 10) != size {
			return nil, errChunkMap
		}
		out = append(out, Chunk{Hash: hash, Size: uint32(n)})
	}
	return out, nil
}

// isHash reports whether s is 64 lower-case hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
