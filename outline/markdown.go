package outline

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
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
	return headings(headingParser(), data, ls), nil
}

// headings lists the top-level headings p finds in data.
func headings(p parser.Parser, data []byte, ls *Lines) []Item {
	doc := p.Parse(text.NewReader(data))
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
	return withPaths(items)
}

// headingParser is goldmark's default parser, except that every
// paragraph is replaced, when it closes, by a raw block that stands in its
// place, so that only headings have their text parsed inline. Inline
// parsing of every paragraph's emphasis, links and code spans, which an
// outline never shows, was three quarters of the time outlining a long
// document took. The block structure is the default parser's: the stand-in
// keeps the paragraph's place (list items count their children), the link
// reference definitions were read before it (their transformer runs
// first), and a paragraph that a setext underline makes a heading is kept.
func headingParser() parser.Parser {
	blocks := parser.DefaultBlockParsers()
	setext := reflect.TypeOf(parser.NewSetextHeadingParser())
	for i, b := range blocks {
		if reflect.TypeOf(b.Value) == setext {
			blocks[i].Value = setextKeeper{b.Value.(parser.BlockParser)}
		}
	}
	return parser.NewParser(parser.WithBlockParsers(blocks...), parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(), util.Prioritized(paragraphSkipper{}, 1000))...))
}

// keepKey holds the paragraph a setext heading was just opened on.
var keepKey = parser.NewContextKey()

// setextKeeper is the setext heading parser, noting the paragraph a
// heading takes its text from before that paragraph is closed.
type setextKeeper struct{ parser.BlockParser }

func (s setextKeeper) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	last := pc.LastOpenedBlock().Node
	n, state := s.BlockParser.Open(parent, reader, pc)
	if n != nil {
		pc.Set(keepKey, last)
	}
	return n, state
}

// paragraphSkipper replaces each closed paragraph but a setext heading's
// with a skipped block.
type paragraphSkipper struct{}

func (paragraphSkipper) Transform(p *ast.Paragraph, _ text.Reader, pc parser.Context) {
	if pc.Get(keepKey) == any(p) {
		return
	}
	s := &skipped{}
	s.SetBlankPreviousLines(p.HasBlankPreviousLines())
	p.Parent().ReplaceChild(p.Parent(), p, s)
}

// skipped stands for a paragraph: a raw block, which the parser does not
// parse inline.
type skipped struct{ ast.BaseBlock }

var kindSkipped = ast.NewNodeKind("OutlineSkippedParagraph")

func (*skipped) Kind() ast.NodeKind { return kindSkipped }
func (*skipped) IsRaw() bool        { return true }
func (s *skipped) Dump(src []byte, level int) {
	ast.DumpHelper(s, src, level, nil, nil)
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
