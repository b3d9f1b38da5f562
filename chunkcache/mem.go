package chunkcache

import (
	"container/list"
	"sync"

	"github.com/agentnas/nas/chunk"
)

// With KeepSmall, small chunks live in memory, not on disk: a mount
// reading or writing thousands of small files would otherwise create,
// open, hash and touch a cache file for each of them, which costs more
// than fetching the bytes. A chunk of at most chunkMax bytes is kept in
// this process's memory (at most limit bytes in all, the least recently
// used going first, into the cache directory) and written to a file
// only when it leaves memory; larger chunks go to disk as before. Memory
// holds only verified bytes, like the directory, and is not shared with
// the host's other processes.
const (
	MemChunkMax = 64 << 10 // the mount's bound of a chunk kept in memory
	MemLimit    = 64 << 20 // the mount's bound of all of them
)

// KeepSmall keeps chunks of at most chunkMax bytes in memory, limit bytes
// in all, instead of in files. Call it before the cache is used.
func (c *Cache) KeepSmall(chunkMax int, limit int64) {
	c.mem = newMemTier(chunkMax, limit)
}

// memTier is the in-memory part of the cache: an LRU of small chunks.
type memTier struct {
	chunkMax int
	mu       sync.Mutex
	order    *list.List // of *memChunk, most recently used first
	byKey    map[chunk.Hash]*list.Element
	size     int64
	limit    int64
}

type memChunk struct {
	h    chunk.Hash
	data []byte
}

func newMemTier(chunkMax int, limit int64) *memTier {
	return &memTier{chunkMax: chunkMax, order: list.New(), byKey: map[chunk.Hash]*list.Element{}, limit: limit}
}

// put keeps a copy of data (verified by the caller) as chunk h and
// returns the chunks it pushed out of memory, least recently used first.
func (m *memTier) put(h chunk.Hash, data []byte) (out []*memChunk) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[h]; ok {
		m.order.MoveToFront(el)
		return nil
	}
	m.byKey[h] = m.order.PushFront(&memChunk{h: h, data: append([]byte(nil), data...)})
	m.size += int64(len(data))
	for m.size > m.limit {
		last := m.order.Back()
		c := last.Value.(*memChunk)
		m.order.Remove(last)
		delete(m.byKey, c.h)
		m.size -= int64(len(c.data))
		out = append(out, c)
	}
	return out
}

// has reports whether chunk h is in memory.
func (m *memTier) has(h chunk.Hash) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byKey[h]
	return ok
}

// readAt copies chunk h's bytes at off into p; ok is false when h is not
// in memory.
func (m *memTier) readAt(h chunk.Hash, p []byte, off int64) (n int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[h]
	if !ok {
		return 0, false
	}
	m.order.MoveToFront(el)
	data := el.Value.(*memChunk).data
	if off >= int64(len(data)) {
		return 0, true
	}
	return copy(p, data[off:]), true
}
