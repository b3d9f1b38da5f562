package outline

import (
	"fmt"
	"strings"
)

// Render writes the outline as text, one item a line with its line range:
// Markdown headings as "## Title (L3-L9)", other items indented two spaces
// a level as "func Name (L3-L9)".
func (o *Outline) Render() string {
	s, _ := o.Fit(-1)
	return s
}

// Fit renders the outline in at most budget tokens (negative: no limit).
// When the whole outline does not fit, it leaves out the deepest levels
// first and then, at the top level, the items after those that fit; a
// last line says what was left out, and cut is true. When not even the
// header and that line fit, the text is cut after its last whole line
// that does, and ends in "[cut]".
func (o *Outline) Fit(budget int) (s string, cut bool) {
	full := o.render(o.depth(), len(o.Items))
	if budget < 0 || Tokens(full) <= budget {
		return full, false
	}
	for d := o.depth() - 1; d >= 1; d-- {
		if s := o.render(d, len(o.Items)); Tokens(s) <= budget {
			return s, true
		}
	}
	if s := o.cutItems(budget); Tokens(s) <= budget {
		return s, true
	}
	return hardCut(full, budget), true
}

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

// cutItems renders the top level only, as many items as fit in budget
// with the closing note (a header-only outline when none fits).
func (o *Outline) cutItems(budget int) string {
	lo, hi := 0, len(o.Items)
	for lo < hi { // the largest n whose rendering fits
		n := (lo + hi + 1) / 2
		if Tokens(o.render(1, n)) <= budget {
			lo = n
		} else {
			hi = n - 1
		}
	}
	return o.render(1, lo)
}

// depth is the deepest level of the outline's items.
func (o *Outline) depth() int {
	d := 1
	for _, it := range o.Items {
		d = max(d, it.Level)
	}
	return d
}

// render writes the header, the items of at most maxLevel among the first
// n items, and a note for what that leaves out.
func (o *Outline) render(maxLevel, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d lines, %d bytes\n", o.Format, o.Lines, o.Bytes)
	for _, note := range o.Notes {
		b.WriteString(note + "\n")
	}
	shown, deeper, lastLine := 0, 0, 0
	for i, it := range o.Items {
		switch {
		case it.Level > maxLevel:
			deeper++
		case i < n:
			o.item(&b, it)
			shown++
			lastLine = it.End
		}
	}
	for _, h := range o.Head {
		b.WriteString("| " + h + "\n")
	}
	if left := len(o.Items) - shown; left > 0 {
		writeLeftOut(&b, left, deeper, maxLevel, lastLine)
	}
	return b.String()
}

// writeLeftOut says which items an outline left out.
func writeLeftOut(b *strings.Builder, left, deeper, maxLevel, lastLine int) {
	fmt.Fprintf(b, "[outline cut: %d of its items left out", left)
	if deeper > 0 {
		fmt.Fprintf(b, "; %d of them below level %d", deeper, maxLevel)
	}
	if cut := left - deeper; cut > 0 {
		fmt.Fprintf(b, "; %d of them top-level, from line %d on", cut, lastLine+1)
	}
	b.WriteString("]\n")
}

func (o *Outline) item(b *strings.Builder, it Item) {
	if it.Kind == "heading" {
		fmt.Fprintf(b, "%s %s (L%d-L%d)\n", strings.Repeat("#", it.Level), it.Name, it.Start, it.End)
		return
	}
	fmt.Fprintf(b, "%s%s %s (L%d-L%d)\n", strings.Repeat("  ", it.Level-1), it.Kind, it.Name, it.Start, it.End)
}
