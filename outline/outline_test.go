package outline

import (
	"fmt"
	"strings"
	"testing"
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
	if !cut || Tokens(s) > Tokens(full)-1 || strings.Contains(s, "## ") || !strings.Contains(s, "200 of them below level 1") {
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
