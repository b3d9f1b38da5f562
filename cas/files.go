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
	path    string
	f       *os.File
	refs    int  // readers holding the handle; guarded by fileCache.mu
	evicted bool // out of the cache: closed once refs is 0
}

func newFileCache(max int) *fileCache {
	return &fileCache{max: max, lru: list.New(), byKey: map[string]*list.Element{}}
}

// open returns a shared read-only handle and the release its reader calls
// when done. A handle evicted while readers hold it is closed when the
// last of them releases it, so an eviction never breaks a read in
// progress and the open files stay bounded by max plus those in use.
func (c *fileCache) open(path string) (*os.File, func(), error) {
	c.mu.Lock()
	if e, ok := c.byKey[path]; ok {
		c.lru.MoveToFront(e)
		cf := e.Value.(*cachedFile)
		cf.refs++
		c.mu.Unlock()
		c.hits.Add(1)
		return cf.f, c.releaser(cf), nil
	}
	c.mu.Unlock()
	c.misses.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[path]; ok {
		f.Close()
		c.lru.MoveToFront(e)
		cf := e.Value.(*cachedFile)
		cf.refs++
		return cf.f, c.releaser(cf), nil
	}
	cf := &cachedFile{path: path, f: f, refs: 1}
	c.byKey[path] = c.lru.PushFront(cf)
	for c.lru.Len() > c.max {
		c.evict(c.lru.Back())
	}
	return f, c.releaser(cf), nil
}

// releaser is the release of one hold on cf.
func (c *fileCache) releaser(cf *cachedFile) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if cf.refs--; cf.refs == 0 && cf.evicted {
				cf.f.Close()
			}
		})
	}
}

// evict drops e from the cache, closing its file unless a reader holds
// it. c.mu is held.
func (c *fileCache) evict(e *list.Element) {
	cf := e.Value.(*cachedFile)
	c.lru.Remove(e)
	delete(c.byKey, cf.path)
	cf.evicted = true
	if cf.refs == 0 {
		cf.f.Close()
	}
}

// forget drops a path (its segment was deleted).
func (c *fileCache) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[path]; ok {
		c.evict(e)
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
