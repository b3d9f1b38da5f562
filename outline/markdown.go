package outline

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// maxNesting bounds the block quotes and list items a Markdown line may
// open: the parser's time grows with the square of the nesting, so a small
// file of ">>>>…" would hold a gateway core for minutes. Real documents
// nest a handful deep.
const maxNesting = 32

// markdownItems lists the headings of a Markdown file; each runs to the
// line before the next heading of its level or a higher one. A file
// nested deeper than maxNesting is refused (and outlined as text).
func markdownItems(data []byte, ls *Lines) ([]Item, error) {
	if d := nesting(data); d > maxNesting {
		return nil, fmt.Errorf("blocks nested %d deep, more than %d", d, maxNesting)
	}
	doc := goldmark.New().Parser().Parse(text.NewReader(data))
	var items []Item
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok {
			continue
		}
		start := headingLine(h, items, ls)
		items = append(items, Item{Level: h.Level, Kind: "heading", Name: inlineText(h, data), Start: start})
	}
	for i := range items {
		items[i].End = ls.Count()
		for _, next := range items[i+1:] {
			if next.Level <= items[i].Level {
				items[i].End = max(next.Start-1, items[i].Start)
				break
			}
		}
	}
	return withPaths(items), nil
}

// nesting is the most block quotes, list markers and indentation steps
// (four columns each, on lines that open a quote or a list item) any line
// of data opens, counted only up to just past maxNesting.
func nesting(data []byte) int {
	deepest := 0
	for line := range bytes.Lines(data) {
		d, col := 0, 0
		for i := 0; i < len(line) && d <= maxNesting; {
			switch c := line[i]; {
			case c == ' ':
				col++
			case c == '\t':
				col += 4
			case c == '>':
				d++
			case (c == '-' || c == '*' || c == '+') && i+1 < len(line) && line[i+1] == ' ':
				d++
			default:
				i = len(line)
				continue
			}
			i++
		}
		if d > 0 { // indentation nests only lists and quotes, not code
			deepest = max(deepest, d+col/4)
		}
		if deepest > maxNesting {
			return deepest
		}
	}
	return deepest
}

// headingLine is the line a heading starts on: its first text segment's
// line (for a setext heading, the title's), or for an empty heading the
// line after the previous one's.
func headingLine(h *ast.Heading, items []Item, ls *Lines) int {
	if h.Lines().Len() > 0 {
		return ls.LineOf(h.Lines().At(0).Start)
	}
	if len(items) > 0 {
		return min(items[len(items)-1].Start+1, ls.Count())
	}
	return 1
}

// inlineText is the plain text of a node's inline children.
func inlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}
