package cas

import (
	"container/list"
	"os"
	"sync"
	"sync/atomic"
)

// fileCache keeps recently read segment files open; reads use ReadAt, which
// is safe for concurrent use, so one handle serves every reader.
type fileCache struct {
	max int

	mu    sync.Mutex // guards lru and byKey
	lru   *list.List // of *cachedFile, most recent first
	byKey map[string]*list.Element

	hits, misses atomic.Int64 // opens answered by a held handle, and by the file system
}

type cachedFile struct {
	path string
	f    *os.File
}

func newFileCache(max int) *fileCache {
	return &fileCache{max: max, lru: list.New(), byKey: map[string]*list.Element{}}
}

// open returns a shared read-only handle. Handles evicted while a reader
// still uses them are closed only by the garbage collector's finalizer on
// os.File, so an eviction never breaks a read in progress.
func (c *fileCache) open(path string) (*os.File, error) {
	c.mu.Lock()
	if e, ok := c.byKey[path]; ok {
		c.lru.MoveToFront(e)
		f := e.Value.(*cachedFile).f
		c.mu.Unlock()
		c.hits.Add(1)
		return f, nil
	}
	c.mu.Unlock()
	c.misses.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[path]; ok {
		f.Close()
		c.lru.MoveToFront(e)
		return e.Value.(*cachedFile).f, nil
	}
	c.byKey[path] = c.lru.PushFront(&cachedFile{path: path, f: f})
	for c.lru.Len() > c.max {
		e := c.lru.Back()
		c.lru.Remove(e)
		delete(c.byKey, e.Value.(*cachedFile).path)
		// Not closed here: a concurrent reader may hold it. The os.File
		// finalizer closes it once unreachable.
	}
	return f, nil
}

// forget drops a path (its segment was deleted).
func (c *fileCache) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[path]; ok {
		c.lru.Remove(e)
		delete(c.byKey, path)
	}
}

func (c *fileCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedFile).f.Close()
	}
	c.lru.Init()
	c.byKey = map[string]*list.Element{}
}

// FileCacheStats counts the opens of segment files for reads: answered by
// a handle the store keeps open (hits), or by the file system (misses).
type FileCacheStats struct {
	Hits, Misses int64
}

// FileCacheStats returns the segment-file cache's counters.
func (s *Store) FileCacheStats() FileCacheStats {
	return FileCacheStats{Hits: s.files.hits.Load(), Misses: s.files.misses.Load()}
}
