// Package chunkcache is a host-wide cache of chunk contents keyed by their
// BLAKE3 hash, shared by every mount and fork on the host: a second fork
// reading the same data reads it from local disk.
//
// It is filled only with verified data (Put hashes what it is given and
// refuses a mismatch), so a cache file's name is a promise about its
// bytes; and since a file can still change on disk afterwards, a process
// hashes each cached chunk again the first time it opens it, removing a
// copy that no longer matches (the reader then fetches it anew). It is a cache and nothing more: it answers no question for
// anyone but the local process, and a reader still asks the gateway to
// authorize and charge every read (see package fuse).
//
// Layout: DIR/ab/abcdef… (the hex hash, fanned out by its first byte),
// written to a temporary file and renamed into place, so a reader never
// sees a partial chunk. Files are 0600 in 0700 directories. When the
// total exceeds the limit, the least recently used files (by modification
// time, refreshed on use at most once a minute) are removed. Small chunks
// are kept in the process's memory instead (see MemChunkMax).
package chunkcache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentnas/nas/chunk"
)

// tmpPrefix starts the name of a chunk being written.
const tmpPrefix = ".tmp-"

// ErrMismatch is returned by Put when the data does not hash to the name.
var ErrMismatch = errors.New("chunkcache: data does not match its hash")

// Cache is a directory of chunks.
type Cache struct {
	root  string
	limit int64
	log   *slog.Logger
	size  atomic.Int64 // bytes in the cache, approximately (other processes add too)

	// sweeping guards against two sweeps at once in this process.
	sweeping atomic.Bool
	// mu guards touched and verified.
	mu       sync.Mutex
	touched  map[chunk.Hash]time.Time // last time a use refreshed a file's mtime
	verified map[chunk.Hash]struct{}  // files this process hashed since it opened them

	mem *memTier // the small chunks
}

// maxVerified bounds the verified set; past it the set starts again
// (chunks are then hashed once more on their next open).
const maxVerified = 1 << 16

// Open opens (creating) the cache in root, keeping it under limit bytes
// (0: no limit).
func Open(root string, limit int64, log *slog.Logger) (*Cache, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	c := &Cache{root: root, limit: limit, log: log, touched: map[chunk.Hash]time.Time{}, verified: map[chunk.Hash]struct{}{}}
	var total int64
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	c.size.Store(total)
	return c, nil
}

func (c *Cache) path(h chunk.Hash) string {
	s := h.String()
	return filepath.Join(c.root, s[:2], s)
}

// Open returns the cached chunk h, or an error satisfying
// errors.Is(err, fs.ErrNotExist) when it is not cached or its cached copy
// no longer hashes to h (that copy is removed).
func (c *Cache) Open(h chunk.Hash) (*os.File, error) {
	f, err := os.Open(c.path(h))
	if err != nil {
		return nil, err
	}
	if err := c.verify(h, f); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	c.touch(h)
	return f, nil
}

// verify hashes f, the cached copy of h, unless this process already did.
func (c *Cache) verify(h chunk.Hash, f *os.File) error {
	c.mu.Lock()
	_, ok := c.verified[h]
	c.mu.Unlock()
	if ok {
		return nil
	}
	hs := chunk.NewHasher()
	n, err := io.Copy(hs, io.LimitReader(f, chunk.MaxSize+1))
	if err != nil {
		return fmt.Errorf("chunk cache: read %s: %w", h, err)
	}
	if hs.Sum() != h {
		if err := os.Remove(f.Name()); err == nil {
			c.size.Add(-n)
		}
		c.log.Warn("chunk cache: a cached chunk no longer matches its hash; removed", "chunk", h.String(), "bytes", n)
		return fmt.Errorf("chunk %s: cached copy is corrupt and was removed: %w", h, fs.ErrNotExist)
	}
	c.mu.Lock()
	if len(c.verified) >= maxVerified {
		clear(c.verified)
	}
	c.verified[h] = struct{}{}
	c.mu.Unlock()
	return nil
}

// ReadAt reads len(p) bytes of chunk h at off.
func (c *Cache) ReadAt(h chunk.Hash, p []byte, off int64) (int, error) {
	if c.mem != nil {
		if n, ok := c.mem.readAt(h, p, off); ok {
			if n < len(p) {
				return n, io.EOF
			}
			return n, nil
		}
	}
	f, err := c.Open(h)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(p, off)
}

// Has reports whether chunk h is cached.
func (c *Cache) Has(h chunk.Hash) bool {
	if c.mem != nil && c.mem.has(h) {
		return true
	}
	_, err := os.Stat(c.path(h))
	return err == nil
}

// touch refreshes h's modification time (its place in the eviction
// order), at most once a minute per chunk.
func (c *Cache) touch(h chunk.Hash) {
	now := time.Now()
	c.mu.Lock()
	last, ok := c.touched[h]
	if ok && now.Sub(last) < time.Minute {
		c.mu.Unlock()
		return
	}
	if len(c.touched) > 1<<16 {
		clear(c.touched)
	}
	c.touched[h] = now
	c.mu.Unlock()
	os.Chtimes(c.path(h), now, now)
}

// Put stores data as chunk h after checking that it hashes to h.
func (c *Cache) Put(h chunk.Hash, data []byte) error {
	if chunk.Sum(data) != h {
		return fmt.Errorf("chunk %s: %w", h, ErrMismatch)
	}
	if c.mem != nil && len(data) <= c.mem.chunkMax {
		// What leaves memory goes to disk: a mount that wrote or read
		// more small files than memory holds reads them back from
		// files, not from the gateway. A chunk that cannot be written
		// (a full disk) is only dropped, as a cache may: h itself is kept.
		for _, old := range c.mem.put(h, data) {
			_ = c.putFile(old.h, old.data)
		}
		return nil
	}
	return c.putFile(h, data)
}

// putFile stores verified data as chunk h's file.
func (c *Cache) putFile(h chunk.Hash, data []byte) error {
	p := c.path(h)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("chunk cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("chunk cache: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("chunk cache: %w", err)
	}
	if c.limit > 0 && c.size.Add(int64(len(data))) > c.limit {
		go c.sweep()
	}
	return nil
}

// sweep removes the least recently used chunks until the cache is at
// 90% of its limit. Puts during a sweep find it busy and start none, so
// their bytes stay counted and it sweeps again for them.
func (c *Cache) sweep() {
	for c.sweeping.CompareAndSwap(false, true) {
		before := c.size.Load()
		total := c.sweepOnce()
		// total is the disk, less what Puts added during the walk unseen;
		// keeping every byte Put since before counts some twice, which
		// only brings the next sweep sooner.
		c.size.Add(total - before)
		c.sweeping.Store(false)
		if now := c.size.Load(); now <= c.limit || now == total {
			return
		}
	}
}

// sweepOnce removes the least recently used chunks until the cache is at
// 90% of its limit and returns the bytes left.
func (c *Cache) sweepOnce() int64 {
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			total += fi.Size()
			// A Put's temporary file is not for the sweep to remove while
			// the Put may still rename it; one left by a crash ages out.
			if strings.HasPrefix(d.Name(), tmpPrefix) && time.Since(fi.ModTime()) < time.Hour {
				return nil
			}
			files = append(files, file{p, fi.Size(), fi.ModTime()})
		}
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	target := c.limit * 9 / 10
	removed := 0
	for _, f := range files {
		if total <= target {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
			removed++
		}
	}
	c.log.Debug("chunk cache swept", "removed", removed, "bytes", total)
	return total
}
