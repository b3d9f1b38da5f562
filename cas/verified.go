package cas

import (
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
)

// How long, and for how many chunks, a verification spares the next read.
const (
	verifiedFor = 5 * time.Second
	verifiedMax = 16384
)

// verifiedSet remembers the segment chunks this process hashed moments
// ago: where they lay and the segment file's status-change time then. A
// whole-chunk read of one of them within verifiedFor, from a file whose
// change time has not moved (nothing wrote to it through the file system),
// that the page cache answers entirely (readCached: a read that does not
// wait for the disk) returns the bytes without hashing them again: they
// are the pages that were hashed. Anything else (a cold read, a partly
// cached one, a file written since, a chunk moved by collection, an older
// verification) is hashed as before. What this gives up: corruption on
// the disk itself, under pages that were evicted and read back by
// something other than a whole-chunk read (the kernel's read-ahead for a
// neighbour, a range read) within those seconds, is found at the next
// read after them instead. Hashing was about half of the gateway's CPU
// with 8 clients reading 64 MiB objects.
type verifiedSet struct {
	mu sync.Mutex
	m  map[chunk.Hash]verifiedAt
}

// verifiedAt is where a chunk was verified, from which version of its
// file, and when.
type verifiedAt struct {
	seg    uint64
	off    int64
	ctime  int64
	hashed time.Time
}

func newVerifiedSet() *verifiedSet { return &verifiedSet{m: map[chunk.Hash]verifiedAt{}} }

// fresh says whether h was verified within verifiedFor of now, at rec's
// place, in the file version whose change time is ctime.
func (v *verifiedSet) fresh(h chunk.Hash, rec record, ctime int64, now time.Time) bool {
	v.mu.Lock()
	e, ok := v.m[h]
	v.mu.Unlock()
	return ok && e.seg == rec.seg && e.off == rec.off && e.ctime == ctime && now.Sub(e.hashed) < verifiedFor
}

// add notes that h, at rec's place in the file version whose change time
// is ctime, was verified at now. When the set is full the stale entries
// go, and if none were stale, all go (the set is a saving, never a
// condition of correctness).
func (v *verifiedSet) add(h chunk.Hash, rec record, ctime int64, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= verifiedMax {
		for k, e := range v.m {
			if now.Sub(e.hashed) >= verifiedFor {
				delete(v.m, k)
			}
		}
		if len(v.m) >= verifiedMax {
			clear(v.m)
		}
	}
	v.m[h] = verifiedAt{seg: rec.seg, off: rec.off, ctime: ctime, hashed: now}
}
