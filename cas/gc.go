package cas

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// Cycle is one garbage-collection cycle over the chunk store. Between
// BeginCycle and End, every chunk released by an Upload is treated as live.
type Cycle struct {
	s     *Store
	start int64 // unix nanoseconds; records written at or after it are spared
	o     CycleOptions
	spare map[uint64]bool // o.Spare
}

// CycleOptions tunes a cycle that runs while other gateways share the
// index (they set Store.Floor at Start). The zero value is a cycle of this
// store alone.
type CycleOptions struct {
	// Start is the cycle's start (unix nanoseconds; 0: now): records
	// created at or after it are spared.
	Start int64
	// Spare lists the segments other gateways had open (Store.Floor).
	Spare []uint64
	// Skew spares segments modified after Start-Skew as well: other
	// writers' clocks, and an S3 server's, are not this one's.
	Skew time.Duration
	// Check, if set, runs in every transaction that deletes and before
	// segments are removed; its error stops the sweep (the collection
	// may no longer go on, for one because its lock lapsed).
	Check func(kv.Reader) error
}

// SweepStats reports what a sweep reclaimed.
type SweepStats struct {
	Chunks        int   // index records deleted
	Bytes         int64 // bytes those chunks held
	Segments      int   // segment files deleted
	SegmentBytes  int64 // bytes of deleted segment files
	LiveChunks    int
	LiveBytes     int64
	SkippedInUse  int // unreferenced but pinned by an in-flight upload
	SkippedRecent int // written after the cycle began
	// ScrubbedBytes counts the bytes of deleted chunks punched out of (or
	// zeroed in) segments that stay.
	ScrubbedBytes int64
}

// BeginCycle starts a collection cycle. Call it before marking, so that any
// chunk an in-flight upload references survives the sweep.
func (s *Store) BeginCycle() *Cycle { return s.BeginCycleWith(CycleOptions{}) }

// BeginCycleWith is BeginCycle with options.
func (s *Store) BeginCycleWith(o CycleOptions) *Cycle {
	c := &Cycle{s: s, start: o.Start, o: o, spare: map[uint64]bool{}}
	if c.start == 0 {
		c.start = now() // before the snapshot below: a segment opened after it is written after the start
	}
	s.mu.Lock()
	s.touched = map[chunk.Hash]struct{}{}
	// A segment open now may be recorded and closed after the sweep's
	// last scan of the index, before it removes segments: it stays for
	// the whole cycle, as other gateways' open segments do (o.Spare).
	for id := range s.open {
		c.spare[id] = true
	}
	s.mu.Unlock()
	for _, id := range o.Spare {
		c.spare[id] = true
	}
	return c
}

// check runs the cycle's Check, if any.
func (c *Cycle) check(r kv.Reader) error {
	if c.o.Check == nil {
		return nil
	}
	return c.o.Check(r)
}

// keepSegment says whether segment id, last modified at mod, stays though
// no record the sweep read references it: it is open here, was open here
// or on another gateway at the cycle's start, or was written since (minus
// the skew).
func (c *Cycle) keepSegment(id uint64, mod time.Time) bool {
	if c.spare[id] || !mod.Before(time.Unix(0, c.start).Add(-c.o.Skew)) {
		return true
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	_, open := c.s.open[id]
	return open
}

// checkNow runs the cycle's Check in a read of its own.
func (c *Cycle) checkNow(ctx context.Context) error {
	if c.o.Check == nil {
		return nil
	}
	return c.s.db.View(ctx, c.o.Check)
}

// End finishes the cycle.
func (c *Cycle) End() {
	c.s.mu.Lock()
	c.s.touched = nil
	c.s.mu.Unlock()
}

// sweepBatch bounds the keys deleted per kv transaction.
const sweepBatch = 512

// Sweep deletes every chunk for which live returns false, unless it is
// pinned, was released during the cycle, or was written after the cycle
// began; then it deletes segment files that no record references.
func (c *Cycle) Sweep(ctx context.Context, live func(chunk.Hash) bool) (SweepStats, error) {
	var st SweepStats
	liveSegs := map[uint64]bool{}
	cands, err := c.candidates(ctx, live, &st, liveSegs)
	if err != nil {
		return st, fmt.Errorf("sweep scan: %w", err)
	}
	var spans []span
	for len(cands) > 0 {
		n := min(len(cands), sweepBatch)
		batch := cands[:n]
		cands = cands[n:]
		gone, err := c.deleteRecords(ctx, c.unpinned(batch, &st))
		if err != nil {
			return st, fmt.Errorf("sweep delete: %w", err)
		}
		st.Chunks += len(gone)
		for _, r := range gone {
			st.Bytes += r.size
			if r.kind == kindSegment {
				spans = append(spans, span{seg: r.seg, off: r.off, size: r.size})
			}
		}
	}
	// A re-scan finds segments still referenced (records the delete pass
	// spared because they were rewritten or pinned).
	if err := c.markSegments(ctx, liveSegs); err != nil {
		return st, fmt.Errorf("sweep rescan: %w", err)
	}
	if err := c.checkNow(ctx); err != nil {
		return st, fmt.Errorf("sweep: %w", err)
	}
	if err := c.removeSegments(liveSegs, &st); err != nil {
		return st, err
	}
	if c.s.remote != nil {
		// Remote segments are deleted whole; a dead chunk's bytes in a
		// segment that stays are not scrubbed (objects are not rewritten).
		return st, c.removeRemoteSegments(ctx, liveSegs, &st)
	}
	return st, c.scrub(spans, &st)
}

// candidates scans the index, in one read transaction, for the chunks that
// are neither live nor written since the cycle began. It counts the others
// in st and marks in liveSegs the segments they are in.
func (c *Cycle) candidates(ctx context.Context, live func(chunk.Hash) bool, st *SweepStats, liveSegs map[uint64]bool) ([]chunk.Hash, error) {
	var cands []chunk.Hash
	err := c.s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyPrefix)), func(k, v []byte) error {
			var h chunk.Hash
			copy(h[:], k[len(keyPrefix):])
			rec, err := decodeRecord(v)
			if err != nil {
				return fmt.Errorf("chunk %s: %w", h, err)
			}
			if live(h) {
				st.LiveChunks++
				st.LiveBytes += rec.size
				if rec.kind == kindSegment {
					liveSegs[rec.seg] = true
				}
				return nil
			}
			if rec.created >= c.start {
				st.SkippedRecent++
				if rec.kind == kindSegment {
					liveSegs[rec.seg] = true
				}
				return nil
			}
			cands = append(cands, h)
			return nil
		})
	})
	return cands, err
}

// unpinned returns the candidates of batch that no upload pins or released
// during the cycle, counting the others in st.
func (c *Cycle) unpinned(batch []chunk.Hash, st *SweepStats) []chunk.Hash {
	var del []chunk.Hash
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, h := range batch {
		_, touched := c.s.touched[h]
		if c.s.pins[h] > 0 || touched {
			st.SkippedInUse++
			continue
		}
		del = append(del, h)
	}
	return del
}

// deleteRecords deletes the index records of del, in one transaction,
// sparing those rewritten since the cycle began, and returns the records
// it deleted.
func (c *Cycle) deleteRecords(ctx context.Context, del []chunk.Hash) ([]record, error) {
	var gone []record
	err := c.s.db.Update(ctx, func(txn kv.Txn) error {
		gone = gone[:0] // the transaction may be retried
		if err := c.check(txn); err != nil {
			return err
		}
		for _, h := range del {
			v, err := txn.Get(indexKey(h))
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			rec, err := decodeRecord(v)
			if err != nil {
				return err
			}
			if rec.created >= c.start {
				continue // rewritten by an upload since the scan
			}
			if err := txn.Delete(indexKey(h)); err != nil {
				return err
			}
			rec.data = nil
			gone = append(gone, rec)
		}
		return nil
	})
	return gone, err
}

// markSegments marks in liveSegs every segment an index record references.
func (c *Cycle) markSegments(ctx context.Context, liveSegs map[uint64]bool) error {
	return c.s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyPrefix)), func(k, v []byte) error {
			rec, err := decodeRecord(v)
			if err == nil && rec.kind == kindSegment {
				liveSegs[rec.seg] = true
			}
			return nil
		})
	})
}

// removeSegments deletes the segment files that are not in liveSegs and
// not kept (keepSegment), counting them in st.
func (c *Cycle) removeSegments(liveSegs map[uint64]bool, st *SweepStats) error {
	return c.s.walkSegments(func(id uint64, path string, info fs.FileInfo) error {
		if liveSegs[id] || c.keepSegment(id, info.ModTime()) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		c.s.files.forget(path)
		st.Segments++
		st.SegmentBytes += info.Size()
		return nil
	})
}

// walkSegments calls fn for every segment file on disk.
func (s *Store) walkSegments(fn func(id uint64, path string, info fs.FileInfo) error) error {
	return filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".seg") {
			return nil
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(d.Name(), ".seg"), 16, 64)
		if err != nil {
			return nil // not ours
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		return fn(id, p, info)
	})
}
