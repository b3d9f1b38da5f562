package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
)

// ReadRefs writes bytes [off, off+n) of the concatenation of refs (an
// object's content) to w. Every whole chunk is read into memory and
// verified before any of its bytes reach w, so a corrupt chunk returns
// ErrCorrupt having written only the chunks before it; pieces of chunks at
// the ends of a range are not verified, as with Read.
//
// When the range spans more than one chunk, a goroutine reads and
// verifies the next chunk while w takes the current one, so hashing and
// the client's socket use two cores. It holds at most two chunk buffers
// (8 MiB) per call, pooled, and is stopped and waited for before ReadRefs
// returns, whether because the range is done, w failed or ctx was
// cancelled.
func (s *Store) ReadRefs(ctx context.Context, w io.Writer, refs []chunk.Ref, off, n int64) error {
	start := time.Now()
	err := s.readRefs(ctx, w, refs, off, n)
	s.obs.ChunkRead(n, time.Since(start), err)
	return err
}

func (s *Store) readRefs(ctx context.Context, w io.Writer, refs []chunk.Ref, off, n int64) error {
	ps := pieces(refs, off, n)
	switch {
	case len(ps) == 0:
		return nil
	case len(ps) == 1 && !ps[0].whole():
		// A range inside one chunk: streamed, nothing to verify.
		p := ps[0]
		return s.read(ctx, w, p.ref.Hash, p.off, p.n)
	case len(ps) == 1:
		c := s.load(ctx, chunk.NewHasher(), ps[0])
		defer c.release()
		if c.err != nil {
			return c.err
		}
		_, err := w.Write(c.data)
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan loaded) // unbuffered: one chunk loading, one being written
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		hs := chunk.NewHasher()
		for _, p := range ps {
			c := s.load(ctx, hs, p)
			select {
			case ch <- c:
			case <-ctx.Done():
				c.release()
				return
			}
			if c.err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for c := range ch {
			c.release()
		}
		wg.Wait()
	}()
	got := 0
	for c := range ch {
		got++
		if c.err != nil {
			return c.err
		}
		_, err := w.Write(c.data)
		c.release()
		if err != nil {
			return err
		}
	}
	if got < len(ps) {
		// The loader stopped early: only a cancelled ctx makes it.
		return ctx.Err()
	}
	return nil
}

// piece is the part [off, off+n) of one chunk that a range covers.
type piece struct {
	ref    chunk.Ref
	off, n int64
}

func (p piece) whole() bool { return p.off == 0 && p.n == int64(p.ref.Size) }

// pieces cuts [off, off+n) of the concatenation of refs into per-chunk
// pieces; a range past the end is cut short, as the caller's length
// check (the object's size) is authoritative.
func pieces(refs []chunk.Ref, off, n int64) []piece {
	var ps []piece
	end := off + n
	var at int64
	for _, r := range refs {
		size := int64(r.Size)
		if at >= end {
			break
		}
		if at+size > off && n > 0 {
			from := max(off-at, 0)
			to := min(end-at, size)
			ps = append(ps, piece{ref: r, off: from, n: to - from})
		}
		at += size
	}
	return ps
}

// loaded is a piece read into memory (and verified, if whole), or the
// error that reading it gave.
type loaded struct {
	data []byte
	buf  *[]byte // pooled buffer data lies in; nil for inline chunks
	err  error
}

func (c loaded) release() {
	if c.buf != nil {
		putChunkBuf(c.buf)
	}
}

// readStep is how much load reads before hashing it, so the bytes are
// hashed while still in the CPU's cache.
const readStep = 256 << 10

// load reads piece p into memory, verifying a whole chunk with hs. Its
// errors are those of Read.
func (s *Store) load(ctx context.Context, hs *chunk.Hasher, p piece) loaded {
	if err := ctx.Err(); err != nil {
		return loaded{err: err}
	}
	h := p.ref.Hash
	rec, f, release, err := s.locate(ctx, h)
	defer release()
	if err != nil {
		return loaded{err: err}
	}
	if p.off < 0 || p.n < 0 || p.off+p.n > rec.size {
		return loaded{err: fmt.Errorf("read chunk %s [%d,+%d) of %d: %w", h, p.off, p.n, rec.size, ErrCorrupt)}
	}
	whole := p.off == 0 && p.n == rec.size
	if rec.kind == kindInline {
		if whole && chunk.Sum(rec.data) != h {
			return loaded{err: fmt.Errorf("chunk %s: %w", h, ErrCorrupt)}
		}
		return loaded{data: rec.data[p.off : p.off+p.n]}
	}
	if !whole {
		return s.loadPart(f, rec, p)
	}
	return s.loadWhole(hs, f, h, rec)
}

// loadPart reads part of a segment chunk, unverified.
func (s *Store) loadPart(f io.ReaderAt, rec record, p piece) loaded {
	buf := getChunkBuf(int(p.n))
	data := (*buf)[:p.n]
	if err := readSteps(f, data, rec.off+p.off, nil); err != nil {
		putChunkBuf(buf)
		return loaded{err: fmt.Errorf("chunk %s in segment %016x: %w", p.ref.Hash, rec.seg, err)}
	}
	return loaded{data: data, buf: buf}
}

// loadWhole reads segment chunk h and verifies it with hs, unless the
// verifiedSet spares it that.
func (s *Store) loadWhole(hs *chunk.Hasher, f io.ReaderAt, h chunk.Hash, rec record) loaded {
	buf := getChunkBuf(int(rec.size))
	data := (*buf)[:rec.size]
	hs.Reset()
	ctime, known := changeTime(f)
	done := 0
	if known && s.verified.fresh(h, rec, ctime, time.Now()) {
		done = readCached(f, data, rec.off)
		if done == len(data) {
			return loaded{data: data, buf: buf}
		}
		hs.Write(data[:done])
	}
	err := readSteps(f, data[done:], rec.off+int64(done), hs)
	if err == nil && hs.Sum() != h {
		err = ErrCorrupt
	}
	if err != nil {
		putChunkBuf(buf)
		return loaded{err: fmt.Errorf("chunk %s in segment %016x: %w", h, rec.seg, err)}
	}
	if known {
		s.verified.add(h, rec, ctime, time.Now())
	}
	return loaded{data: data, buf: buf}
}

// readSteps fills data from f at off, readStep bytes at a time, each
// written to hs (when not nil) while still in the CPU's cache. A file
// that ends early is ErrCorrupt.
func readSteps(f io.ReaderAt, data []byte, off int64, hs *chunk.Hasher) error {
	for done := 0; done < len(data); {
		k := min(readStep, len(data)-done)
		m, err := f.ReadAt(data[done:done+k], off+int64(done))
		if m < k {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("short read: %w", ErrCorrupt)
			}
			return err
		}
		if hs != nil {
			hs.Write(data[done : done+k])
		}
		done += k
	}
	return nil
}

// locate finds chunk h: its index record and, for a segment chunk, the
// open segment file, with the release to call when done reading it. A segment that vanished between the lookup and the
// open (a collection moved the chunk) is looked up once more.
func (s *Store) locate(ctx context.Context, h chunk.Hash) (record, io.ReaderAt, func(), error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.lookup(ctx, h)
		if err != nil || rec.kind == kindInline {
			return rec, nil, func() {}, err
		}
		f, release, err := s.segment(ctx, rec.seg)
		if errors.Is(err, os.ErrNotExist) && attempt == 0 {
			continue
		}
		if err != nil {
			return rec, nil, func() {}, fmt.Errorf("chunk %s: %w", h, err)
		}
		return rec, f, release, nil
	}
}

// chunkBufs pools the buffers ReadRefs loads chunks into and Ingest hands
// chunks to its stages in, one pool per MiB of capacity (1 to 4 MiB), so
// an average 1 MiB chunk does not hold a 4 MiB buffer.
var chunkBufs [ChunkMax >> 20]sync.Pool

func chunkClass(n int) int { return max(n-1, 0) >> 20 }

func getChunkBuf(n int) *[]byte {
	c := chunkClass(n)
	if c >= len(chunkBufs) {
		b := make([]byte, n) // larger than any chunk the store writes
		return &b
	}
	if b, ok := chunkBufs[c].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, (c+1)<<20)
	return &b
}

func putChunkBuf(b *[]byte) {
	if c := chunkClass(cap(*b)); c < len(chunkBufs) && cap(*b) == (c+1)<<20 {
		chunkBufs[c].Put(b)
	}
}
