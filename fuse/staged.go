package fuse

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentnas/nas/client"
)

// staged holds a file's unsaved changes: the bytes written (and zeros
// added by growing it) in memory or a sparse local file (backing), over
// the version they edit. Bytes of [0, baseSize) that no write touched still come from the
// base version, so opening a large file to append or patch it reads and
// uploads only what changed.
//
// Invariant: the backing holds data only inside extents; elsewhere it
// is a hole (zeros), and it is never longer than size.
type staged struct {
	// mu guards everything below; an upload holds it from start to end.
	mu       sync.Mutex
	f        *backing
	extents  []span   // sorted, disjoint, not adjacent: bytes that live in f
	base     *content // the version edited (nil: none)
	baseSize int64    // [0, baseSize) outside extents is base's
	closed   bool     // uploaded or dropped: writers must start over
	// seq says every write so far went to the end of an empty start; such
	// a file streams to the gateway while it is written (stream).
	seq    bool
	stream *stream

	size atomic.Int64 // the file's size
}

// newStaged starts staging over base (nil: an empty new file).
func (m *Mount) newStaged(base *content) *staged {
	st := &staged{f: newBacking(&m.stageMem, m.stage), base: base, seq: true}
	if base != nil {
		st.baseSize = base.Size
		st.size.Store(base.Size)
	}
	return st
}

// close drops the local file; the caller holds mu or owns st alone.
func (st *staged) close() {
	st.endStream()
	st.closed = true
	st.f.close()
}

// addExtent marks [off, off+n) as living in the local file.
func (st *staged) addExtent(off, n int64) { st.extents = addSpan(st.extents, span{off, n}) }

// dirtyBytes is how much of the file lives locally.
func (st *staged) dirtyBytes() int64 {
	var n int64
	for _, x := range st.extents {
		n += x.n
	}
	return n
}

// endStream stops streaming (a write that is not an append, a
// truncation): the file will be sent whole at close.
func (st *staged) endStream() {
	st.seq = false
	if st.stream != nil {
		st.stream.abort()
		st.stream = nil
	}
}

// streamable reports whether the file is a new one written at its end.
func (st *staged) streamable() bool { return st.seq && st.baseSize == 0 }

// write stores p at off; the caller holds mu.
func (st *staged) write(p []byte, off int64) error {
	size := st.size.Load()
	if off != size {
		st.endStream()
	}
	if _, err := st.f.WriteAt(p, off); err != nil {
		return fmt.Errorf("staging area: %w", err)
	}
	if off > size {
		st.addExtent(size, off-size) // the gap reads as zeros
	}
	st.addExtent(off, int64(len(p)))
	if end := off + int64(len(p)); end > size {
		st.size.Store(end)
	}
	return nil
}

// truncate sets the size; the caller holds mu.
func (st *staged) truncate(n int64) error {
	size := st.size.Load()
	if n != 0 || st.stream != nil {
		st.endStream()
	}
	if n < size {
		if err := st.f.Truncate(n); err != nil {
			return fmt.Errorf("staging area: %w", err)
		}
		out := st.extents[:0]
		for _, x := range st.extents {
			if x.off >= n {
				continue
			}
			x.n = min(x.n, n-x.off)
			out = append(out, x)
		}
		st.extents = out
		st.baseSize = min(st.baseSize, n)
	} else if n > size {
		if err := st.f.Truncate(n); err != nil {
			return fmt.Errorf("staging area: %w", err)
		}
		st.addExtent(size, n-size)
	}
	st.size.Store(n)
	return nil
}

// readAt reads the file's current bytes at off into p; base supplies
// what still comes from the base version. The caller holds mu.
func (st *staged) readAt(p []byte, off int64, base func(p []byte, off int64) (int, error)) (int, error) {
	end := min(off+int64(len(p)), st.size.Load())
	if off >= end {
		return 0, nil
	}
	pos := off
	for pos < end {
		dst := p[pos-off:]
		if x, ok := st.extentAt(pos); ok {
			n := min(x.off+x.n, end) - pos
			k, err := st.f.ReadAt(dst[:n], pos)
			if err != nil && err != io.EOF {
				return int(pos - off), fmt.Errorf("staging area: %w", err)
			}
			clear(dst[k:n]) // a hole at the end of the local file
			pos += n
			continue
		}
		next := end
		for _, x := range st.extents {
			if x.off > pos {
				next = min(next, x.off)
				break
			}
		}
		n := next - pos
		if pos < st.baseSize {
			n = min(n, st.baseSize-pos)
			k, err := base(dst[:n], pos)
			if err != nil {
				return int(pos - off), err
			}
			if int64(k) < n {
				return int(pos-off) + k, io.ErrUnexpectedEOF
			}
		} else {
			clear(dst[:n])
		}
		pos += n
	}
	return int(end - off), nil
}

func (st *staged) extentAt(pos int64) (span, bool) {
	i := sort.Search(len(st.extents), func(i int) bool { return st.extents[i].off+st.extents[i].n > pos })
	if i < len(st.extents) && st.extents[i].off <= pos {
		return st.extents[i], true
	}
	return span{}, false
}

// Limits of a compose upload: the new bytes travel inline in one
// control-API request (at most 4 MiB, base64).
const (
	maxComposeBytes  = 2 << 20
	maxComposePieces = 1000
)

// plan splits the file into pieces: ranges of the base and local bytes.
// The caller holds mu.
func (st *staged) plan() []piece {
	var out []piece
	var pos int64
	size := st.size.Load()
	for _, x := range st.extents {
		if x.off > pos {
			out = append(out, piece{key: st.base.Key, version: st.base.VersionID, off: pos, n: x.off - pos})
		}
		out = append(out, piece{off: x.off, n: x.n, data: []byte{}})
		pos = x.off + x.n
	}
	if pos < size {
		out = append(out, piece{key: st.base.Key, version: st.base.VersionID, off: pos, n: size - pos})
	}
	return out
}

// upload stores the file's bytes as a new version of key and returns it,
// with its chunk map when the gateway answered one (a small file's PUT).
// A few changed bytes over a base become a compose that reuses the
// base's chunks; anything else a PUT of the whole file (reading in what
// is still the base's first). The caller holds st.mu.
func (m *Mount) upload(ctx context.Context, key string, st *staged, ct string, meta map[string]string) (*entry, *content, error) {
	size := st.size.Load()
	if s := st.stream; s != nil {
		st.stream = nil
		if s.key == key {
			if e, ok := m.finishStream(ctx, s, st, size, ct, meta); ok {
				return e, nil, nil
			}
		} else {
			s.abort() // renamed before its first upload: send it whole
		}
	}
	if st.base != nil && st.baseSize > 0 {
		pieces := st.plan()
		if st.dirtyBytes() <= maxComposeBytes && len(pieces) <= maxComposePieces {
			for i := range pieces {
				if p := &pieces[i]; p.data != nil {
					p.data = make([]byte, p.n)
					if _, err := st.f.ReadAt(p.data, p.off); err != nil && err != io.EOF {
						return nil, nil, fmt.Errorf("staging area: %w", err)
					}
				}
			}
			e, err := m.r.compose(ctx, key, pieces, ct, meta)
			return e, nil, err
		}
		if err := m.fill(ctx, st, pieces); err != nil {
			return nil, nil, err
		}
	}
	return m.putWhole(ctx, key, st, size, ct, meta)
}

// putWhole PUTs the whole file, which the local file holds. A small one
// (at most batchFileMax) asks for its chunk map and keeps its bytes in the
// chunk cache under it, as a put-batch does, so reading it back asks the
// gateway nothing it already said.
func (m *Mount) putWhole(ctx context.Context, key string, st *staged, size int64, ct string, meta map[string]string) (*entry, *content, error) {
	if err := st.f.Truncate(size); err != nil {
		return nil, nil, fmt.Errorf("staging area: %w", err)
	}
	small := size <= batchFileMax
	inf, err := m.r.c.Put(ctx, m.r.obj(key), st.f, size, client.PutOptions{ContentType: ct, Meta: meta, Checksum: true, ChunkMap: small})
	if err != nil {
		return nil, nil, err
	}
	m.noteBudget(inf)
	e := &entry{Key: key, Size: size, ETag: inf.ETag, VersionID: inf.VersionID, ModTime: time.Now(), ContentType: ct, Meta: meta}
	if !small || len(inf.Chunks) == 0 {
		return e, nil, nil
	}
	data := make([]byte, size)
	if n, err := st.f.ReadAt(data, 0); err != nil && err != io.EOF || int64(n) != size {
		return e, nil, nil // stored all the same; the next open asks for the map
	}
	return e, m.keep(e, data, inf.Chunks), nil
}

// finishStream completes a streamed upload, then sets the metadata a
// multipart upload could not know when it started (the final mtime).
func (m *Mount) finishStream(ctx context.Context, s *stream, st *staged, size int64, ct string, meta map[string]string) (*entry, bool) {
	inf, ok := s.finish(ctx, st.f, size)
	if !ok {
		return nil, false
	}
	set, err := m.r.c.SetMeta(ctx, m.r.obj(s.key), inf.VersionID, client.PutOptions{ContentType: ct, Meta: meta})
	if err != nil {
		m.log.Debug("setting the metadata of a streamed upload", "key", s.key, "err", err)
		return nil, false // sent whole instead: nothing is lost but time
	}
	return &entry{Key: s.key, Size: size, ETag: inf.ETag, VersionID: set.VersionID, ModTime: time.Now(), ContentType: ct, Meta: meta}, true
}

// fill copies the base's pieces into the local file, so it holds the
// whole file. The caller holds st.mu.
func (m *Mount) fill(ctx context.Context, st *staged, pieces []piece) error {
	rd := newReader(m)
	buf := make([]byte, 1<<20)
	for _, p := range pieces {
		if p.data != nil {
			continue
		}
		for off := p.off; off < p.off+p.n; {
			n := min(int64(len(buf)), p.off+p.n-off)
			k, err := rd.read(ctx, st.base, buf[:n], off)
			if err != nil {
				return err
			}
			if int64(k) < n {
				return fmt.Errorf("base of %s: %w", st.base.Key, io.ErrUnexpectedEOF)
			}
			if _, err := st.f.WriteAt(buf[:n], off); err != nil {
				return fmt.Errorf("staging area: %w", err)
			}
			off += n
		}
		st.addExtent(p.off, p.n)
	}
	st.baseSize = 0
	return nil
}

// noteBudget keeps the lease's remaining write budget from an answer.
func (m *Mount) noteBudget(inf client.Info) {
	v := inf.Header.Get("x-nas-budget-remaining-bytes-written")
	if v == "" {
		return
	}
	var left int64
	if _, err := fmt.Sscan(v, &left); err != nil {
		return
	}
	m.noteWriteLeft(left)
}

// noteWriteLeft keeps what the gateway says the lease may still write.
func (m *Mount) noteWriteLeft(left int64) {
	m.mu.Lock()
	if m.lease != nil {
		m.lease.writeLeft = left
	}
	m.mu.Unlock()
}

// flush uploads the file's unsaved changes, if any, and returns once the
// gateway has acknowledged them. A removed file's changes are dropped.
func (f *fileNode) flush(ctx context.Context) error {
	// A signal to the closing program (Go's scheduler sends them all the
	// time) interrupts the FUSE request, which cancels ctx: close must
	// still return once the gateway has the bytes, not fail with EINTR
	// halfway through the upload. A deadline (unmount's) still bounds it.
	ctx, cancel := uninterrupted(ctx)
	defer cancel()
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	m := f.m
	m.ns.RLock()
	defer m.ns.RUnlock()
	f.mu.Lock()
	st := f.staged
	if st == nil || f.unlinked {
		f.mu.Unlock()
		return nil
	}
	key, meta, ct := f.key, f.metaLocked(), f.contentType
	f.mu.Unlock()
	if err := m.writable(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil
	}
	e, c, err := m.upload(ctx, key, st, ct, meta)
	if err != nil {
		if refused(err) {
			f.discard(st, key, err)
		}
		return err
	}
	f.uploaded(st, e, c)
	return nil
}

// uploaded notes that the gateway acknowledged st as version e: the file
// is clean, its staging dropped; c, when known, is e's chunk map (the
// next open needs not ask for it). The caller holds st.mu.
func (f *fileNode) uploaded(st *staged, e *entry, c *content) {
	f.mu.Lock()
	if f.staged == st {
		f.staged = nil
	}
	f.e, f.seen, f.seenGen, f.local, f.content = e, time.Now(), 0, false, c
	// The kernel's pages are what was written through it, e's bytes,
	// unless another handle (a reader opened before) may add others.
	f.kernelVer = ""
	if f.opens <= 1 {
		f.kernelVer = e.VersionID
	}
	f.mu.Unlock()
	st.close()
	f.m.markClean(f)
	f.m.changedNow()
	if name, parent := f.Parent(); parent != nil {
		if d, ok := parent.Operations().(*dirNode); ok {
			d.noteName(name, fileInfo(e))
		}
	}
}

// uninterrupted is ctx without its cancellation, keeping its deadline.
// Every operation that changes the gateway runs under it: a signal to the
// calling program (Go's scheduler sends them all the time) makes the
// kernel interrupt the request, and answering EINTR once the gateway may
// have made the change turns the program's retry into a wrong answer
// (ENOENT for an unlink that happened, EEXIST for a mkdir).
func uninterrupted(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

// refused reports whether the gateway refused a change for good (the
// lease or the branch does not allow it, or the budget is spent), as
// opposed to failing for a while (unreachable, 5xx).
func refused(err error) bool {
	switch errno(err) {
	case syscall.EACCES, syscall.ENOENT, syscall.EDQUOT, syscall.EINVAL, syscall.EFBIG, syscall.ENAMETOOLONG:
		return true
	}
	return false
}

// discard drops changes the gateway refused, so the file is again what
// the gateway holds: a file that never reached it disappears, an edited
// one reverts. close(2) reports the refusal. The caller holds st.mu.
func (f *fileNode) discard(st *staged, key string, err error) {
	f.m.log.Warn("changes refused by the gateway were discarded", "key", key, "err", err)
	f.mu.Lock()
	if f.staged == st {
		f.staged = nil
	}
	gone := f.local
	if gone {
		f.unlinked = true
	}
	f.content, f.kernelVer = nil, "" // the kernel's pages hold the refused bytes
	f.mu.Unlock()
	st.close()
	f.m.markClean(f)
	if gone {
		if name, parent := f.Parent(); parent != nil {
			if d, ok := parent.Operations().(*dirNode); ok {
				d.noteName(name, info{})
			}
			go parent.NotifyEntry(name)
		}
	}
}
