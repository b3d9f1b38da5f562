package search

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBleveVersion: the recipe names the bleve that go.mod pins.
func TestBleveVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github.com/blevesearch/bleve/v2 (v\S+)`).FindSubmatch(mod)
	if m == nil || string(m[1]) != bleveVersion {
		t.Fatalf("go.mod pins bleve %s, the recipe says %s", m, bleveVersion)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/blevesearch/bleve/v2" && d.Version != bleveVersion {
				t.Fatalf("linked bleve %s, recipe %s", d.Version, bleveVersion)
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in      string
		words   string
		phrases []string
		bad     bool
	}{
		{in: "renewal contract", words: "renewal contract"},
		{in: `"24 months" renewal`, words: "renewal", phrases: []string{"24 months"}},
		{in: `a "b c" d "e"`, words: "a d", phrases: []string{"b c", "e"}},
		{in: `""`, bad: true},
		{in: "   ", bad: true},
		{in: `"open`, bad: true},
		{in: "\xff", bad: true},
	} {
		w, p, err := parse(c.in)
		if c.bad {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("parse(%q) = %q %q %v, want ErrInvalid", c.in, w, p, err)
			}
			continue
		}
		if err != nil || w != c.words || strings.Join(p, "|") != strings.Join(c.phrases, "|") {
			t.Errorf("parse(%q) = %q %q %v", c.in, w, p, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a b", `"a b" c`, `"`, "", "\x00\"\"x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, p, err := parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("parse(%q): %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if w == "" && len(p) == 0 {
			t.Fatalf("parse(%q) accepted no words", s)
		}
		for _, x := range append(p, w) {
			if x == "" {
				continue
			}
			if strings.Contains(x, `"`) || !strings.Contains(s, strings.Fields(x)[0]) {
				t.Fatalf("parse(%q) = %q %q: a part not of the input", s, w, p)
			}
		}
		if _, err := textQuery(s); err != nil {
			t.Fatalf("textQuery(%q): %v", s, err)
		}
	})
}

func TestPick(t *testing.T) {
	data := []byte("alpha\nbeta gamma\ndelta\nbeta\nepsilon\n")
	// "beta" on lines 2 and 4, "gamma" on line 2: line 2 wins.
	s, ok := pick(data, [][]int{{6, 23}, {11}})
	if !ok || s.Start != 1 || s.End != 3 || string(s.Lines) != "alpha\nbeta gamma\ndelta\n" || s.Off != 0 {
		t.Fatalf("pick: %+v", s)
	}
	long := []byte("x\n" + strings.Repeat("é", MaxSnippetBytes) + " needle\ny\n")
	s, _ = pick(long, [][]int{{bytes.Index(long, []byte("needle"))}})
	if s.Start != 2 || s.End != 2 || len(s.Text) > MaxSnippetBytes || !utf8.Valid(s.Text) || !bytes.HasPrefix(s.Lines, s.Text) {
		t.Fatalf("a line over the bound: %d-%d, %d bytes shown of %d", s.Start, s.End, len(s.Text), len(s.Lines))
	}
	if _, ok := pick(nil, nil); ok {
		t.Fatal("an empty file has a snippet")
	}
}

func FuzzPick(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte{0, 2, 4})
	f.Add([]byte("no newline"), []byte{200})
	f.Add([]byte("\n\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, data, offs []byte) {
		terms := [][]int{{}, {}}
		for i, o := range offs {
			terms[i%2] = append(terms[i%2], int(o))
		}
		s, ok := pick(data, terms)
		if !ok {
			if len(data) != 0 {
				t.Fatal("no snippet of a non-empty file")
			}
			return
		}
		if s.Start < 1 || s.End < s.Start || s.End-s.Start >= MaxSnippetLines || len(s.Text) > MaxSnippetBytes ||
			!bytes.HasPrefix(s.Lines, s.Text) || !bytes.Equal(data[s.Off:s.Off+len(s.Lines)], s.Lines) {
			t.Fatalf("snippet %+v of %q", s, data)
		}
		if s.Start != s.End && len(s.Lines) > MaxSnippetBytes {
			t.Fatalf("a window of %d lines over the bound", s.End-s.Start+1)
		}
		if utf8.Valid(s.Lines) && !utf8.Valid(s.Text) {
			t.Fatalf("cut splits a character: %q", s.Text)
		}
	})
}
