package search

import (
	"unicode/utf8"

	"github.com/agentnas/nas/outline"
)

// snippet is the lines of a file shown for a hit.
type snippet struct {
	Start, End int    // lines, 1-based, inclusive
	Off        int    // byte offset of line Start
	Lines      []byte // lines Start..End whole
	Text       []byte // Lines cut to MaxSnippetBytes
}

// pick chooses the snippet of data whose query terms matched at the
// byte offsets terms[i] (one slice per term): the line with the most
// distinct terms (then the most matches, then the first), with a line
// either side when they fit MaxSnippetBytes. ok is false for a file of
// no lines.
func pick(data []byte, terms [][]int) (s snippet, ok bool) {
	ls := outline.NewLines(data)
	if ls.Count() == 0 {
		return s, false
	}
	type score struct{ distinct, count int }
	scores := map[int]*score{}
	for _, offs := range terms {
		seen := map[int]bool{}
		for _, o := range offs {
			l := ls.LineOf(o)
			sc := scores[l]
			if sc == nil {
				sc = &score{}
				scores[l] = sc
			}
			sc.count++
			if !seen[l] {
				seen[l] = true
				sc.distinct++
			}
		}
	}
	best, top := 1, score{}
	for l, sc := range scores {
		if sc.distinct > top.distinct || sc.distinct == top.distinct && (sc.count > top.count || sc.count == top.count && l < best) {
			best, top = l, *sc
		}
	}
	return around(ls, best), true
}

// around is the window of at most MaxSnippetLines lines about line l
// that fits MaxSnippetBytes, or line l alone, cut.
func around(ls *outline.Lines, l int) snippet {
	n := ls.Count()
	for _, w := range [][2]int{{l - 1, l + 1}, {l, l + 1}, {l - 1, l}, {l, l}} {
		start, end := max(w[0], 1), min(w[1], n)
		off, stop, _ := ls.Span(start, end)
		if stop-off <= MaxSnippetBytes || start == end {
			b, _ := ls.Slice(start, end)
			return snippet{Start: start, End: end, Off: off, Lines: b, Text: cut(b, MaxSnippetBytes)}
		}
	}
	panic("unreachable: the last window is one line")
}

// cut returns the first n bytes of b at most, not splitting a UTF-8
// character.
func cut(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
