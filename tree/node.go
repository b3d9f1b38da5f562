package tree

import (
	"encoding/binary"
	"fmt"

	"github.com/agentnas/nas/chunk"
)

// Node encoding, version 1. Integers are minimal unsigned LEB128 varints
// (uv); keys are prefix-compressed against the previous key of the same
// node; the first key of a node shares nothing.
//
//	node          = version:1 level:1 n:uv item{n}
//	leaf item     = shared:uv suffixLen:uv suffix valueLen:uv value   (level 0)
//	internal item = shared:uv suffixLen:uv suffix hash:32 count:uv    (level > 0)
//
// A leaf item's key is an entry's key. An internal item is a child
// reference: its key is the child's last key, hash the child's node hash and
// count the number of entries under the child (at least 1).
//
// Cost per item: a leaf entry takes 3 bytes (4 when the value is 128 bytes
// or longer) plus the key suffix not shared with the previous key plus the
// value; a child reference takes 35-38 bytes plus the key suffix. With the
// default fanout of 32 a tree of n entries holds about n/31 internal items.
//
// The encoding is canonical: decodeNode rejects anything encodeNode would not
// produce for the same content (overlong varints, a shared prefix that is not
// maximal, keys out of order, trailing bytes), so equal content has exactly
// one encoding and one hash.
const nodeVersion = 1

const (
	// MaxKeySize is the longest key the tree accepts, in bytes.
	MaxKeySize = 4096
	// absMaxLevel is the highest level any configuration can produce
	// (a level needs at least one bit of the 64-bit level hash).
	absMaxLevel = 64
	minLeafItem = 3
	minRefItem  = 3 + chunk.HashSize
)

// node is a decoded node. It is immutable once decoded and shared between
// goroutines through the cache. Every key and value slice has its capacity
// cut to its length so that an append by a careless caller copies instead of
// writing into the node.
type node struct {
	h      chunk.Hash // name, set when read from a store
	level  int
	keys   [][]byte     // strictly increasing
	vals   [][]byte     // level 0: values, aliasing data
	kids   []chunk.Hash // level > 0: child hashes
	counts []uint64     // level > 0: entries under each child
	data   []byte       // the encoding
	arena  int          // bytes of reconstructed keys
}

// hash returns n's name in its store.
func (n *node) hash() chunk.Hash { return n.h }

// last returns n's last key.
func (n *node) last() []byte { return n.keys[len(n.keys)-1] }

// count returns the number of entries under n.
func (n *node) count() uint64 {
	if n.level == 0 {
		return uint64(len(n.keys))
	}
	var c uint64
	for _, x := range n.counts {
		c += x
	}
	return c
}

// memSize approximates the memory n holds, for the cache's budget.
func (n *node) memSize() int64 {
	s := 160 + len(n.data) + n.arena + 24*len(n.keys)
	if n.level == 0 {
		s += 24 * len(n.vals)
	} else {
		s += (chunk.HashSize + 8) * len(n.kids)
	}
	return int64(s)
}

// corruptf returns an ErrCorrupt error with a formatted message.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}

// readUvarint reads a minimal varint at data[p:].
func readUvarint(data []byte, p int) (uint64, int, bool) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if p >= len(data) {
			return 0, p, false
		}
		b := data[p]
		p++
		if b < 0x80 {
			if i > 0 && b == 0 {
				return 0, p, false // overlong
			}
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, p, false // overflow
			}
			return x | uint64(b)<<s, p, true
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, p, false
}

// lcp returns the length of the longest common prefix of a and b.
func lcp(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// appendKey appends the prefix-compressed form of key, given the previous
// key of the node (nil for the first).
func appendKey(buf, prev, key []byte, first bool) []byte {
	shared := 0
	if !first {
		shared = lcp(prev, key)
	}
	buf = binary.AppendUvarint(buf, uint64(shared))
	buf = binary.AppendUvarint(buf, uint64(len(key)-shared))
	return append(buf, key[shared:]...)
}

// decodeNode decodes and validates an encoding. It never panics and
// allocates at most a small multiple of len(data) plus the reconstructed
// keys, each of which is at most MaxKeySize.
func decodeNode(data []byte) (*node, error) {
	level, n, p, err := decodeHeader(data)
	if err != nil {
		return nil, err
	}
	total, err := checkFraming(data, level, n, p)
	if err != nil {
		return nil, err
	}
	return buildNode(data, level, n, p, total)
}

// decodeHeader checks a node's version, level and item count and returns
// the level, the count and the offset of the first item.
func decodeHeader(data []byte) (level, n, p int, err error) {
	if len(data) < 2+1+minLeafItem {
		return 0, 0, 0, corruptf("node of %d bytes", len(data))
	}
	if data[0] != nodeVersion {
		return 0, 0, 0, corruptf("node version %d", data[0])
	}
	level = int(data[1])
	if level > absMaxLevel {
		return 0, 0, 0, corruptf("node level %d", level)
	}
	n64, p, ok := readUvarint(data, 2)
	if !ok {
		return 0, 0, 0, corruptf("node item count")
	}
	minItem := minLeafItem
	if level > 0 {
		minItem = minRefItem
	}
	if n64 == 0 || n64 > uint64((len(data)-p)/minItem) {
		return 0, 0, 0, corruptf("node item count %d for %d bytes", n64, len(data))
	}
	return level, int(n64), p, nil
}

// checkFraming is decodeNode's first pass: it validates the framing of the
// n items from data[p:] and returns the total length of their keys, the
// size of the key arena.
func checkFraming(data []byte, level, n, p int) (int, error) {
	total, prevLen, q := 0, 0, p
	var sum uint64
	for i := 0; i < n; i++ {
		shared, q2, ok := readUvarint(data, q)
		if !ok || shared > uint64(prevLen) || (i == 0 && shared != 0) {
			return 0, corruptf("item %d: shared prefix", i)
		}
		sfx, q3, ok := readUvarint(data, q2)
		if !ok || sfx > uint64(len(data)-q3) || shared+sfx > MaxKeySize {
			return 0, corruptf("item %d: key length", i)
		}
		q = q3 + int(sfx)
		klen := int(shared + sfx)
		total += klen
		prevLen = klen
		if level == 0 {
			vlen, q4, ok := readUvarint(data, q)
			if !ok || vlen > uint64(len(data)-q4) {
				return 0, corruptf("item %d: value length", i)
			}
			q = q4 + int(vlen)
		} else {
			if len(data)-q < chunk.HashSize {
				return 0, corruptf("item %d: child hash", i)
			}
			q += chunk.HashSize
			c, q4, ok := readUvarint(data, q)
			if !ok || c == 0 || sum+c < sum {
				return 0, corruptf("item %d: child count", i)
			}
			sum += c
			q = q4
		}
	}
	if q != len(data) {
		return 0, corruptf("%d trailing bytes", len(data)-q)
	}
	return total, nil
}

// buildNode is decodeNode's second pass over framing checkFraming found
// good: it builds the keys into one arena of total bytes, checks their
// order and slices the values or child references out of data.
func buildNode(data []byte, level, n, p, total int) (*node, error) {
	nd := &node{level: level, keys: make([][]byte, n), data: data, arena: total}
	if level == 0 {
		nd.vals = make([][]byte, n)
	} else {
		nd.kids = make([]chunk.Hash, n)
		nd.counts = make([]uint64, n)
	}
	arena := make([]byte, total)
	off := 0
	q := p
	var prev []byte
	for i := 0; i < n; i++ {
		shared64, q2, _ := readUvarint(data, q)
		sfx64, q3, _ := readUvarint(data, q2)
		shared, sfx := int(shared64), int(sfx64)
		suffix := data[q3 : q3+sfx]
		q = q3 + sfx
		if i > 0 {
			// The shared prefix must be maximal and the key larger than prev.
			if sfx == 0 || (shared < len(prev) && suffix[0] <= prev[shared]) {
				return nil, corruptf("item %d: key out of order", i)
			}
		}
		k := arena[off : off+shared+sfx : off+shared+sfx]
		copy(k, prev[:shared])
		copy(k[shared:], suffix)
		off += len(k)
		nd.keys[i] = k
		prev = k
		if level == 0 {
			vlen64, q4, _ := readUvarint(data, q)
			vlen := int(vlen64)
			nd.vals[i] = data[q4 : q4+vlen : q4+vlen]
			q = q4 + vlen
		} else {
			copy(nd.kids[i][:], data[q:q+chunk.HashSize])
			q += chunk.HashSize
			nd.counts[i], q, _ = readUvarint(data, q)
		}
	}
	return nd, nil
}
