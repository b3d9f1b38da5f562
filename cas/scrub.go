package cas

import (
	"errors"
	"fmt"
	"os"
)

// span is where a deleted chunk's bytes were in a segment.
type span struct {
	seg       uint64
	off, size int64
}

// scrub removes the bytes of deleted chunks from the segments that stay
// (a segment also holding live chunks, or one the cycle spared): the
// range is punched out of the file where the file system can (its blocks
// are freed) and overwritten with zeros where it cannot, then synced. So
// a swept chunk's content leaves the disk with its record, not when its
// whole segment does; that is what forgetting relies on. Readers of a
// chunk never reach a scrubbed range: its record is gone first.
func (c *Cycle) scrub(spans []span, st *SweepStats) error {
	bySeg := map[uint64][]span{}
	for _, sp := range spans {
		bySeg[sp.seg] = append(bySeg[sp.seg], sp)
	}
	for seg, sps := range bySeg {
		n, err := c.scrubSegment(c.s.segPath(seg), sps)
		if err != nil {
			return fmt.Errorf("scrub segment %x: %w", seg, err)
		}
		st.ScrubbedBytes += n
	}
	return nil
}

// scrubSegment punches or zeroes spans of the segment at path.
func (c *Cycle) scrubSegment(path string, spans []span) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // removed whole
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, sp := range spans {
		if err := punch(f, sp.off, sp.size); err != nil {
			return n, err
		}
		n += sp.size
	}
	return n, f.Sync()
}

// zeroes overwrites n bytes of f at off with zeros.
func zeroes(f *os.File, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		w := min(n, int64(len(buf)))
		if _, err := f.WriteAt(buf[:w], off); err != nil {
			return err
		}
		off, n = off+w, n-w
	}
	return nil
}
