package secret

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
)

// chunkSize is how many new bytes the scanner collects before it scans:
// large enough that the window kept between chunks is a small overhead,
// small enough to stay in cache.
const chunkSize = 32 << 10

// keep is what the scanner carries from one chunk to the next: the
// windows of trigger bytes it has not yet been able to look at.
const keep = WindowLeft + WindowRight

// Edge is how many bytes on each side of a joint between two pieces of
// a stream a scan needs to find every credential that crosses it: a
// trigger within WindowRight before the joint needs WindowLeft more
// before it, one within WindowLeft after it needs WindowRight more after
// it. A caller that keeps only the first and last Edge bytes of each
// piece can scan the joints later, with Gap between a piece's two ends.
const Edge = WindowLeft + WindowRight

// Scanner looks for credentials in what is written to it. The zero value
// is not usable; call New.
//
// In memory: buf is a fixed array of chunkSize+keep bytes (about 33 KiB)
// allocated once by New, plus one bit per rule.
type Scanner struct {
	buf   []byte // the stream's last bytes; len grows to cap, then slides
	from  int    // trigger bytes before buf[from] have been looked at
	found uint64 // bit i set when rules[i] matched
}

var _ io.Writer = (*Scanner)(nil)

// New returns a Scanner for one stream.
func New() *Scanner {
	return &Scanner{buf: make([]byte, 0, chunkSize+keep)}
}

// Write scans p. It never fails: it returns len(p) and a nil error, so a
// Scanner can sit in an io.MultiWriter beside the object's real
// destination. Once a rule has matched, Write only counts.
func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && s.found == 0 {
		c := copy(s.buf[len(s.buf):cap(s.buf)], p)
		s.buf = s.buf[:len(s.buf)+c]
		p = p[c:]
		if len(s.buf) == cap(s.buf) {
			s.scanChunk()
		}
	}
	return n, nil
}

// scanChunk looks at every trigger byte whose whole window is in buf and
// slides the last keep bytes to the front.
func (s *Scanner) scanChunk() {
	end := len(s.buf) - WindowRight
	s.found |= scan(s.buf, s.from, end)
	copy(s.buf, s.buf[end-WindowLeft:])
	s.buf = s.buf[:keep]
	s.from = WindowLeft
}

// Gap tells s that bytes it will not see come between what was written
// and what will be written next (the middle of a piece known only by
// its Edge bytes at each end). It looks at the trigger bytes before the
// gap whose whole window it has, and takes the first WindowLeft bytes
// written after the gap as context only, so no window is cut short by
// the gap: what s finds, it would have found in the whole stream.
// Triggers whose windows reach into the gap are not looked at.
func (s *Scanner) Gap() {
	if s.found == 0 && len(s.buf)-WindowRight > s.from {
		s.found |= scan(s.buf, s.from, len(s.buf)-WindowRight)
	}
	s.buf = s.buf[:0]
	s.from = WindowLeft
}

// Found reports whether any rule matched what has been written, as if
// the stream ended here. It does not change the Scanner.
func (s *Scanner) Found() bool {
	return s.final() != 0
}

// Rules returns the names of the rules that matched, sorted and unique,
// or nil. Once a chunk matched the scanner stops, so rules that would
// only have matched later in the stream are not listed; the answer does
// not depend on how the stream was cut into writes.
func (s *Scanner) Rules() []string {
	bits := s.final()
	var names []string
	for i, r := range rules {
		if bits&(1<<i) != 0 {
			names = append(names, r.name)
		}
	}
	slices.Sort(names)
	return names
}

// final is found, with the trigger bytes near the end of the stream
// looked at through windows cut short by its end.
func (s *Scanner) final() uint64 {
	if s.found != 0 {
		return s.found
	}
	return scan(s.buf, s.from, len(s.buf))
}

// scan looks at the trigger bytes in buf[from:end] and returns the rules
// that matched as bits. A rule sees at most WindowLeft bytes before j and
// WindowRight after; windows are cut short only at the ends of the
// stream, since after the first chunk from is WindowLeft.
//
// Only trigger bytes inside a run of ASCII bytes that holds an aligned
// 8-byte word of them (asciiRuns) are looked at: every match is at least
// minMatch ASCII bytes long and contains its trigger byte, and any
// minMatch consecutive bytes hold an aligned word. In high-entropy data
// (archives, weights, media) such a word comes once in 2 KiB, so the
// IndexByte passes run over a few short runs instead of the whole
// buffer, where they stopped at a trigger byte every 43 bytes.
func scan(buf []byte, from, end int) uint64 {
	var found uint64
	asciiRuns(buf, func(a, b int) {
		found |= scanRange(buf, max(a, from), min(b, end), found)
	})
	return found
}

// minMatch is the fewest consecutive ASCII bytes any rule's match holds
// around its trigger byte: "xoxb-" and ten more. TestMinMatch derives
// each rule's bound from its expression and keywords.
const minMatch = 15

// hiBits selects the top bit of each byte of a little-endian word.
const hiBits = 0x8080808080808080

// asciiRuns calls f(a, b) for each maximal run buf[a:b] of bytes below
// 0x80 that holds an 8-byte word at an offset that is a multiple of 8,
// in order.
func asciiRuns(buf []byte, f func(a, b int)) {
	for i := 0; i+8 <= len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])&hiBits != 0 {
			continue
		}
		a := i
		for a > 0 && buf[a-1] < 0x80 {
			a--
		}
		b := asciiEnd(buf, i+8)
		f(a, b)
		// buf[b] is not ASCII: the next run's word starts after it.
		i = (b+8)&^7 - 8
	}
}

// asciiEnd returns the end of the run of ASCII bytes in buf that starts
// at b: 32 bytes at a time, then 8, then one, so text costs a fraction
// of a cycle a byte here.
func asciiEnd(buf []byte, b int) int {
	for ; b+32 <= len(buf); b += 32 {
		w := buf[b : b+32 : b+32]
		le := binary.LittleEndian
		if (le.Uint64(w)|le.Uint64(w[8:])|le.Uint64(w[16:])|le.Uint64(w[24:]))&hiBits != 0 {
			break
		}
	}
	for ; b+8 <= len(buf) && binary.LittleEndian.Uint64(buf[b:])&hiBits == 0; b += 8 {
	}
	for ; b < len(buf) && buf[b] < 0x80; b++ {
	}
	return b
}

// scanRange looks at the trigger bytes in buf[from:end], with windows
// over all of buf, and returns the bits of the rules that matched.
func scanRange(buf []byte, from, end int, found uint64) uint64 {
	for _, b := range triggerBytes {
		nb := &neighbours[b]
		for j := from; j < end; j++ {
			i := bytes.IndexByte(buf[j:end], b)
			if i < 0 {
				break
			}
			j += i
			if k := j + nb.rel; k < 0 || k >= len(buf) || !nb.ok[buf[k]] {
				continue // no literal of b can be here
			}
			found |= look(buf, j, triggers[b], found)
		}
	}
	return found
}

// look checks the triggers of the byte at buf[j] and returns the bits of
// the rules that matched, skipping those already in found.
func look(buf []byte, j int, ts []trigger, found uint64) uint64 {
	var name []byte
	var into [24]byte
	for _, t := range ts {
		i := j - t.off
		if found&t.rule.bit != 0 || i < 0 || len(t.lit) > 1 && !bytes.HasPrefix(buf[i:], []byte(t.lit)) {
			continue
		}
		if t.rule.keywords != nil && name == nil {
			name = keyName(buf, max(j-WindowLeft, 0), j, &into)
		}
		if t.rule.matches(buf, i, name) {
			found |= t.rule.bit
		}
	}
	return found
}
