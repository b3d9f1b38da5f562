package fuse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/chunkcache"
	"github.com/agentnas/nas/client"
)

// handle is one open file.
type handle struct {
	f     *fileNode
	flags uint32
	rd    *reader
	once  sync.Once
}

// reader returns the handle's reader, made on first use.
func (h *handle) reader() *reader {
	h.once.Do(func() { h.rd = newReader(h.f.m) })
	return h.rd
}

// Read reads at off: unsaved changes from the staging file, the rest
// from the version the file was opened at.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	// A signal to the reader does not abort the read (programs do not
	// expect EINTR from a file); the retries and this bound do.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	f := h.f
	for {
		f.mu.Lock()
		st, c := f.staged, f.content
		local, e := f.local, f.e
		f.mu.Unlock()
		if st != nil {
			st.mu.Lock()
			if st.closed {
				st.mu.Unlock()
				continue // uploaded meanwhile: read the new version
			}
			n, err := st.readAt(dest, off, func(p []byte, o int64) (int, error) {
				return h.reader().read(ctx, st.base, p, o)
			})
			st.mu.Unlock()
			if err != nil {
				return nil, f.m.fail(err)
			}
			return gofuse.ReadResultData(dest[:n]), 0
		}
		if local || e == nil {
			return gofuse.ReadResultData(nil), 0
		}
		if c == nil {
			var inlined bool
			var err error
			if c, inlined, err = f.openContent(ctx); err != nil {
				return nil, f.m.fail(err)
			}
			if c == nil {
				continue
			}
			if inlined {
				h.reader().charge(c.VersionID, span{0, c.Size})
			}
		}
		n, err := h.reader().read(ctx, c, dest, off)
		if err != nil {
			return nil, f.m.fail(err)
		}
		return gofuse.ReadResultData(dest[:n]), 0
	}
}

// readTimeout bounds one read, whatever the gateway does.
const readTimeout = 2 * time.Minute

// Write stores data at off in the staging file.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f := h.f
	if err := f.m.writable(); err != nil {
		return 0, errno(err)
	}
	if h.flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return 0, syscall.EBADF
	}
	if left := f.m.writeLeft(); left >= 0 && int64(len(data)) > left {
		// Refused before anything is staged: close must not upload an
		// unchanged file as a new version.
		return 0, syscall.EDQUOT
	}
	f.m.ns.RLock() // not under st.mu: renames take ns, then st.mu (flush)
	key := f.key
	f.m.ns.RUnlock()
	for {
		st, err := f.stage()
		if err != nil {
			return 0, f.m.fail(err)
		}
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			continue
		}
		if left := f.m.writeLeft(); left >= 0 && st.dirtyBytes()+int64(len(data)) > left {
			st.mu.Unlock()
			return 0, syscall.EDQUOT
		}
		err = st.write(data, off)
		if err == nil && st.streamable() && f.m.opts.Stream && !f.isUnlinked() {
			f.feedStream(st, key)
		}
		st.mu.Unlock()
		if err != nil {
			return 0, f.m.fail(err)
		}
		f.mu.Lock()
		f.mtime = time.Now()
		f.mu.Unlock()
		return uint32(len(data)), 0
	}
}

// feedStream sends the full parts of a file written at its end while it
// is being written; the caller holds st.mu. A rename before close makes
// upload notice that key is stale and send the file whole.
func (f *fileNode) feedStream(st *staged, key string) {
	size := st.size.Load()
	if st.stream == nil {
		if size < streamPart {
			return
		}
		f.mu.Lock()
		opt := client.PutOptions{ContentType: f.contentType, Meta: f.metaLocked()}
		f.mu.Unlock()
		st.stream = newStream(f.m, key, opt)
	}
	st.stream.grow(st.f, size)
}

// writeLeft is the lease's remaining write budget (-1: none applies).
func (m *Mount) writeLeft() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return -1
	}
	return m.lease.writeLeft
}

// Flush is close(2): unsaved changes are uploaded before it returns.
//
// With Options.Writeback, close only schedules the upload (see writeback).
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if wb := h.f.m.wb; wb != nil && h.f.isDirty() && wb.enqueue(h.f) {
		return 0
	}
	if err := h.f.flush(ctx); err != nil {
		return h.f.m.fail(err)
	}
	return 0
}

// Fsync uploads and waits for the gateway's acknowledgement; it also
// reports a background upload of the file that failed.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.f.Fsync(ctx, h, flags)
}

// Release is the last close of the handle.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	f := h.f
	f.mu.Lock()
	f.opens--
	var drop *staged
	if f.opens == 0 && f.unlinked && f.staged != nil {
		drop, f.staged = f.staged, nil
	}
	f.mu.Unlock()
	if drop != nil {
		drop.mu.Lock()
		drop.close()
		drop.mu.Unlock()
		f.m.markClean(f)
	}
	return 0
}

// Getattr is fstat: the file's attributes.
func (h *handle) Getattr(ctx context.Context, out *gofuse.AttrOut) syscall.Errno {
	h.f.fillAttr(&out.Attr)
	out.SetTimeout(h.f.m.ttl)
	return 0
}

// Setattr is ftruncate, fchmod and futimens: the file's Setattr.
func (h *handle) Setattr(ctx context.Context, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	return h.f.Setattr(ctx, h, in, out)
}

var _ fs.FileHandle = (*handle)(nil)

// reader reads versions of objects for one open file: chunk by chunk,
// from the host's chunk cache when it has them, else by ranged GETs of
// whole chunks (with read-ahead), each chunk verified against its hash
// before it is used or cached.
//
// Budgets stay exact: bytes that come over GET were charged by the
// gateway; bytes that come from the cache are charged with object/reads
// before they are returned; and every read of a lease asks the gateway,
// so a revoked or expired lease reads nothing more, cache or not. The
// kernel's page cache is dropped at every open, so a re-read within one
// open is the only read not charged twice.
type reader struct {
	m *Mount

	// mu guards charged, next and ahead.
	mu      sync.Mutex
	charged map[string][]span // version -> byte ranges already charged
	next    int64             // where a sequential reader reads next
	ahead   int64             // read-ahead window
	loading map[chunk.Hash]chan struct{}
}

// newReader returns a reader of m's objects with nothing charged yet.
func newReader(m *Mount) *reader {
	return &reader{m: m, charged: map[string][]span{}, loading: map[chunk.Hash]chan struct{}{}}
}

// Read-ahead bounds.
const (
	minAhead = 4 << 20
	maxAhead = 32 << 20
)

// mapped makes sure c carries its chunk map (stat on first use).
func (rd *reader) mapped(ctx context.Context, c *content) (*content, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mapped {
		return c, nil
	}
	s, _, err := rd.m.r.stat(ctx, c.Key, c.VersionID, 0)
	if err != nil {
		return nil, err
	}
	c.chunks, c.mapped, c.ranged = s.chunks, true, s.ranged
	return c, nil
}

// read reads c's bytes at off into p.
func (rd *reader) read(ctx context.Context, c *content, p []byte, off int64) (int, error) {
	c, err := rd.mapped(ctx, c)
	if err != nil {
		return 0, err
	}
	end := min(off+int64(len(p)), c.Size)
	if off >= end {
		if rd.m.opts.Client.Temporary() {
			return 0, rd.m.r.reads(ctx, c.Key, c.VersionID, nil)
		}
		return 0, nil
	}
	if c.ranged {
		return rd.readRanged(ctx, c, p, off, end)
	}
	want := chunksIn(c.chunks, off, end)
	// Which chunks must come over the network.
	var missing []int
	for i, ch := range want {
		rd.waitLoading(ch.hash)
		if !rd.m.cache.Has(ch.hash) {
			missing = append(missing, i)
		}
	}
	if rd.m.opts.Client.Temporary() {
		if err := rd.chargeCached(ctx, c, want, missing, off, end); err != nil {
			return 0, err
		}
	}
	fetched := map[int][]byte{}
	defer func() {
		for _, b := range fetched {
			putBuf(b)
		}
	}()
	if err := rd.fetchMissing(ctx, c, want, missing, fetched); err != nil {
		return 0, err
	}
	if err := rd.copyOut(ctx, c, want, fetched, p, off, end); err != nil {
		return 0, err
	}
	rd.readAhead(c, off, end)
	return int(end - off), nil
}

// readRanged reads [off, end) of a sealed object, or of a lazy one, straight
// from the gateway, which opens it or fetches the source's blocks the
// range touches (and charges the read): its bytes never enter the chunk
// cache.
func (rd *reader) readRanged(ctx context.Context, c *content, p []byte, off, end int64) (int, error) {
	err := rd.m.r.get(ctx, c.Key, c.VersionID, off, end-off, func(body io.Reader, _ client.Info) error {
		_, err := io.ReadFull(body, p[:end-off])
		return err
	})
	if err != nil {
		return 0, err
	}
	rd.charge(c.VersionID, span{off, end - off})
	return int(end - off), nil
}

// chunksIn returns the chunks that hold bytes of [off, end).
func chunksIn(chunks []chunkAt, off, end int64) []chunkAt {
	first := sort.Search(len(chunks), func(i int) bool { return chunks[i].off+chunks[i].size > off })
	last := first
	for last < len(chunks) && chunks[last].off < end {
		last++
	}
	return chunks[first:last]
}

// chargeCached charges (and so authorizes) a lease's read of [off, end)
// for the bytes the cache will serve, those of want but not of missing,
// before they are served; a range charged before in this open is not
// charged again.
func (rd *reader) chargeCached(ctx context.Context, c *content, want []chunkAt, missing []int, off, end int64) error {
	served := []span{{off, end - off}}
	for _, i := range missing {
		served = subtract(served, span{want[i].off, want[i].size})
	}
	rd.mu.Lock()
	todo := served
	for _, s := range rd.charged[c.VersionID] {
		todo = subtract(todo, s)
	}
	rd.mu.Unlock()
	if len(todo) > 0 || len(missing) == 0 {
		if err := rd.m.r.reads(ctx, c.Key, c.VersionID, todo); err != nil {
			return err
		}
		rd.charge(c.VersionID, todo...)
	}
	return nil
}

// fetchMissing GETs the chunks want[i] for i in missing, one ranged GET
// per run of neighbours, into pooled buffers in fetched (by index in
// want) that the caller returns to the pool.
func (rd *reader) fetchMissing(ctx context.Context, c *content, want []chunkAt, missing []int, fetched map[int][]byte) error {
	for j := 0; j < len(missing); {
		k := j
		for k+1 < len(missing) && missing[k+1] == missing[k]+1 {
			k++
		}
		run := want[missing[j] : missing[k]+1]
		err := rd.fetch(ctx, c, run, func(idx int, data []byte) {
			b := getBuf(len(data))
			copy(b, data)
			fetched[missing[j]+idx] = b
		})
		if err != nil {
			return err
		}
		j = k + 1
	}
	return nil
}

// copyOut copies [off, end) into p from the fetched chunks of want and,
// for the others, from the cache; a chunk evicted since it was found
// there is fetched again.
func (rd *reader) copyOut(ctx context.Context, c *content, want []chunkAt, fetched map[int][]byte, p []byte, off, end int64) error {
	for i, ch := range want {
		from, to := max(off, ch.off), min(end, ch.off+ch.size)
		dst := p[from-off : to-off]
		if b, ok := fetched[i]; ok {
			copy(dst, b[from-ch.off:to-ch.off])
			continue
		}
		n, err := rd.m.cache.ReadAt(ch.hash, dst, from-ch.off)
		if err != nil || n < len(dst) {
			// Evicted since it was found: fetch it (the GET charges).
			if err := rd.fetch(ctx, c, want[i:i+1], func(_ int, data []byte) {
				copy(dst, data[from-ch.off:to-ch.off])
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAhead fetches, in the background, the chunks a sequential reader
// will want next.
func (rd *reader) readAhead(c *content, off, end int64) {
	rd.mu.Lock()
	if off != rd.next {
		rd.ahead = 0
		rd.next = end
		rd.mu.Unlock()
		return
	}
	rd.next = end
	rd.ahead = min(max(rd.ahead*2, minAhead), maxAhead)
	window := rd.ahead
	var run []chunkAt
	for _, ch := range c.chunks {
		if ch.off+ch.size <= end || ch.off >= end+window {
			continue
		}
		if _, busy := rd.loading[ch.hash]; busy || rd.m.cache.Has(ch.hash) {
			if len(run) > 0 {
				break
			}
			continue
		}
		// Marked loading at once: a chunk that repeats in the file (zeros,
		// a repeated block) is busy at its second place, and the run ends
		// there (two marks of one hash closed one channel twice).
		run = append(run, ch)
		rd.loading[ch.hash] = make(chan struct{})
	}
	rd.mu.Unlock()
	if len(run) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := rd.fetch(ctx, c, run, func(int, []byte) {})
		rd.mu.Lock()
		for _, ch := range run {
			close(rd.loading[ch.hash])
			delete(rd.loading, ch.hash)
		}
		rd.mu.Unlock()
		if err != nil {
			rd.m.log.Debug("read-ahead failed", "key", c.Key, "err", err)
		}
	}()
}

// waitLoading waits for a read-ahead of h in flight.
func (rd *reader) waitLoading(h chunk.Hash) {
	rd.mu.Lock()
	ch := rd.loading[h]
	rd.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// charge records that the ranges s of version were charged.
func (rd *reader) charge(version string, s ...span) {
	rd.mu.Lock()
	rs := rd.charged[version]
	for _, x := range s {
		rs = addSpan(rs, x)
	}
	rd.charged[version] = rs
	rd.mu.Unlock()
}

// addSpan adds s to the sorted, disjoint ranges rs, merging neighbours.
func addSpan(rs []span, s span) []span {
	if s.n <= 0 {
		return rs
	}
	a, b := s.off, s.off+s.n
	out := make([]span, 0, len(rs)+1)
	placed := false
	for _, r := range rs {
		switch {
		case r.off+r.n < a:
			out = append(out, r)
		case r.off > b:
			if !placed {
				out = append(out, span{a, b - a})
				placed = true
			}
			out = append(out, r)
		default:
			a, b = min(a, r.off), max(b, r.off+r.n)
		}
	}
	if !placed {
		out = append(out, span{a, b - a})
	}
	return out
}

// errCorrupt is a chunk whose bytes do not hash to its name.
var errCorrupt = errors.New("a chunk read from the gateway does not match its hash")

// fetch GETs a run of consecutive chunks of c, verifies each, keeps it in
// the cache and hands it to use (which must copy what it keeps).
func (rd *reader) fetch(ctx context.Context, c *content, run []chunkAt, use func(idx int, data []byte)) error {
	off := run[0].off
	n := run[len(run)-1].off + run[len(run)-1].size - off
	buf := getBuf(int(chunk.MaxSize))
	defer putBuf(buf)
	err := rd.m.r.get(ctx, c.Key, c.VersionID, off, n, func(body io.Reader, _ client.Info) error {
		for i, ch := range run {
			data := buf[:ch.size]
			if _, err := io.ReadFull(body, data); err != nil {
				return err
			}
			if err := rd.m.cache.Put(ch.hash, data); err != nil {
				if errors.Is(err, chunkcache.ErrMismatch) {
					return fmt.Errorf("%s@%s at %d: %w", c.Key, c.VersionID, ch.off, errCorrupt)
				}
				rd.m.log.Warn("chunk cache", "err", err) // the bytes are verified; serve them anyway
			}
			use(i, data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rd.charge(c.VersionID, span{off, n})
	return nil
}

// subtract removes s from the sorted ranges rs.
func subtract(rs []span, s span) []span {
	var out []span
	for _, r := range rs {
		a, b := r.off, r.off+r.n
		x, y := s.off, s.off+s.n
		if y <= a || x >= b {
			out = append(out, r)
			continue
		}
		if x > a {
			out = append(out, span{a, x - a})
		}
		if y < b {
			out = append(out, span{y, b - y})
		}
	}
	return out
}

// bufPool holds chunk-sized buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, chunk.MaxSize); return &b }}

// getBuf returns a buffer of n bytes, pooled when it fits a chunk.
func getBuf(n int) []byte {
	if n > chunk.MaxSize {
		return make([]byte, n)
	}
	return (*bufPool.Get().(*[]byte))[:n]
}

// putBuf returns a buffer from getBuf to the pool.
func putBuf(b []byte) {
	if cap(b) == chunk.MaxSize {
		b = b[:cap(b)]
		bufPool.Put(&b)
	}
}
