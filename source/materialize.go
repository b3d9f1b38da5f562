package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Opener gives the Source of an attachment by ID; ErrRemoved when it is
// no longer attached.
type Opener interface {
	Source(ctx context.Context, id string) (Source, error)
}

// Materializer serves the bytes of lazy entries: from the chunk store for
// the blocks the side index holds, else from the source, storing what it
// fetches so every later read, on any branch or fork, is local.
type Materializer struct {
	db     kv.DB
	chunks *cas.Store
	open   Opener
	maxRun int64
	// metaRetry: MaterializerOptions.MetaRetry
	metaRetry time.Duration

	mu       sync.Mutex           // guards flights and metaMiss
	flights  map[string]*flight   // side-index key of a block -> its fetch in progress
	metaMiss map[string]time.Time // metadata record key -> when its source may be asked again (meta.go)

	fetches      atomic.Int64 // remote reads started
	fetchedBytes atomic.Int64 // bytes fetched from remotes and stored
	fetchErrors  atomic.Int64 // remote fetches that failed
	localBlocks  atomic.Int64 // blocks a read found local
	remoteBlocks atomic.Int64 // blocks a read fetched
}

var _ interface {
	MarkRoots(ctx context.Context, mark func(chunk.Hash)) error
} = (*Materializer)(nil)

// MaterializerOptions tunes a Materializer.
type MaterializerOptions struct {
	// MaxRun bounds the blocks one remote GET fetches (0 means 128, 1 GiB).
	// A first read of a whole object up to MaxRun blocks is one GET, which
	// lets the remote's whole-object checksum gate the recording.
	MaxRun int
	// MetaRetry is how long a source that failed to answer for an
	// object's metadata is left alone (0 means 30 s).
	MetaRetry time.Duration
}

// NewMaterializer returns a Materializer storing into chunks and the side
// index in db, reading sources through open.
func NewMaterializer(db kv.DB, chunks *cas.Store, open Opener, o MaterializerOptions) *Materializer {
	if o.MaxRun <= 0 {
		o.MaxRun = 128
	}
	if o.MetaRetry <= 0 {
		o.MetaRetry = 30 * time.Second
	}
	return &Materializer{db: db, chunks: chunks, open: open, maxRun: int64(o.MaxRun), metaRetry: o.MetaRetry, flights: map[string]*flight{}}
}

// Stats counts remote traffic.
type Stats struct {
	Fetches      int64 // remote range reads started
	FetchedBytes int64 // bytes fetched, verified and stored
	FetchErrors  int64 // fetches that failed (the remote's answer, a drift, a cut stream)
	// LocalBlocks and RemoteBlocks count the blocks reads found already
	// local and those they fetched: the lazy sources' cache hit rate.
	LocalBlocks, RemoteBlocks int64
}

// Stats returns the remote traffic so far.
func (m *Materializer) Stats() Stats {
	return Stats{Fetches: m.fetches.Load(), FetchedBytes: m.fetchedBytes.Load(), FetchErrors: m.fetchErrors.Load(),
		LocalBlocks: m.localBlocks.Load(), RemoteBlocks: m.remoteBlocks.Load()}
}

// flight is one remote fetch of a run of blocks; readers of those blocks
// wait on done.
type flight struct {
	done chan struct{}
	err  error // set before done is closed
}

// errAbandoned ends a flight whose reader went away before using it.
var errAbandoned = errors.New("fetch abandoned by its reader")

// shared reports whether a flight's failure concerns every reader of the
// block (the remote's answer), rather than only the reader that led it
// (its client went away, its context ended): the others then try again
// themselves.
func shared(err error) bool {
	return errors.Is(err, ErrChanged) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrCorrupt) || errors.Is(err, ErrRemoved)
}

// Reader reads a byte range of a lazy entry.
type Reader struct {
	m      *Materializer
	source string
	ref    objectRef
	pin    Pin
	off    int64
	end    int64
	local  map[int64]*manifest.Content // blocks known to be local
	run    *run                        // fetch started by Open, not yet streamed
	pace   *pacer                      // holds its fetches to a rate (nil: none)
}

// Open prepares reading bytes [off, off+n) of lazy entry e. It returns once
// the first byte is ready (local, or the remote answered), so a remote that
// is down, a drifted object or a detached source fail here, before a
// response is under way. Close the Reader.
func (m *Materializer) Open(ctx context.Context, e *manifest.Entry, off, n int64) (*Reader, error) {
	r, err := m.reader(e, off, n)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return r, nil
	}
	first := off / BlockSize
	if err := r.load(ctx, first, (r.end-1)/BlockSize); err != nil {
		return nil, err
	}
	for r.local[first] == nil {
		run, err := r.start(ctx, first)
		if err != nil {
			return nil, err
		}
		if run != nil {
			r.run = run
			break
		}
	}
	return r, nil
}

// reader returns a Reader of bytes [off, off+n) of lazy entry e that has
// loaded nothing yet.
func (m *Materializer) reader(e *manifest.Entry, off, n int64) (*Reader, error) {
	if !e.Lazy() {
		return nil, fmt.Errorf("materialize: entry is not lazy: %w", ErrInvalid)
	}
	if off < 0 || n < 0 || off+n > e.Size {
		return nil, fmt.Errorf("materialize %s [%d,+%d) of %d: %w", e.Remote.Key, off, n, e.Size, ErrInvalid)
	}
	return &Reader{m: m, source: e.Remote.Source, ref: refOf(e.Remote), off: off, end: off + n,
		pin:   Pin{Key: e.Remote.Key, Size: e.Size, ETag: e.Remote.ETag, VersionID: e.Remote.VersionID},
		local: map[int64]*manifest.Content{}}, nil
}

// ChunkMap makes the whole of lazy entry e local (fetching what is not)
// and returns its chunks in order: what a client that reads by chunk (the
// mount) needs.
func (m *Materializer) ChunkMap(ctx context.Context, e *manifest.Entry) ([]chunk.Ref, error) {
	r, err := m.Open(ctx, e, 0, e.Size)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !r.Local() {
		if err := r.Copy(ctx, io.Discard); err != nil {
			return nil, err
		}
	}
	var refs []chunk.Ref
	for b := int64(0); b < blockCount(e.Size); b++ {
		c := r.local[b]
		if c == nil {
			return nil, fmt.Errorf("chunk map of %s: block %d not local: %w", r.pin, b, ErrUnavailable)
		}
		refs = append(refs, c.Chunks...)
	}
	return refs, nil
}

// LocalMap returns the chunks of lazy entry e in order when every block
// of it is local, and false (fetching nothing) when some are not.
func (m *Materializer) LocalMap(ctx context.Context, e *manifest.Entry) ([]chunk.Ref, bool, error) {
	r, err := m.reader(e, 0, e.Size)
	if err != nil || e.Size == 0 {
		return nil, err == nil, err
	}
	if err := r.load(ctx, 0, (r.end-1)/BlockSize); err != nil {
		return nil, false, err
	}
	var refs []chunk.Ref
	for b := int64(0); b < blockCount(e.Size); b++ {
		c := r.local[b]
		if c == nil {
			return nil, false, nil
		}
		refs = append(refs, c.Chunks...)
	}
	return refs, true, nil
}

// Local reports whether every byte of the range is already local.
func (r *Reader) Local() bool {
	for b := r.off / BlockSize; b*BlockSize < r.end; b++ {
		if r.local[b] == nil {
			return false
		}
	}
	return true
}

// Close releases a fetch that Open started and Copy did not use.
func (r *Reader) Close() error {
	if r.run != nil {
		r.run.fail(errAbandoned)
		r.run = nil
	}
	return nil
}

// load reads the side-index records of blocks [from, to] into r.local. An
// undecodable record counts as absent (the block is fetched again and its
// record rewritten).
func (r *Reader) load(ctx context.Context, from, to int64) error {
	return r.m.db.View(ctx, func(rd kv.Reader) error {
		rng := kv.Range{Start: r.ref.blockKey(from), End: r.ref.blockKey(to + 1)}
		if to+1 > int64(^uint32(0)) {
			rng.End = kv.PrefixEnd(r.ref.prefix())
		}
		return rd.Scan(rng, func(k, v []byte) error {
			_, b, ok := parseIndexKey(k)
			if !ok {
				return nil
			}
			if c, err := decodeBlock(v, blockLen(r.pin.Size, b)); err == nil {
				r.local[b] = c
			}
			return nil
		})
	})
}

// Copy writes the range to w, fetching what is not local. An error after
// bytes were written means w got a short or unverified body: the caller
// must abort its response.
func (r *Reader) Copy(ctx context.Context, w io.Writer) error {
	pos := r.off
	for pos < r.end {
		b := pos / BlockSize
		if c := r.local[b]; c != nil {
			r.m.localBlocks.Add(1)
			start := b * BlockSize
			to := min(r.end, start+blockLen(r.pin.Size, b)) - start
			if err := r.m.writeChunks(ctx, w, c, pos-start, to); err != nil {
				return err
			}
			pos = start + to
			continue
		}
		run := r.run
		r.run = nil
		if run == nil || run.first != b {
			if run != nil {
				run.fail(errAbandoned)
			}
			var err error
			if run, err = r.start(ctx, b); err != nil {
				return err
			}
			if run == nil {
				continue // another reader fetched it meanwhile
			}
		}
		next, err := run.stream(ctx, w, pos, r.end)
		if err != nil {
			return err
		}
		pos = next
	}
	return nil
}

// writeChunks writes bytes [from, to) of a block made of c.
func (m *Materializer) writeChunks(ctx context.Context, w io.Writer, c *manifest.Content, from, to int64) error {
	var off int64
	for _, ref := range c.Chunks {
		size := int64(ref.Size)
		if off+size <= from {
			off += size
			continue
		}
		if off >= to {
			break
		}
		a, z := max(from-off, 0), min(to-off, size)
		if err := m.chunks.Read(ctx, w, ref.Hash, a, z-a); err != nil {
			return err
		}
		off += size
	}
	return nil
}

// start makes block b local or starts fetching it: it returns nil when b
// turned out local (another reader fetched it), or a run led by this
// reader, with its remote read open, covering b and as many following
// blocks of the range as are neither local nor being fetched.
func (r *Reader) start(ctx context.Context, b int64) (*run, error) {
	m := r.m
	for {
		m.mu.Lock()
		if f := m.flights[string(r.ref.blockKey(b))]; f != nil {
			m.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err != nil && shared(f.err) {
				return nil, f.err
			}
			if err := r.load(ctx, b, b); err != nil {
				return nil, err
			}
			if r.local[b] != nil {
				return nil, nil
			}
			continue // its leader gave up: lead ourselves
		}
		last := min((r.end-1)/BlockSize, b+m.maxRun-1)
		f := &flight{done: make(chan struct{})}
		end := b
		m.flights[string(r.ref.blockKey(b))] = f
		for k := b + 1; k <= last; k++ {
			key := string(r.ref.blockKey(k))
			if r.local[k] != nil || m.flights[key] != nil {
				break
			}
			m.flights[key] = f
			end = k
		}
		m.mu.Unlock()
		run := &run{r: r, f: f, first: b, last: end}
		// A fetch may have ended between the reader's index scan and the
		// claim: look again before going to the remote.
		if err := r.load(ctx, b, end); err != nil {
			run.fail(err)
			return nil, err
		}
		if r.local[b] != nil {
			run.release(b, end)
			return nil, nil
		}
		for k := b + 1; k <= end; k++ {
			if r.local[k] != nil {
				run.release(k, end)
				run.last = k - 1
				break
			}
		}
		if err := run.open(ctx); err != nil {
			run.fail(err)
			return nil, err
		}
		return run, nil
	}
}

// run is one remote read of blocks [first, last] of an object, led by one
// reader; f tells the others when it is over.
type run struct {
	r           *Reader
	f           *flight
	first, last int64
	body        io.ReadCloser
}

func (u *run) open(ctx context.Context) error {
	r := u.r
	src, err := r.m.open.Source(ctx, r.source)
	if err != nil {
		return err
	}
	start := u.first * BlockSize
	end := u.last*BlockSize + blockLen(r.pin.Size, u.last)
	r.m.fetches.Add(1)
	body, err := src.ReadRange(ctx, r.pin, start, end-start)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", r.pin, err)
	}
	u.body = body
	if r.pace != nil {
		u.body = &pacedBody{ReadCloser: body, p: r.pace}
	}
	return nil
}

// release drops the claims on blocks [from, to] without an error: their
// waiters look at the index again.
func (u *run) release(from, to int64) {
	m := u.r.m
	m.mu.Lock()
	for k := from; k <= to; k++ {
		delete(m.flights, string(u.r.ref.blockKey(k)))
	}
	m.mu.Unlock()
	if from == u.first {
		close(u.f.done)
	}
}

// finish ends the flight with err (nil: the blocks are recorded).
func (u *run) finish(err error) {
	if u.body != nil {
		u.body.Close()
		u.body = nil
	}
	m := u.r.m
	if err != nil && !errors.Is(err, errAbandoned) {
		m.fetchErrors.Add(1)
	}
	m.mu.Lock()
	for k := u.first; k <= u.last; k++ {
		delete(m.flights, string(u.r.ref.blockKey(k)))
	}
	u.f.err = err
	m.mu.Unlock()
	close(u.f.done)
}

func (u *run) fail(err error) { u.finish(err) }

// recordBatch bounds the blocks written to one segment (one fsync) and
// recorded per kv transaction.
const recordBatch = 16

// stream reads the run's blocks from the remote into the chunk store,
// writing the bytes of [from, to) to w as they pass, then records them all
// once the whole read verified. It returns the offset after the last byte
// it wrote.
func (u *run) stream(ctx context.Context, w io.Writer, from, to int64) (next int64, err error) {
	r := u.r
	m := r.m
	var ups []*cas.Upload // one per recordBatch blocks
	defer func() {
		for _, up := range ups {
			up.Close() // deletes the segment of an unrecorded upload
		}
		u.finish(err)
	}()
	win := &window{w: w, pos: u.first * BlockSize, from: from, to: to}
	blocks := make([]*manifest.Content, 0, u.last-u.first+1)
	var up *cas.Upload
	for k := u.first; k <= u.last; k++ {
		if (k-u.first)%recordBatch == 0 {
			up = m.chunks.NewUpload()
			ups = append(ups, up)
		}
		n := blockLen(r.pin.Size, k)
		refs, got, err := up.Ingest(ctx, io.TeeReader(io.LimitReader(u.body, n), win))
		if err != nil {
			return 0, fmt.Errorf("fetch %s block %d: %w", r.pin, k, err)
		}
		if got != n {
			return 0, fmt.Errorf("fetch %s block %d: body cut short at %d of %d bytes: %w", r.pin, k, got, n, ErrUnavailable)
		}
		if (k-u.first)%recordBatch == recordBatch-1 || k == u.last {
			if err := up.Sync(context.WithoutCancel(ctx)); err != nil {
				return 0, err
			}
		}
		blocks = append(blocks, &manifest.Content{Chunks: refs})
	}
	// The body must end here; its end runs the remote's checks.
	var one [1]byte
	for {
		n, err := u.body.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("fetch %s: longer than pinned: %w", r.pin, ErrCorrupt)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("fetch %s: %w", r.pin, err)
		}
	}
	// Verified: record. The client may be gone by now; the bytes are good.
	rctx := context.WithoutCancel(ctx)
	for g, up := range ups {
		i := g * recordBatch
		j := min(i+recordBatch, len(blocks))
		err := m.db.Update(rctx, func(txn kv.Txn) error {
			if err := up.Record(txn); err != nil {
				return err
			}
			for x := i; x < j; x++ {
				if err := txn.Set(r.ref.blockKey(u.first+int64(x)), blocks[x].Encode()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("record %s: %w", r.pin, err)
		}
	}
	for x, c := range blocks {
		r.local[u.first+int64(x)] = c
		m.fetchedBytes.Add(c.Size())
	}
	m.remoteBlocks.Add(int64(len(blocks)))
	if err := win.release(); err != nil {
		return 0, err
	}
	end := u.last*BlockSize + blockLen(r.pin.Size, u.last)
	return min(end, to), nil
}

// window passes on the bytes of [from, to) of a stream whose next byte is
// at offset pos. It holds back the byte at to-1 until release: a client
// can then never receive a complete body before the fetch verified.
type window struct {
	w        io.Writer
	pos      int64
	from, to int64
	held     []byte
}

func (x *window) Write(p []byte) (int, error) {
	s, e := max(x.from-x.pos, 0), min(x.to-x.pos, int64(len(p)))
	if s < e {
		seg := p[s:e]
		if x.pos+e == x.to {
			x.held = append(x.held[:0], seg[len(seg)-1])
			seg = seg[:len(seg)-1]
		}
		if len(seg) > 0 {
			if _, err := x.w.Write(seg); err != nil {
				return 0, err
			}
		}
	}
	x.pos += int64(len(p))
	return len(p), nil
}

// release writes the held byte.
func (x *window) release() error {
	if len(x.held) == 0 {
		return nil
	}
	_, err := x.w.Write(x.held)
	x.held = nil
	return err
}

// MarkRoots implements branch.RootSource: every chunk of the side index is
// live. Undecodable records are skipped (a read fetches their block
// again), and so are metadata records.
func (m *Materializer) MarkRoots(ctx context.Context, mark func(chunk.Hash)) error {
	return m.db.View(ctx, func(rd kv.Reader) error {
		return rd.Scan(kv.Prefix([]byte(indexPrefix)), func(k, v []byte) error {
			if _, b, ok := parseIndexKey(k); ok && b == metaBlock {
				return nil // an object's metadata, no chunks
			}
			c, err := manifest.DecodeContent(v)
			if err != nil {
				return nil
			}
			for _, ref := range c.Chunks {
				mark(ref.Hash)
			}
			return nil
		})
	})
}

// Evict forgets everything materialised from a source; the chunks become
// garbage for the next collection unless something else references them.
// Later reads of its lazy entries fetch again (or fail if it is detached).
func (m *Materializer) Evict(ctx context.Context, source string) error {
	return m.evict(ctx, kv.Prefix(sourcePrefix(source)))
}

// EvictObject forgets what was materialised of one pinned remote object
// (a cascade forget of its lazy entries), as Evict does for a source.
func (m *Materializer) EvictObject(ctx context.Context, r *manifest.Remote) error {
	return m.evict(ctx, kv.Prefix(refOf(r).prefix()))
}

// evict deletes the side-index records in r, a thousand a transaction.
func (m *Materializer) evict(ctx context.Context, r kv.Range) error {
	for {
		var keys [][]byte
		err := m.db.View(ctx, func(rd kv.Reader) error {
			return rd.Scan(r, func(k, _ []byte) error {
				keys = append(keys, append([]byte(nil), k...))
				if len(keys) == 1000 {
					return kv.ErrStop
				}
				return nil
			})
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = m.db.Update(ctx, func(txn kv.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}
