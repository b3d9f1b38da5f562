package outline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
)

// spans renders items as "Kind Path Lx-Ly" for comparison.
func spans(items []Item) string {
	var b []string
	for _, it := range items {
		b = append(b, fmt.Sprintf("%d %s %s L%d-L%d", it.Level, it.Kind, it.Path, it.Start, it.End))
	}
	return strings.Join(b, "\n")
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"notes.md", "# Acme\nintro\n## Renewal\nr\n```\n# not a heading\n```\n### Terms\nt\n## Contacts\nc\n\nSetext\n======\ns\n",
			"1 heading Acme L1-L12\n2 heading Acme/Renewal L3-L9\n3 heading Acme/Renewal/Terms L8-L9\n2 heading Acme/Contacts L10-L12\n1 heading Setext L13-L15"},
		{"a.json", "{\n  \"name\": \"x\",\n  \"deps\": {\n    \"a\": 1,\n    \"b\": {\"deep\": true}\n  },\n  \"list\": [1,\n 2]\n}\n",
			"1 key name L2-L2\n1 key deps L3-L6\n2 key deps/a L4-L4\n2 key deps/b L5-L5\n1 key list L7-L8"},
		{"c.yaml", "name: x\ndeps:\n  a: 1\n  b:\n    deep: true\nlist:\n  - 1\n",
			"1 key name L1-L1\n1 key deps L2-L5\n2 key deps/a L3-L3\n2 key deps/b L4-L5\n1 key list L6-L7"},
		{"m.go", "package m\n\nimport \"fmt\"\n\n// T is a type.\ntype T struct{}\n\n// M is a method.\nfunc (t *T) M() {\n\tfmt.Println()\n}\n\nconst (\n\tA = 1\n\tB = 2\n)\n\nfunc F[X any]() {}\n",
			"1 type T L5-L6\n1 func T.M L8-L11\n1 const A L14-L14\n1 const B L15-L15\n1 func F L18-L18"},
		{"s.py", "import os\n\n@decorator\ndef f(a,\n      b):\n    return a\n\n# comment\nclass C:\n    def m(self):\n        pass\n\nasync def g():\n    pass\nx = 1\n",
			"1 def f L3-L6\n1 class C L9-L11\n1 def g L13-L14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Build(tc.name, []byte(tc.src))
			if got := spans(o.Items); got != tc.want {
				t.Fatalf("items:\n%s\nwant:\n%s\nnotes: %v", got, tc.want, o.Notes)
			}
		})
	}
}

func TestCSVAndText(t *testing.T) {
	o := Build("t.csv", []byte("id,name\n1,\"a\nb\"\n2,c\n"))
	if o.Format != CSV || strings.Join(o.Notes, "|") != "columns (2): id, name|rows: 2" {
		t.Fatalf("csv: %+v", o)
	}
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "line %d\n", i+1)
	}
	o = Build("x.txt", []byte(b.String()))
	if o.Format != Text || o.Lines != 30 || len(o.Head) != headLines || o.Head[0] != "line 1" {
		t.Fatalf("text: %+v", o)
	}
	if r := o.Render(); !strings.HasPrefix(r, "text, 30 lines, 231 bytes\n| line 1\n") {
		t.Fatalf("render: %q", r)
	}
	if o := Build("bad.json", []byte("{\"a\": ")); o.Format != Text || len(o.Notes) != 1 {
		t.Fatalf("invalid JSON: %+v", o)
	}
	if o := Build("b.md", []byte("\x00\x01\x02")); o.Format != Binary {
		t.Fatalf("binary: %+v", o)
	}
}

func TestSection(t *testing.T) {
	o := Build("n.md", []byte("# A\n## B\nb\n# C\n## B\nx\n"))
	for _, tc := range []struct {
		name       string
		start, end int
		ok         bool
	}{{"A/B", 2, 3, true}, {"C/B", 5, 6, true}, {"B", 2, 3, true}, {"C", 4, 6, true}, {"D", 0, 0, false}} {
		it, ok := o.Section(tc.name)
		if ok != tc.ok || it.Start != tc.start || it.End != tc.end {
			t.Errorf("Section(%q) = %+v %v", tc.name, it, ok)
		}
	}
	g := Build("m.go", []byte("package m\n\ntype T int\n\nfunc (T) M() {\n}\n"))
	if it, ok := g.Section("T.M"); !ok || it.Start != 5 || it.End != 6 {
		t.Fatalf("Go section: %+v %v", it, ok)
	}
}

func TestFit(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "# Part %d\n## Sub %d\ntext\n", i, i)
	}
	o := Build("big.md", []byte(b.String()))
	full, cut := o.Fit(-1)
	if cut || strings.Count(full, "\n") != 401 {
		t.Fatalf("full outline cut=%v lines=%d", cut, strings.Count(full, "\n"))
	}
	s, cut := o.Fit(Tokens(full) - 1)
	if !cut || Tokens(s) > Tokens(full)-1 || !strings.Contains(s, "## Sub 190 ") || !strings.Contains(s, "of them at level 2, from line") {
		t.Fatalf("shallower outline: cut=%v\n%s", cut, s)
	}
	s, cut = o.Fit(100)
	if !cut || Tokens(s) > 100 || !strings.Contains(s, "top-level, from line") {
		t.Fatalf("cut outline: cut=%v tokens=%d\n%s", cut, Tokens(s), s)
	}
	for budget, want := range map[int]string{8: "[cut]\n", 1: "[cut", 0: ""} {
		if s, cut := o.Fit(budget); !cut || s != want {
			t.Errorf("Fit(%d) = %q, %v; want %q", budget, s, cut, want)
		}
	}
}

func TestLinesAndTokens(t *testing.T) {
	for _, tc := range []struct {
		src string
		n   int
	}{{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n\n", 2}} {
		if got := NewLines([]byte(tc.src)).Count(); got != tc.n {
			t.Errorf("Count(%q) = %d, want %d", tc.src, got, tc.n)
		}
	}
	ls := NewLines([]byte("a\nbb\nccc"))
	if b, ok := ls.Slice(2, 3); !ok || string(b) != "bb\nccc" {
		t.Fatalf("Slice(2,3) = %q %v", b, ok)
	}
	if b, ok := ls.Slice(1, 1); !ok || string(b) != "a\n" {
		t.Fatalf("Slice(1,1) = %q %v", b, ok)
	}
	if _, ok := ls.Slice(3, 4); ok {
		t.Fatal("Slice past the end")
	}
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "abcdefgh": 2} {
		if got := Tokens(s); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzBuild(f *testing.F) {
	for _, s := range []string{"# a\n## b\n", "{\"a\":{\"b\":[1]}}", "a: {b: 1}\n", "a,b\n1,2\n", "package p\nfunc F(){}\n", "def f():\n pass\n"} {
		f.Add(s)
	}
	exts := []string{".md", ".json", ".yaml", ".csv", ".go", ".py", ".txt"}
	f.Fuzz(func(t *testing.T, s string) {
		for _, ext := range exts {
			o := Build("f"+ext, []byte(s))
			for _, it := range o.Items {
				if it.Start < 1 || it.End < it.Start || it.End > max(o.Lines, 1) {
					t.Fatalf("%s: item %+v outside %d lines", ext, it, o.Lines)
				}
			}
			for _, budget := range []int{0, 1, 2, 20} {
				if r, _ := o.Fit(budget); Tokens(r) > budget {
					t.Fatalf("%s: Fit(%d) gave %d tokens", ext, budget, Tokens(r))
				}
			}
		}
	})
}

// TestDeepMarkdownIsText: Markdown nested past maxNesting (which the
// parser takes quadratic time over) is outlined as text with a note;
// ordinary nesting is still Markdown.
func TestDeepMarkdownIsText(t *testing.T) {
	for name, data := range map[string]string{
		"quotes": strings.Repeat(">", 80<<10),
		"lists":  strings.Repeat("- ", 5000) + "x\n",
		"indent": func() string {
			var b strings.Builder
			for i := range 200 {
				b.WriteString(strings.Repeat("  ", i) + "- item\n")
			}
			return b.String()
		}(),
	} {
		o := Build("deep.md", []byte(data))
		if o.Format != Text || len(o.Notes) == 0 || !strings.Contains(o.Notes[0], "nested") {
			t.Errorf("%s: format %s, notes %q", name, o.Format, o.Notes)
		}
	}
	o := Build("ok.md", []byte("# A\n\n> quote\n> > nested\n\n- a\n  - b\n    - c\n\n    indented code\n\n## B\n"))
	if o.Format != Markdown || len(o.Items) != 2 {
		t.Fatalf("ordinary Markdown: %s %+v %q", o.Format, o.Items, o.Notes)
	}
}

// TestFitFillsBudget: an outline whose second level does not fit whole
// shows the top level and the first items of the second, and uses most
// of the budget.
func TestFitFillsBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Report\n\n")
	for ch := range 1100 {
		fmt.Fprintf(&b, "## Chapter %d\n\n", ch)
		for s := range 8 {
			fmt.Fprintf(&b, "### Section %d.%d\n\ntext\n\n", ch, s)
		}
	}
	o := Build("report.md", []byte(b.String()))
	s, cut := o.Fit(400)
	if !cut || Tokens(s) > 400 || Tokens(s) < 320 {
		t.Fatalf("Fit(400) = %d tokens, cut=%v\n%s", Tokens(s), cut, s)
	}
	if !strings.Contains(s, "# Report (L1-") || !strings.Contains(s, "## Chapter 0 (L3-") || strings.Contains(s, "### ") {
		t.Fatalf("want the title and the first chapters:\n%s", s)
	}
	shown := strings.Count(s, "## Chapter ")
	want := fmt.Sprintf("[outline cut: %d of its items left out; 8800 of them below level 2; %d of them at level 2, from line %d on]\n",
		1+1100+8800-1-shown, 1100-shown, 3+shown*34)
	if !strings.HasSuffix(s, want) {
		t.Fatalf("closing note: want %q in\n%s", want, s)
	}
}

// TestFitProperty: over every budget up to the whole outline's, for
// outlines of several shapes, Fit stays within the budget, shows the
// shallowest items first with each under its parent, uses more of a
// larger budget, and its closing note counts what it left out.
func TestFitProperty(t *testing.T) {
	var md, deep, gosrc strings.Builder
	for i := range 40 {
		fmt.Fprintf(&md, "# Part %d\n## Sub %d.a\ntext\n### Detail %d\n## Sub %d.b\n", i, i, i, i)
		fmt.Fprintf(&deep, "## Only second %d\n#### Fourth %d\n", i, i)
		fmt.Fprintf(&gosrc, "func F%d() {}\n", i)
	}
	for name, src := range map[string]string{"md.md": md.String(), "deep.md": deep.String(), "g.go": "package g\n" + gosrc.String(), "t.txt": md.String()} {
		o := Build(name, []byte(src))
		full, _ := o.Fit(-1)
		prev := -1
		for budget := 0; budget <= Tokens(full)+2; budget++ {
			s, cut := o.Fit(budget)
			if Tokens(s) > budget {
				t.Fatalf("%s: Fit(%d) gave %d tokens", name, budget, Tokens(s))
			}
			if cut != (budget < Tokens(full)) {
				t.Fatalf("%s: Fit(%d) cut=%v, full is %d tokens", name, budget, cut, Tokens(full))
			}
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			shown := 0
			for _, l := range lines {
				if strings.Contains(l, " (L") {
					shown++
				}
			}
			if !cut || strings.HasSuffix(s, cutMark) || strings.HasPrefix(cutMark, s) {
				continue // whole, or cut inside the header (the lines that fit, whatever their level)
			}
			if shown < prev {
				t.Fatalf("%s: Fit(%d) shows %d items, a smaller budget showed %d", name, budget, shown, prev)
			}
			prev = shown
			var left int
			if _, err := fmt.Sscanf(lines[len(lines)-1], "[outline cut: %d of its items left out", &left); err != nil || left != len(o.Items)-shown {
				t.Fatalf("%s: Fit(%d) shows %d of %d items and ends %q", name, budget, shown, len(o.Items), lines[len(lines)-1])
			}
			// The items shown are a prefix by level: none deeper than one
			// left out, and at the level shown in part the first ones.
			least := 1 << 30
			for _, it := range o.Items {
				if !strings.Contains(s, fmt.Sprintf(" %s (L%d-L%d)\n", it.Name, it.Start, it.End)) {
					least = min(least, it.Level)
				}
			}
			gap := false // an item at level least left out before this one
			for _, it := range o.Items {
				in := strings.Contains(s, fmt.Sprintf(" %s (L%d-L%d)\n", it.Name, it.Start, it.End))
				if in && (it.Level > least || it.Level == least && gap) {
					t.Fatalf("%s: Fit(%d) shows %q at level %d but leaves out an item at level %d before it\n%s", name, budget, it.Name, it.Level, least, s)
				}
				gap = gap || !in && it.Level == least
			}
		}
	}
}

// markdownCases are documents whose headings are easy to get wrong:
// setext headings, link reference definitions, lists, quotes, code and
// HTML blocks, lazy continuation.
var markdownCases = []string{
	"# A\npara *em* [l](u)\n## B\n",
	"Title\n=====\ntext\n\nSub\n---\n",
	"[ref]: /url\nTitle\n===\n",
	"[ref]: /url\n===\n# After\n",
	"# [Link][ref] and `code` *em*\n\n[ref]: /u\n",
	"-\n  a\n\n  # H\n",
	"- a\n\n  b\n# Top\n",
	"- a\nlazy\n---\n# H\n",
	"> quote\n# H\n> # in quote\n",
	"```\n# no\n```\n    # code\n# yes\n",
	"<div>\n# html\n</div>\n\n# after\n",
	"para\n# H\npara\n===\nx\n---\n- item\n===\n",
	"a\n\n---\n\nb\n***\n# End",
	"#\n# \n#  x  #\n##### deep\n",
}

// TestHeadingParser: the parser that skips paragraphs finds the headings
// goldmark's default parser finds, with the same names and lines.
func TestHeadingParser(t *testing.T) {
	for _, src := range markdownCases {
		ls := NewLines([]byte(src))
		if got, want := spans(headings(headingParser(), []byte(src), ls)), spans(headings(goldmark.DefaultParser(), []byte(src), ls)); got != want {
			t.Errorf("%q:\n%s\nwant:\n%s", src, got, want)
		}
	}
}

func FuzzHeadingParser(f *testing.F) {
	for _, s := range markdownCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if nesting([]byte(src)) > maxNesting {
			return
		}
		ls := NewLines([]byte(src))
		if got, want := spans(headings(headingParser(), []byte(src), ls)), spans(headings(goldmark.DefaultParser(), []byte(src), ls)); got != want {
			t.Fatalf("%q:\n%s\nwant:\n%s", src, got, want)
		}
	})
}
