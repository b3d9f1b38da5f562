package outline

import (
	"bytes"
	"sort"
)

// Lines indexes the lines of a file: lines are separated by "\n", a final
// "\n" ends the last line without starting another, and an empty file has
// no lines. Line numbers are 1-based. Cost: one int per line.
type Lines struct {
	data   []byte
	starts []int // byte offset of each line's first byte
}

// NewLines indexes data, which it keeps (and does not modify).
func NewLines(data []byte) *Lines {
	l := &Lines{data: data}
	if len(data) == 0 {
		return l
	}
	l.starts = make([]int, 1, bytes.Count(data, []byte{'\n'})+1)
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 || i+j+1 == len(data) {
			return l
		}
		i += j + 1
		l.starts = append(l.starts, i)
	}
}

// Count returns the number of lines.
func (l *Lines) Count() int { return len(l.starts) }

// Span returns the byte range [off, end) of lines start..end (inclusive),
// with the "\n" ending the last one; ok is false when the lines are not
// all in the file.
func (l *Lines) Span(start, end int) (off, stop int, ok bool) {
	if start < 1 || end < start || end > len(l.starts) {
		return 0, 0, false
	}
	off = l.starts[start-1]
	stop = len(l.data)
	if end < len(l.starts) {
		stop = l.starts[end]
	}
	return off, stop, true
}

// Slice returns the bytes of lines start..end (see Span).
func (l *Lines) Slice(start, end int) ([]byte, bool) {
	off, stop, ok := l.Span(start, end)
	if !ok {
		return nil, false
	}
	return l.data[off:stop], true
}

// LineOf returns the line holding byte offset off (clamped to the file).
func (l *Lines) LineOf(off int) int {
	if len(l.starts) == 0 {
		return 0
	}
	return sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off })
}
