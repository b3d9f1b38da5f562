package outline

import (
	"fmt"
	"slices"
	"strings"
)

// FitNeed renders the outline in at most budget tokens (negative: no
// limit), and says the tokens the whole outline needs, which it renders
// once for both. When the whole outline does not fit, it keeps the
// shallowest levels that fit whole and then, of the next level, the first
// items in document order that still fit, each under its parent; a last
// line says what was left out, and cut is true. When not even the header
// and that line fit, the text is cut after its last whole line that does,
// and ends in "[cut]".
func (o *Outline) FitNeed(budget int) (s string, cut bool, need int) {
	f := o.fitter()
	need = Tokens(f.full)
	if budget < 0 || need <= budget {
		return f.full, false, need
	}
	// The largest prefix of the items taken by level that fits. Its size
	// is computed, not rendered, so the search costs no rendering; it is
	// near monotonic (the closing note's numbers shrink a digit at times),
	// and the one rendering it picks is checked below.
	lo, hi := 0, len(f.order)-1
	for lo < hi {
		n := (lo + hi + 1) / 2
		if tokensOf(f.size(n)) <= budget {
			lo = n
		} else {
			hi = n - 1
		}
	}
	if s := f.render(lo); Tokens(s) <= budget {
		return s, true, need
	}
	return hardCut(f.full, budget), true, need
}

// tokensOf is Tokens of a string of n bytes.
func tokensOf(n int) int { return n/4 + min(n%4, 1) }

// cutMark ends an outline cut inside its header.
const cutMark = "[cut]\n"

// hardCut keeps the whole lines of s that fit in budget tokens with
// cutMark after them (s is longer than that).
func hardCut(s string, budget int) string {
	room := budget*4 - len(cutMark)
	if room < 0 {
		return cutMark[:max(budget*4, 0)]
	}
	return s[:strings.LastIndexByte(s[:room], '\n')+1] + cutMark
}

// A fitter holds an outline's full rendering in pieces, so that any
// prefix of its items taken by level can be sized without rendering it.
type fitter struct {
	o     *Outline
	full  string   // the whole outline
	top   string   // the header and notes
	head  string   // the head lines, after the items
	lines []string // item i's line, a part of full
	order []int    // the items' indices by level, then in document order
	rank  []int    // rank[i] is item i's place in order
	sum   []int    // sum[n] is the bytes of the lines of order[:n]
}

// fitter renders the whole outline once and indexes its pieces.
func (o *Outline) fitter() *fitter {
	f := &fitter{o: o, lines: make([]string, len(o.Items))}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d lines, %d bytes\n", o.Format, o.Lines, o.Bytes)
	for _, note := range o.Notes {
		b.WriteString(note + "\n")
	}
	top := b.Len()
	ends := make([]int, len(o.Items))
	for i, it := range o.Items {
		o.item(&b, it)
		ends[i] = b.Len()
	}
	items := b.Len()
	for _, h := range o.Head {
		b.WriteString("| " + h + "\n")
	}
	f.full = b.String()
	f.top, f.head = f.full[:top], f.full[items:]
	start := top
	for i, end := range ends {
		f.lines[i], start = f.full[start:end], end
	}
	f.order = make([]int, len(o.Items))
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortStableFunc(f.order, func(a, b int) int { return o.Items[a].Level - o.Items[b].Level })
	f.rank = make([]int, len(o.Items))
	f.sum = make([]int, len(o.Items)+1)
	for n, i := range f.order {
		f.rank[i] = n
		f.sum[n+1] = f.sum[n] + len(f.lines[i])
	}
	return f
}

// size is the length in bytes of render(n).
func (f *fitter) size(n int) int {
	return len(f.top) + f.sum[n] + len(f.head) + len(f.leftOut(n))
}

// render writes the header, the first n items of order in document
// order, the head lines and a note for what that leaves out.
func (f *fitter) render(n int) string {
	var b strings.Builder
	b.Grow(f.size(n))
	b.WriteString(f.top)
	for i, line := range f.lines {
		if f.rank[i] < n {
			b.WriteString(line)
		}
	}
	b.WriteString(f.head)
	b.WriteString(f.leftOut(n))
	return b.String()
}

// leftOut is the closing note of render(n): how many items it leaves out,
// how many of them are below the deepest level it shows in part or whole,
// and, when it shows a level in part (or none at all), from which line on
// that level's items are left out.
func (f *fitter) leftOut(n int) string {
	left := len(f.order) - n
	if left == 0 {
		return ""
	}
	its := f.o.Items
	first := its[f.order[n]] // the first item left out
	s := fmt.Sprintf("[outline cut: %d of its items left out", left)
	if n > 0 && its[f.order[n-1]].Level < first.Level { // whole levels
		return s + fmt.Sprintf("; %d of them below level %d]\n", left, its[f.order[n-1]].Level)
	}
	// Level first.Level in part: its items from first on are left out.
	end := n
	for end < len(f.order) && its[f.order[end]].Level == first.Level {
		end++
	}
	if deeper := len(f.order) - end; deeper > 0 {
		s += fmt.Sprintf("; %d of them below level %d", deeper, first.Level)
	}
	level := "top-level"
	if its[f.order[0]].Level != first.Level {
		level = fmt.Sprintf("at level %d", first.Level)
	}
	return s + fmt.Sprintf("; %d of them %s, from line %d on]\n", end-n, level, first.Start)
}

func (o *Outline) item(b *strings.Builder, it Item) {
	if it.Kind == "heading" {
		fmt.Fprintf(b, "%s %s (L%d-L%d)\n", strings.Repeat("#", it.Level), it.Name, it.Start, it.End)
		return
	}
	fmt.Fprintf(b, "%s%s %s (L%d-L%d)\n", strings.Repeat("  ", it.Level-1), it.Kind, it.Name, it.Start, it.End)
}
