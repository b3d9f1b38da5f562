package evidence

import (
	"errors"
	"strings"
	"testing"
)

const commit = "9f2c1de0aa"

func TestRoundTrip(t *testing.T) {
	for _, p := range []Pointer{
		{Repo: "home-box", Path: "agents/cleo/notes.md", Commit: commit, Start: 12, End: 18},
		{Repo: "r", Path: "a@b#c%d e", Commit: commit, Start: 1, End: 1},
		{Repo: "r", Path: "/leading//slashes/", Commit: commit, Start: 1, End: MaxLine},
		{Repo: "r", Path: "ünïcødé/日本.md", Commit: commit, Start: 3, End: 4},
		{Repo: "r", Path: "bad\xffutf8\x00\n\x7f", Commit: commit, Start: 2, End: 9},
	} {
		s := p.String()
		got, err := Parse(s)
		if err != nil || got != p {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", s, got, err, p)
		}
		if strings.Count(s, "@") != 1 || strings.Count(s, "#") != 1 {
			t.Errorf("%q: want exactly one @ and one #", s)
		}
	}
}

func TestEscapeExamples(t *testing.T) {
	p := Pointer{Repo: "r", Path: "a@b#c%d e", Commit: "ab", Start: 1, End: 2}
	if got, want := p.String(), "nas://r/a%40b%23c%25d%20e@ab#L1-L2"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	q, err := Parse("nas://r/%61%2fb@ab#L7")
	if err != nil || q.Path != "a/b" || q.Start != 7 || q.End != 7 {
		t.Fatalf("needless escapes and a single line: %+v %v", q, err)
	}
	if q.String() != "nas://r/a/b@ab#L7-L7" {
		t.Fatalf("canonical form %q", q.String())
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		"", "nas:/r/p@ab#L1-L2", "http://r/p@ab#L1-L2", "nas://r@ab#L1-L2", "nas:///p@ab#L1-L2",
		"nas://r/@ab#L1-L2", "nas://r/p#L1-L2", "nas://r/p@ab", "nas://r/p@#L1-L2", "nas://r/p@AB#L1-L2",
		"nas://r/p@xyz#L1-L2", "nas://r/p@ab#L0-L2", "nas://r/p@ab#L3-L2", "nas://r/p@ab#1-2",
		"nas://r/p@ab#L1-", "nas://r/p@ab#L-1", "nas://r/p@ab#L+1", "nas://r/p@ab#L99999999999",
		"nas://r/p@ab#L2147483648", "nas://r/p%@ab#L1", "nas://r/p%4@ab#L1", "nas://r/p%zz@ab#L1",
		"nas://r/a b@ab#L1", "nas://r/a#b@ab#L1", "nas://r/p@ab#L1-L2-L3", "nas://r/p@ab#L1#L2",
		"nas://r/p\xff@ab#L1",
	} {
		if p, err := Parse(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrInvalid", s, p, err)
		}
	}
}

func TestHash(t *testing.T) {
	if got := Hash([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Hash(abc) = %s", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"nas://home-box/agents/cleo/notes.md@9f2c1de#L12-L18", "nas://r/a%40b%23c@ab#L1", "nas://r/%ff@0#L1-L1",
		"nas://", "nas://r/p@ab#L", "nas://r/p@ab#L1-L2147483647",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		again, err := Parse(p.String())
		if err != nil || again != p {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", s, again, err, p)
		}
	})
}

func FuzzString(f *testing.F) {
	f.Add("r", "a@b#c", "ab", 1, 2)
	f.Add("r", "\xff\x00 %", "0", 5, 5)
	f.Fuzz(func(t *testing.T, repo, path, commit string, start, end int) {
		p := Pointer{Repo: repo, Path: path, Commit: commit, Start: start, End: end}
		if p.Check() != nil {
			return
		}
		got, err := Parse(p.String())
		if err != nil || got != p {
			t.Fatalf("round trip of %+v: %+v, %v", p, got, err)
		}
	})
}
