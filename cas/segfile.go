package cas

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// SegmentBlock is the buffer an Upload holds while it writes a segment,
// and the size of the writes a segment file gets once it is larger than
// one block: a multiple of every logical block size in use (512 B, 4 KiB).
const SegmentBlock = 1 << 20

// directAlign is the alignment of a direct write's buffer.
const directAlign = 4096

// directPool holds SegmentBlock-sized buffers aligned to directAlign.
var directPool = sync.Pool{New: func() any { return alignedBlock() }}

// alignedBlock allocates a SegmentBlock-sized buffer at a directAlign
// boundary.
func alignedBlock() *[]byte {
	b := make([]byte, SegmentBlock+directAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	if off != 0 {
		off = directAlign - off
	}
	b = b[off : off+SegmentBlock : off+SegmentBlock]
	return &b
}

// segFile appends to a segment file. By default every byte goes through
// the page cache, with a hint to start writing it out every
// writebackStep bytes, so a read soon after the write finds the bytes in
// memory. With direct writes (Options.DirectWrites), the first
// SegmentBlock bytes go through the page cache as they come, so a small
// upload holds no buffer; past them, the bytes go through an aligned
// block buffer and are written a block at a time with O_DIRECT where the
// file system takes it: from the buffer to the disk without a page-cache
// copy, and without the dirty-page throttling that makes concurrent large
// uploads wait in write(2) (the copy and the wait were 42% of the
// gateway's time under 8 concurrent 64 MiB PUTs). The trade, measured in
// bench/RESULTS.md: 8 concurrent 64 MiB PUTs go 1.07-1.21x faster, but
// rounds of PUT, GET and DELETE 0.80-0.92x as fast, the GETs reading from
// the disk what the page cache would have held. Where O_DIRECT is
// refused, the page cache takes every byte. Durability comes from
// finish's fsync either way.
type segFile struct {
	f       *os.File
	buf     *[]byte // from directPool once direct writes start; nil before
	n       int     // bytes in buf not yet written
	written int64   // bytes written to f
	hinted  int64   // bytes of f whose writeback was started (page-cache path)
	direct  bool    // f is in O_DIRECT mode
	noDir   bool    // O_DIRECT is off or was refused: page cache only
}

// newSegFile appends to f, with O_DIRECT past the first block if direct
// (Options.DirectWrites).
func newSegFile(f *os.File, direct bool) *segFile {
	return &segFile{f: f, noDir: !direct}
}

// write appends data.
func (w *segFile) write(data []byte) error {
	if w.buf == nil {
		k := len(data)
		if !w.noDir && w.written+int64(k) >= SegmentBlock {
			// Only up to an aligned offset: the blocks start there.
			k = min(k, int((directAlign-w.written%directAlign)%directAlign))
		}
		if err := w.pass(data[:k]); err != nil {
			return err
		}
		if data = data[k:]; len(data) == 0 {
			return nil
		}
		w.buf = directPool.Get().(*[]byte)
	}
	for len(data) > 0 {
		c := copy((*w.buf)[w.n:], data)
		w.n += c
		data = data[c:]
		if w.n == SegmentBlock {
			if err := w.flushBlock(); err != nil {
				return err
			}
			if w.buf == nil { // direct writes refused: page cache from now on
				return w.pass(data)
			}
		}
	}
	return nil
}

// pass writes p through the page cache, hinting the kernel to start
// writing out every writebackStep bytes.
func (w *segFile) pass(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if _, err := w.f.Write(p); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	w.written += int64(len(p))
	if w.written-w.hinted >= writebackStep {
		startWriteback(w.f, w.hinted, w.written-w.hinted)
		w.hinted = w.written
	}
	return nil
}

// flushBlock writes the full buffer directly, or, where that is refused,
// through the page cache from then on.
func (w *segFile) flushBlock() error {
	if !w.direct {
		if setDirect(w.f, true) != nil {
			return w.fallBack()
		}
		w.direct = true
	}
	_, err := w.f.Write(*w.buf)
	if err != nil && errors.Is(err, errDirectRefused) {
		// The file system took the flag but not the write: nothing was
		// written, so the page cache can take the same block.
		w.direct = false
		if serr := setDirect(w.f, false); serr != nil {
			return fmt.Errorf("write segment: %w (and clearing O_DIRECT: %w)", err, serr)
		}
		return w.fallBack()
	}
	if err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	w.written += SegmentBlock
	w.n = 0
	return nil
}

// fallBack writes what the buffer holds through the page cache, gives the
// buffer back and stays on the page cache.
func (w *segFile) fallBack() error {
	w.noDir = true
	err := w.pass((*w.buf)[:w.n])
	w.n = 0
	directPool.Put(w.buf)
	w.buf = nil
	return err
}

// finish writes the buffered tail through the page cache (it need not be
// aligned) and, with sync, fsyncs the file.
func (w *segFile) finish(sync bool) error {
	if w.direct {
		if err := setDirect(w.f, false); err != nil {
			return fmt.Errorf("segment tail: %w", err)
		}
		w.direct = false
	}
	if w.buf != nil {
		if err := w.pass((*w.buf)[:w.n]); err != nil {
			return err
		}
		w.n = 0
	}
	if !sync {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync segment: %w", err)
	}
	return nil
}

// close closes the file and returns the buffer to the pool.
func (w *segFile) close() error {
	if w.buf != nil {
		directPool.Put(w.buf)
		w.buf = nil
	}
	return w.f.Close()
}
