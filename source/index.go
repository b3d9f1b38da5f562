package source

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/manifest"
)

// BlockSize is the unit of materialisation. It is part of the side
// index's format: a block's number is its offset divided by BlockSize.
const BlockSize = 8 << 20

// indexPrefix starts every side-index key.
const indexPrefix = keyspace.SourceIndex

// objectRef names one pinned object in the side index.
type objectRef struct {
	source, key, pin string
}

// refOf returns the side-index name of a lazy entry's pin.
func refOf(r *manifest.Remote) objectRef {
	pin := r.ETag
	if r.VersionID != "" {
		pin += "\x00" + r.VersionID
	}
	return objectRef{source: r.Source, key: r.Key, pin: pin}
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// sourcePrefix returns the prefix of every side-index key of a source.
func sourcePrefix(source string) []byte {
	return appendField([]byte(indexPrefix), source)
}

// objectPrefix returns the prefix of the side-index keys of one pinned
// object; its blocks follow in order.
func (o objectRef) prefix() []byte {
	b := sourcePrefix(o.source)
	b = appendField(b, o.key)
	return appendField(b, o.pin)
}

// blockKey returns the side-index key of block n of o.
func (o objectRef) blockKey(n int64) []byte {
	return binary.BigEndian.AppendUint32(o.prefix(), uint32(n))
}

// parseIndexKey splits a side-index key; ok is false for a malformed one.
func parseIndexKey(k []byte) (o objectRef, block int64, ok bool) {
	if len(k) < len(indexPrefix) || string(k[:len(indexPrefix)]) != indexPrefix {
		return o, 0, false
	}
	rest := k[len(indexPrefix):]
	var fields [3]string
	for i := range fields {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return o, 0, false
		}
		fields[i] = string(rest[n : n+int(l)])
		rest = rest[n+int(l):]
	}
	if len(rest) != 4 {
		return o, 0, false
	}
	o, block = objectRef{fields[0], fields[1], fields[2]}, int64(binary.BigEndian.Uint32(rest))
	if !bytes.Equal(o.blockKey(block), k) {
		return objectRef{}, 0, false // a non-minimal length: not a key we write
	}
	return o, block, true
}

// blockCount returns how many blocks an object of size bytes has.
func blockCount(size int64) int64 {
	if size <= 0 {
		return 0
	}
	return (size + BlockSize - 1) / BlockSize
}

// blockLen returns the length of block n of an object of size bytes.
func blockLen(size, n int64) int64 {
	return min(size-n*BlockSize, BlockSize)
}

// decodeBlock decodes a side-index value and checks it holds want bytes.
func decodeBlock(v []byte, want int64) (*manifest.Content, error) {
	c, err := manifest.DecodeContent(v)
	if err != nil {
		return nil, fmt.Errorf("side index: %w", err)
	}
	if c.Size() != want {
		return nil, fmt.Errorf("side index: block holds %d bytes, want %d: %w", c.Size(), want, manifest.ErrCorrupt)
	}
	return c, nil
}
