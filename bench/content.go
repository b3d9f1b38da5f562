package bench

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
)

// Content makes object bodies that are unique per object at every chunk:
// a shared random block repeated, with the object's 8-byte stamp and the
// stamp's position written every StampEvery bytes. Varying only the first
// bytes of a body (a common shortcut) would let content-defined chunking
// deduplicate everything after the first chunk, so a "new" 64 MiB object
// would write one chunk; stamps every 64 KiB put a difference inside every
// chunk the gateway can cut (256 KiB at least), so nothing deduplicates
// unless the stamp repeats. Making a body costs a memory copy, not a random
// number generator, so the client leaves the cores to the server.
type Content struct {
	block []byte
}

// StampEvery is the distance between stamps in a Content body.
const StampEvery = 64 << 10

// contentBlock is the length of the repeated random block: a multiple of
// StampEvery, and longer than the largest chunk, so a chunk boundary never
// finds a repeating pattern to synchronise on.
const contentBlock = 8 << 20

var (
	contentOnce   sync.Once
	sharedContent *Content
)

// DefaultContent returns the process-wide Content (8 MiB of random bytes,
// made once).
func DefaultContent() *Content {
	contentOnce.Do(func() {
		b := make([]byte, contentBlock)
		_, _ = rand.NewChaCha8([32]byte{'n', 'a', 's', 'b', 'e', 'n', 'c', 'h'}).Read(b)
		sharedContent = &Content{block: b}
	})
	return sharedContent
}

// Reader returns a body of size bytes stamped with stamp. Equal stamps give
// equal bodies.
func (c *Content) Reader(stamp uint64, size int64) io.Reader {
	return &contentReader{c: c, stamp: stamp, size: size}
}

// Bytes returns the body Reader would produce, in memory.
func (c *Content) Bytes(stamp uint64, size int64) []byte {
	b := make([]byte, size)
	_, _ = io.ReadFull(c.Reader(stamp, size), b)
	return b
}

type contentReader struct {
	c     *Content
	stamp uint64
	size  int64
	off   int64
}

func (r *contentReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.off < r.size {
		// Copy up to the end of the current 64 KiB stripe, then stamp it.
		stripe := r.off / StampEvery
		end := min((stripe+1)*StampEvery, r.size, r.off+int64(len(p)-n))
		bo := r.off % contentBlock
		m := copy(p[n:], r.c.block[bo:bo+(end-r.off)])
		r.stampInto(p[n:n+m], r.off, stripe)
		n += m
		r.off += int64(m)
	}
	return n, nil
}

// stampInto overwrites the stamp bytes (16 at the start of each stripe:
// the object stamp and the stripe number) that fall in buf, which holds
// the body from offset off.
func (r *contentReader) stampInto(buf []byte, off, stripe int64) {
	var st [16]byte
	binary.LittleEndian.PutUint64(st[:8], r.stamp)
	binary.LittleEndian.PutUint64(st[8:], uint64(stripe))
	base := stripe * StampEvery
	for i := int64(0); i < 16; i++ {
		if p := base + i - off; p >= 0 && p < int64(len(buf)) {
			buf[p] = st[i]
		}
	}
}

// Section returns bytes [off, off+n) of the body stamped with stamp, as
// Reader would produce them.
func (c *Content) Section(stamp uint64, off, n int64) io.Reader {
	return &contentReader{c: c, stamp: stamp, size: off + n, off: off}
}
