package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers the algorithm

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// Content-defined chunking parameters. They are part of the storage format
// in the sense that changing them changes which chunks new data produces
// (old data stays readable; only deduplication against it weakens).
const (
	ChunkMin    = 256 << 10
	ChunkNormal = 1 << 20
	ChunkMax    = chunk.MaxSize
	cdcAlgo     = "fastcdc-v1.0.0"
)

// writebackStep is how many bytes a segment grows between two hints to
// the kernel to start writing it out (startWriteback), so a large upload's
// disk writes overlap its hashing instead of all waiting for Sync.
const writebackStep = 8 << 20

// spaceStep is how many bytes a segment grows between two checks of the
// free-space floor (space.check), besides the one when it is created.
const spaceStep = writebackStep

// scanPool holds the chunker's read-ahead window, twice ChunkMax. When the
// window runs out the chunker moves the bytes it has not consumed (less
// than ChunkMax) to its front: by arithmetic about one byte moved per
// byte chunked at this size (a third of one at four times ChunkMax),
// which BenchmarkChunker does not tell apart from the larger windows; the
// 8 MiB a body saves is what bounds a gateway's memory under many large
// uploads (README "Memory").
//
// With the chunks in flight (at most four: one being copied by the reader
// and, for the slowest stage, two queued and one being worked on), each in
// a buffer of its size rounded up to a MiB (getChunkBuf), a body being
// ingested holds at most 8 + 4x4 MiB, about 15 MiB for chunks of the
// average size (1.1 MiB, in buffers of 1.8 MiB on average: BenchmarkChunker).
var scanPool = sync.Pool{New: func() any { b := make([]byte, 2*ChunkMax); return &b }}

// Upload is one write session. Put and Ingest add chunks; Sync makes new
// segment data durable; Record writes the index records into the caller's
// transaction; Close releases pins and, if nothing was recorded, removes the
// segment. An Upload is used by one goroutine.
type Upload struct {
	s *Store

	seg     *segFile // segment being written, nil until the first large new chunk
	segID   uint64
	segSize int64
	synced  bool

	recs     map[chunk.Hash]record // new chunks, written by Record
	pinned   []chunk.Hash
	recorded bool
	pushed   bool // the segment is stored remotely (Options.Remote)
	closed   bool
	// unfloored says Record ran without a floor (Store.Floor waits for
	// such Uploads to close).
	unfloored bool
}

// NewUpload starts a write session.
func (s *Store) NewUpload() *Upload {
	return &Upload{s: s, recs: map[chunk.Hash]record{}}
}

// Pin protects existing chunks that the caller is about to reference (a copy
// or a multipart completion) from garbage collection until Close.
func (u *Upload) Pin(refs []chunk.Ref) {
	for _, r := range refs {
		u.s.pin(r.Hash)
		u.pinned = append(u.pinned, r.Hash)
	}
}

// Put stores one chunk (deduplicated) and returns its Ref. data may be
// reused by the caller once Put returns.
func (u *Upload) Put(ctx context.Context, data []byte) (chunk.Ref, error) {
	start := time.Now()
	ref, err := u.put(ctx, chunk.Sum(data), data)
	u.s.obs.ChunkWritten(int64(len(data)), time.Since(start), err)
	return ref, err
}

// put stores chunk h holding data unless the store has it already: inline
// when small, otherwise appended to the upload's segment. It pins h.
func (u *Upload) put(ctx context.Context, h chunk.Hash, data []byte) (chunk.Ref, error) {
	ref := chunk.Ref{Hash: h, Size: uint32(len(data))}
	if _, ok := u.recs[h]; ok {
		return ref, nil
	}
	u.s.pin(h)
	u.pinned = append(u.pinned, h)
	present, err := u.s.Has(ctx, h)
	if err != nil {
		return ref, err
	}
	if present {
		return ref, nil
	}
	if len(data) <= InlineMax {
		u.recs[h] = record{kind: kindInline, created: now(), data: append([]byte(nil), data...), size: int64(len(data))}
		return ref, nil
	}
	if err := u.openSegment(); err != nil {
		return ref, err
	}
	if err := u.seg.write(data); err != nil {
		return ref, err
	}
	u.recs[h] = record{kind: kindSegment, created: now(), seg: u.segID, off: u.segSize, size: int64(len(data))}
	before := u.segSize
	u.segSize += int64(len(data))
	if before/spaceStep != u.segSize/spaceStep {
		if err := u.s.space.check(); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

// openSegment creates the upload's segment file unless it is open.
func (u *Upload) openSegment() error {
	if u.seg != nil {
		return nil
	}
	if err := u.s.space.check(); err != nil {
		return err
	}
	u.segID = newSegmentID()
	p := u.s.segPath(u.segID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("create segment dir: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	u.seg = newSegFile(f, u.s.direct)
	u.s.mu.Lock()
	u.s.open[u.segID] = struct{}{}
	u.s.mu.Unlock()
	return nil
}

// Ingest reads r to its end, splits it with content-defined chunking and
// stores every chunk. It returns the chunk list and the number of bytes
// read. Reading (which drives the caller's checksums and signature checks)
// and hashing plus writing run in two goroutines, so both cores work on a
// large upload; memory stays bounded by a few ChunkMax buffers.
func (u *Upload) Ingest(ctx context.Context, r io.Reader) ([]chunk.Ref, int64, error) {
	return u.IngestTee(ctx, r, nil)
}

// IngestTee is Ingest that also writes every byte read from r to digest, in
// order, as an io.TeeReader would, but off the reading goroutine: a body
// larger than ChunkMin is fed to digest chunk by chunk on a goroutine of its
// own, so the caller's whole-body digests (the MD5 of an ETag, an
// x-amz-checksum) run beside chunking and chunk hashing instead of in
// series with them. When IngestTee returns without error, digest has seen
// every byte and is no longer written to; on error it may have seen a
// prefix. An error from digest fails the ingest. A nil digest is Ingest.
func (u *Upload) IngestTee(ctx context.Context, r io.Reader, digest io.Writer) ([]chunk.Ref, int64, error) {
	start := time.Now()
	refs, n, err := u.ingestTee(ctx, r, digest)
	u.s.obs.ChunkWritten(n, time.Since(start), err)
	return refs, n, err
}

func (u *Upload) ingestTee(ctx context.Context, r io.Reader, digest io.Writer) ([]chunk.Ref, int64, error) {
	// Small bodies (most objects) skip the chunker and its buffers: read up
	// to ChunkMin bytes; if the body ends there it is one chunk.
	small := smallPool.Get().(*[]byte)
	defer smallPool.Put(small)
	n, err := io.ReadFull(r, *small)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if n == 0 {
			return nil, 0, nil
		}
		if digest != nil {
			if _, err := digest.Write((*small)[:n]); err != nil {
				return nil, int64(n), fmt.Errorf("digest: %w", err)
			}
		}
		ref, err := u.put(ctx, chunk.Sum((*small)[:n]), (*small)[:n])
		if err != nil {
			return nil, int64(n), err
		}
		return []chunk.Ref{ref}, int64(n), nil
	case err != nil:
		return nil, int64(n), err
	}
	return u.ingestChunked(ctx, io.MultiReader(bytes.NewReader((*small)[:n]), r), digest)
}

// smallPool holds ChunkMin-sized buffers for the small-body fast path.
var smallPool = sync.Pool{New: func() any { b := make([]byte, ChunkMin); return &b }}

// chunkJob is one chunk on its way to the hashing goroutine and, with a
// digest, to the digest goroutine; the last of them to finish with it
// returns buf to its pool (putChunkBuf).
type chunkJob struct {
	buf   *[]byte
	data  []byte
	users atomic.Int32
}

// done gives up one user's share of j, returning its buffer after the last.
func (j *chunkJob) done() {
	if j.users.Add(-1) == 0 {
		putChunkBuf(j.buf)
	}
}

// ingestChunked runs three stages over r: this goroutine reads and chunks;
// a second hashes each chunk and writes it (in order, so refs come out in
// order); a third, when digest is set, writes each chunk to digest (in
// order). Each stage takes at most two chunks ahead of it, so a slow stage
// holds the reader back and memory stays a few ChunkMax buffers.
func (u *Upload) ingestChunked(ctx context.Context, r io.Reader, digest io.Writer) ([]chunk.Ref, int64, error) {
	scan := scanPool.Get().(*[]byte)
	defer scanPool.Put(scan)
	ch, err := chunkers.NewChunkerBuffer(cdcAlgo, r, &chunkers.ChunkerOpts{
		MinSize: ChunkMin, NormalSize: ChunkNormal, MaxSize: ChunkMax,
	}, *scan)
	if err != nil {
		return nil, 0, fmt.Errorf("chunker: %w", err)
	}
	p := u.startStages(ctx, digest)
	total, rerr := p.feed(ctx, ch)
	p.stop()
	switch {
	case rerr != nil:
		return nil, total, rerr
	case p.werr != nil:
		return nil, total, p.werr
	case p.derr != nil:
		return nil, total, p.derr
	}
	return p.refs, total, nil
}

// ingestStages are the stages of ingestChunked behind the reader: the
// hashing stage and, with a digest, the digest stage, each fed through a
// channel that holds two chunks.
type ingestStages struct {
	wg    sync.WaitGroup
	jobs  chan *chunkJob // to the hashing stage
	djobs chan *chunkJob // to the digest stage; nil without a digest
	users int32          // stages each chunk goes to
	// failed is set by a stage's first error: the reader stops reading
	// (the rest of a body a failed upload cannot keep is not worth it).
	failed atomic.Bool
	// Written by the stages, read after wg.Wait.
	refs []chunk.Ref
	werr error // the hashing stage's
	derr error // the digest stage's
}

// startStages starts the hashing stage, which stores chunks through u, and
// the digest stage when digest is set.
func (u *Upload) startStages(ctx context.Context, digest io.Writer) *ingestStages {
	p := &ingestStages{jobs: make(chan *chunkJob, 2), users: 1}
	p.wg.Add(1)
	go p.hash(ctx, u, chunk.NewHasher())
	if digest != nil {
		p.users = 2
		p.djobs = make(chan *chunkJob, 2)
		p.wg.Add(1)
		go p.digest(digest)
	}
	return p
}

// hash is the hashing stage: it stores each chunk through u, in order, and
// after the first error only releases them.
func (p *ingestStages) hash(ctx context.Context, u *Upload, hasher *chunk.Hasher) {
	defer p.wg.Done()
	for j := range p.jobs {
		if p.werr == nil {
			hasher.Reset()
			hasher.Write(j.data)
			var ref chunk.Ref
			ref, p.werr = u.put(ctx, hasher.Sum(), j.data)
			p.refs = append(p.refs, ref)
			if p.werr != nil {
				p.failed.Store(true)
			}
		}
		j.done()
	}
}

// digest is the digest stage: it writes each chunk to w, in order, and
// after the first error only releases them.
func (p *ingestStages) digest(w io.Writer) {
	defer p.wg.Done()
	for j := range p.djobs {
		if p.derr == nil {
			if _, err := w.Write(j.data); err != nil {
				p.derr = fmt.Errorf("digest: %w", err)
				p.failed.Store(true)
			}
		}
		j.done()
	}
}

// feed reads the chunks of ch and hands each to the stages until ch ends,
// ctx is done, a hand-over fails or a stage has failed (its error is the
// ingest's). It returns the number of bytes read.
func (p *ingestStages) feed(ctx context.Context, ch *chunkers.Chunker) (int64, error) {
	var total int64
	for !p.failed.Load() {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		data, err := ch.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			return total, err
		}
		if len(data) > 0 {
			n, serr := p.handOff(ctx, data)
			total += n
			if serr != nil {
				return total, serr
			}
		}
		if err != nil {
			return total, nil
		}
	}
	return total, nil
}

// handOff copies data into a pooled buffer and sends it to each stage in
// turn; when a stage cannot be reached, the shares of the stages it was not
// sent to are released. It returns the number of bytes copied.
func (p *ingestStages) handOff(ctx context.Context, data []byte) (int64, error) {
	b := getChunkBuf(len(data))
	n := copy(*b, data)
	j := &chunkJob{buf: b, data: (*b)[:n]}
	j.users.Store(p.users)
	if err := send(ctx, p.jobs, j); err != nil {
		j.done() // the hashing stage's share
		if p.djobs != nil {
			j.done()
		}
		return int64(n), err
	}
	if p.djobs != nil {
		if err := send(ctx, p.djobs, j); err != nil {
			j.done()
			return int64(n), err
		}
	}
	return int64(n), nil
}

// stop closes the stages' channels and waits for the stages to finish.
func (p *ingestStages) stop() {
	close(p.jobs)
	if p.djobs != nil {
		close(p.djobs)
	}
	p.wg.Wait()
}

// send hands j to a stage through c unless ctx is done first.
func send(ctx context.Context, c chan<- *chunkJob, j *chunkJob) error {
	select {
	case c <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sync makes every new chunk durable: the segment is fsynced and closed and
// its directory fsynced. Inline chunks become durable with Record.
func (u *Upload) Sync(ctx context.Context) error {
	if u.seg == nil || u.synced {
		return nil
	}
	if u.s.remote != nil {
		return u.syncRemote(ctx)
	}
	if err := u.seg.finish(true); err != nil {
		return err
	}
	u.s.onSync(u.seg.f.Name())
	if err := u.seg.close(); err != nil {
		return fmt.Errorf("close segment: %w", err)
	}
	dir := filepath.Dir(u.s.segPath(u.segID))
	if err := syncDir(dir); err != nil {
		return err
	}
	u.s.onSync(dir)
	u.synced = true
	return nil
}

// syncRemote closes the staged segment and stores it remotely: the
// remote object, not the staged file, is what makes it durable.
func (u *Upload) syncRemote(ctx context.Context) error {
	if err := u.seg.finish(false); err != nil {
		return err
	}
	if err := u.seg.close(); err != nil {
		return fmt.Errorf("close segment: %w", err)
	}
	if err := u.push(ctx); err != nil {
		return err
	}
	u.synced = true
	return nil
}

// Record writes the index records of the new chunks into txn; call it inside
// the kv transaction that commits the entry referencing them, after Sync.
// While another gateway collects (Store.Floor), it also stamps the chunks
// the Upload reuses, and fails with ErrCollected if one is gone.
func (u *Upload) Record(txn kv.Txn) error {
	if u.seg != nil && !u.synced {
		return errors.New("cas: Record before Sync")
	}
	if u.s.fence != nil {
		if err := u.s.fence(); err != nil {
			return err
		}
	}
	if len(u.recs) > 0 {
		if err := u.s.space.check(); err != nil {
			return err
		}
	}
	floor := u.s.recordFloor(u)
	for h, rec := range u.recs {
		rec.created = max(rec.created, floor)
		if err := txn.Set(indexKey(h), rec.encode()); err != nil {
			return err
		}
	}
	if floor != 0 {
		if err := u.stampReused(txn, floor); err != nil {
			return err
		}
	}
	u.recorded = true
	return nil
}

// NewBytes returns how many bytes this Upload stored that the store did not
// already hold.
func (u *Upload) NewBytes() int64 {
	var n int64
	for _, r := range u.recs {
		n += r.size
	}
	return n
}

// Close releases the Upload's pins. If Record never ran (the upload failed
// or was abandoned), its segment is deleted.
func (u *Upload) Close() {
	if u.closed {
		return
	}
	u.closed = true
	if u.seg != nil && !u.synced {
		u.seg.close()
	}
	if u.seg != nil && !u.recorded {
		os.Remove(u.s.segPath(u.segID))
		if u.pushed {
			u.dropRemote()
		}
	}
	u.s.unpin(u.pinned)
	u.pinned = nil
	u.s.mu.Lock()
	delete(u.s.open, u.segID)
	if u.unfloored {
		u.s.unfloored--
	}
	u.s.mu.Unlock()
}

// syncDir fsyncs directory dir, making the files created in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
