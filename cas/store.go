package cas

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// InlineMax is the largest chunk kept inside its kv index record.
const InlineMax = 64 << 10

// keyPrefix is the kv prefix of chunk index records.
const keyPrefix = keyspace.Chunk

// Store is the chunk store: an index in kv plus segment files in a directory.
type Store struct {
	db    kv.DB
	dir   string // segment root: dir/<hh>/<id>.seg
	files *fileCache
	// verified spares a hot chunk the hash of every read (verifiedSet).
	verified *verifiedSet
	log      *slog.Logger
	onSync   func(path string)
	obs      Observer

	remote Remote // where sealed segments live (nil: dir)
	direct bool   // Options.DirectWrites
	space  *space // the free-space floor (Options.MinFree)

	mu      sync.Mutex              // guards the fields below
	pins    map[chunk.Hash]int      // chunks referenced by open Uploads
	touched map[chunk.Hash]struct{} // pins released during a GC cycle; nil outside one
	open    map[uint64]struct{}     // segments open Uploads write
	// floor stamps what Records write while another gateway collects
	// (Floor; 0: none); unfloored counts the open Uploads that recorded
	// without it.
	floor     int64
	unfloored int
	fence     func() error // SetFence; nil: none
}

// Options tunes a Store.
type Options struct {
	Log *slog.Logger
	// OnSync, if set, is called after every successful fsync of a segment
	// file or a segment directory, with its path. Tests use it to check the
	// durability order; it must be cheap and must not call back into the
	// Store.
	OnSync func(path string)
	// Observer, if set, is told of every read and write at the store's
	// public entry points (the gateway's metrics).
	Observer Observer
	// Remote, if set, keeps the segments (an S3 bucket gateways share);
	// the directory then only stages the segments uploads write.
	Remote Remote
	// DirectWrites writes a segment's bytes past its first SegmentBlock
	// with O_DIRECT (segFile): less CPU per byte and no dirty-page
	// throttling under concurrent large uploads, but the bytes are not in
	// the page cache, so a read soon after the write goes to the disk.
	// Off, every byte goes through the page cache.
	DirectWrites bool
	// MinFree is the free space, in bytes, uploads leave on the file
	// system of the store's directory and of each of FreeDirs: a write
	// that finds less fails with ErrStorageFull. 0 is the default, the
	// smaller of 1 GiB and 5% of each file system; negative turns the
	// check off.
	MinFree int64
	// FreeDirs are more directories whose file systems MinFree guards
	// (the metadata store's).
	FreeDirs []string
}

// Observer is told how long the store's reads and writes took and how
// many bytes they moved. It must be cheap and safe for concurrent use.
type Observer interface {
	// ChunkRead follows Read, ReadAll and ReadRefs: n bytes asked for.
	ChunkRead(n int64, d time.Duration, err error)
	// ChunkWritten follows Upload.Put, Ingest and IngestTee: n bytes taken
	// in (before deduplication).
	ChunkWritten(n int64, d time.Duration, err error)
}

type nopObserver struct{}

func (nopObserver) ChunkRead(int64, time.Duration, error)    {}
func (nopObserver) ChunkWritten(int64, time.Duration, error) {}

// Open opens the chunk store whose segments live under dir and whose index
// lives in db.
func Open(dir string, db kv.DB, o Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open chunk store: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.OnSync == nil {
		o.OnSync = func(string) {}
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Store{db: db, dir: dir, files: newFileCache(128), verified: newVerifiedSet(), log: o.Log, onSync: o.OnSync, obs: o.Observer,
		remote: o.Remote, direct: o.DirectWrites, space: newSpace(append([]string{dir}, o.FreeDirs...), o.MinFree), pins: map[chunk.Hash]int{}, open: map[uint64]struct{}{}}, nil
}

// Close releases open segment files.
func (s *Store) Close() error {
	s.files.closeAll()
	return nil
}

// record is an index record. Encoding: kind byte, uvarint created (unix nano-
// seconds), then for kindInline the bytes, for kindSegment uvarint segment,
// uvarint offset, uvarint length. About 12 bytes plus the 34-byte key for a
// segment chunk.
type record struct {
	kind    byte
	created int64
	data    []byte // kindInline
	seg     uint64 // kindSegment
	off     int64
	size    int64
}

const (
	kindInline  = 1
	kindSegment = 2
)

func (r record) encode() []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(r.data))
	b = append(b, r.kind)
	b = binary.AppendUvarint(b, uint64(r.created))
	if r.kind == kindInline {
		return append(b, r.data...)
	}
	b = binary.AppendUvarint(b, r.seg)
	b = binary.AppendUvarint(b, uint64(r.off))
	return binary.AppendUvarint(b, uint64(r.size))
}

func decodeRecord(b []byte) (record, error) {
	var r record
	if len(b) < 2 {
		return r, ErrCorrupt
	}
	r.kind = b[0]
	c, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return r, ErrCorrupt
	}
	r.created = int64(c)
	rest := b[1+n:]
	switch r.kind {
	case kindInline:
		r.data = rest
		r.size = int64(len(rest))
		return r, nil
	case kindSegment:
		var vals [3]uint64
		for i := range vals {
			v, n := binary.Uvarint(rest)
			if n <= 0 {
				return r, ErrCorrupt
			}
			vals[i], rest = v, rest[n:]
		}
		r.seg, r.off, r.size = vals[0], int64(vals[1]), int64(vals[2])
		return r, nil
	}
	return r, ErrCorrupt
}

func indexKey(h chunk.Hash) []byte {
	k := make([]byte, 0, len(keyPrefix)+chunk.HashSize)
	return append(append(k, keyPrefix...), h[:]...)
}

func (s *Store) lookup(ctx context.Context, h chunk.Hash) (record, error) {
	var rec record
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(indexKey(h))
		if err != nil {
			return err
		}
		rec, err = decodeRecord(v)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return rec, fmt.Errorf("chunk %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return rec, fmt.Errorf("chunk %s: %w", h, err)
	}
	return rec, nil
}

// Has reports whether chunk h is in the store.
func (s *Store) Has(ctx context.Context, h chunk.Hash) (bool, error) {
	_, err := s.lookup(ctx, h)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Read writes bytes [off, off+n) of chunk h to w. When the whole chunk is
// read its hash is verified, and a mismatch returns ErrCorrupt after the
// bytes were written (the caller must abort its response).
func (s *Store) Read(ctx context.Context, w io.Writer, h chunk.Hash, off, n int64) error {
	start := time.Now()
	err := s.read(ctx, w, h, off, n)
	s.obs.ChunkRead(n, time.Since(start), err)
	return err
}

func (s *Store) read(ctx context.Context, w io.Writer, h chunk.Hash, off, n int64) error {
	rec, f, release, err := s.locate(ctx, h)
	defer release()
	if err != nil {
		return err
	}
	if off < 0 || n < 0 || off+n > rec.size {
		return fmt.Errorf("read chunk %s [%d,+%d) of %d: %w", h, off, n, rec.size, ErrCorrupt)
	}
	whole := off == 0 && n == rec.size
	if rec.kind == kindInline {
		if whole && chunk.Sum(rec.data) != h {
			return fmt.Errorf("chunk %s: %w", h, ErrCorrupt)
		}
		_, err := w.Write(rec.data[off : off+n])
		return err
	}
	sr := io.NewSectionReader(f, rec.off+off, n)
	buf := copyPool.Get().(*[]byte)
	defer copyPool.Put(buf)
	if !whole {
		_, err = io.CopyBuffer(onlyWriter{w}, sr, *buf)
		return err
	}
	hs := chunk.NewHasher()
	if _, err := io.CopyBuffer(io.MultiWriter(w, hs), sr, *buf); err != nil {
		return err
	}
	if hs.Sum() != h {
		return fmt.Errorf("chunk %s in segment %016x: %w", h, rec.seg, ErrCorrupt)
	}
	return nil
}

// ReadAll returns the bytes of chunk h, verified.
func (s *Store) ReadAll(ctx context.Context, h chunk.Hash) ([]byte, error) {
	rec, err := s.lookup(ctx, h)
	if err != nil {
		return nil, err
	}
	buf := &sliceWriter{b: make([]byte, 0, rec.size)}
	if err := s.Read(ctx, buf, h, 0, rec.size); err != nil {
		return nil, err
	}
	return buf.b, nil
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (s *Store) segPath(id uint64) string {
	name := fmt.Sprintf("%016x", id)
	return filepath.Join(s.dir, name[:2], name+".seg")
}

func newSegmentID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand never fails on Linux
		}
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// pin marks h as referenced by an open Upload.
func (s *Store) pin(h chunk.Hash) {
	s.mu.Lock()
	s.pins[h]++
	s.mu.Unlock()
}

// unpin releases pins taken by an Upload.
func (s *Store) unpin(hs []chunk.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range hs {
		if s.pins[h]--; s.pins[h] <= 0 {
			delete(s.pins, h)
		}
		if s.touched != nil {
			s.touched[h] = struct{}{}
		}
	}
}

func now() int64 { return time.Now().UnixNano() }

// SegmentOf tells, for a kv write of a chunk index record, which segment
// file holds the chunk; ok is false for other keys and for inline chunks.
// Tests of the durability order use it.
func (s *Store) SegmentOf(key, value []byte) (path string, ok bool) {
	if len(key) != len(keyPrefix)+chunk.HashSize || string(key[:len(keyPrefix)]) != keyPrefix {
		return "", false
	}
	rec, err := decodeRecord(value)
	if err != nil || rec.kind != kindSegment {
		return "", false
	}
	return s.segPath(rec.seg), true
}

// copyPool holds the buffers reads copy through, so streaming a large
// object makes no garbage.
var copyPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// onlyWriter hides a ReaderFrom so io.CopyBuffer uses the pooled buffer.
type onlyWriter struct{ io.Writer }
