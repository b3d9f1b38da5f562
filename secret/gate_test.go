package secret

import (
	"regexp/syntax"
	"slices"
	"testing"
)

// TestMinMatch checks the ASCII-run gate's premise: every rule's match is
// at least minMatch consecutive ASCII bytes around its trigger byte (for
// an assignment, its shortest keyword and then the expression from the
// separator).
func TestMinMatch(t *testing.T) {
	for _, r := range rules {
		re, err := syntax.Parse(r.re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := asciiPrefix(re.Simplify())
		if r.keywords != nil {
			n += len(slices.MinFunc(r.keywords, func(a, b string) int { return len(a) - len(b) }))
		}
		t.Logf("%s: %d", r.name, n)
		if n < minMatch {
			t.Errorf("%s: a match can hold only %d ASCII bytes in a row, under minMatch %d", r.name, n, minMatch)
		}
	}
}

// asciiPrefix returns the fewest bytes a match of re starts with that are
// certainly ASCII, and whether every byte of every match of re is.
func asciiPrefix(re *syntax.Regexp) (n int, all bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if c >= 0x80 {
				return n, false
			}
			n++
		}
		return n, true
	case syntax.OpCharClass:
		return 1, re.Rune[len(re.Rune)-1] < 0x80
	case syntax.OpCapture:
		return asciiPrefix(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			k, ok := asciiPrefix(s)
			n += k
			if !ok {
				return n, false
			}
		}
		return n, true
	case syntax.OpAlternate:
		n, all = -1, true
		for _, s := range re.Sub {
			k, ok := asciiPrefix(s)
			if n < 0 || k < n {
				n = k
			}
			all = all && ok
		}
		return n, all
	case syntax.OpRepeat, syntax.OpPlus:
		k, ok := asciiPrefix(re.Sub[0])
		if !ok {
			return k, false // only the first copy's prefix is certain
		}
		return k * max(re.Min, 1), true
	case syntax.OpStar, syntax.OpQuest:
		_, ok := asciiPrefix(re.Sub[0])
		return 0, ok
	case syntax.OpBeginText, syntax.OpBeginLine, syntax.OpEmptyMatch, syntax.OpWordBoundary:
		return 0, true
	}
	return 0, false // $, \B, any character: nothing certain past here
}

// TestGateAtEveryAlignment puts each example inside high-entropy bytes at
// each of the eight offsets from a word boundary (after a blank, so the
// noise does not join its first word): scan finds its rule there, as
// looking at every trigger byte does.
func TestGateAtEveryAlignment(t *testing.T) {
	noise := random(1024)
	// The shortest match there is, between non-ASCII bytes.
	tight := []byte("\xff" + "xoxp-" + "1234567890" + "\xff")
	for k := range 16 {
		data := slices.Concat(noise[:300+k], tight, noise[400:700])
		if got := scan(data, 0, len(data)); got != slack.bit {
			t.Errorf("the shortest slack token at +%d: scan %b", k, got)
		}
	}
	for rule, exs := range examples {
		for i, ex := range exs {
			for k := range 8 {
				data := slices.Concat(noise[:301+k], []byte(" "+ex), noise[400:700])
				got, want := scan(data, 0, len(data)), lookEverywhere(data)
				if got != want || got == 0 {
					t.Errorf("%s #%d at +%d: scan %b, looking everywhere %b", rule, i, k, got, want)
				}
			}
		}
	}
}

// TestASCIIRuns checks the runs the gate hands to the trigger search.
func TestASCIIRuns(t *testing.T) {
	hi := func(n int) []byte { return slices.Repeat([]byte{0xff}, n) }
	lo := func(n int) []byte { return slices.Repeat([]byte{'a'}, n) }
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	cases := []struct {
		name string
		buf  []byte
		want [][2]int
	}{
		{"empty", nil, nil},
		{"all ASCII", lo(100), [][2]int{{0, 100}}},
		{"none", hi(64), nil},
		{"seven is too short", cat(hi(8), lo(7), hi(9)), nil},
		{"fifteen anywhere", cat(hi(3), lo(15), hi(6)), [][2]int{{3, 18}}},
		{"unaligned eight", cat(hi(3), lo(8), hi(5)), nil},
		{"two runs", cat(lo(16), hi(1), hi(7), lo(9), hi(1), lo(16)), [][2]int{{0, 16}, {24, 33}, {34, 50}}},
		{"tail shorter than a word", cat(hi(8), lo(12)), [][2]int{{8, 20}}},
	}
	for _, c := range cases {
		var got [][2]int
		asciiRuns(c.buf, func(a, b int) { got = append(got, [2]int{a, b}) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: runs %v, want %v", c.name, got, c.want)
		}
	}
}
