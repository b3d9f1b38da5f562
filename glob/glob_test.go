package glob

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		g, k string
		ok   bool
	}{
		{"shared/launch/**", "shared/launch/notes.md", true},
		{"shared/launch/**", "shared/launch/a/b/c", true},
		{"shared/launch/**", "shared/launch/", true},
		{"shared/launch/**", "shared/launch", false},
		{"shared/launch/**", "shared/launchpad/x", false},
		{"shared/launch/**", "shared/launch/../secret", true}, // a literal key inside the prefix
		{"shared/launch/**", "shared/x/../launch/y", false},
		{"a/b", "a/b", true},
		{"a/b", "a/bc", false},
		{"a/b", "a/b/", false},
		{"a/*", "a/b", true},
		{"a/*", "a/b/c", false},
		{"a/*", "a/", true},
		{"a/*.csv", "a/x.csv", true},
		{"a/*.csv", "a/x.csv.bak", false},
		{"a/*.csv", "a/d/x.csv", false},
		{"a/**.csv", "a/d/x.csv", true},
		{"a/?", "a/b", true},
		{"a/?", "a/", false},
		{"a/?", "a//", false},
		{"**", "anything/at/all", true},
		{"*", "top", true},
		{"*", "a/b", false},
		{"A/b", "a/b", false},
		{"a//b", "a/b", false},
		{"a%2Fb", "a/b", false},
		{"a%2Fb", "a%2Fb", true},
		{"x/**/y", "x/y", false},
		{"x/**/y", "x//y", true},
		{"x/**/y", "x/a/b/y", true},
		{"*/*", "a/b", true},
		{"**/z", "z", false},
		{"**/z", "a/z", true},
	}
	for _, c := range cases {
		if got := Match(c.g, c.k); got != c.ok {
			t.Errorf("Match(%q, %q) = %v, want %v", c.g, c.k, got, c.ok)
		}
	}
}

func TestCovers(t *testing.T) {
	cases := []struct {
		p, c string
		ok   bool
	}{
		{"a/**", "a/b/**", true},
		{"a/**", "a/b", true},
		{"a/**", "a/*", true},
		{"a/*", "a/**", false},
		{"a/*", "a/b", true},
		{"a/*", "a/b/c", false},
		{"a/**", "b/**", false},
		{"a/**", "a**", false},
		{"**", "x/*/y/**", true},
		{"a/b", "a/b", true},
		{"a/b", "a/bc", false},
		{"a/?", "a/*", false},
		{"a/*", "a/?", true},
		{"a/*.csv", "a/x*.csv", true},
		{"a/*.csv", "a/*", false},
	}
	for _, c := range cases {
		if got := Covers(c.p, c.c); got != c.ok {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.p, c.c, got, c.ok)
		}
	}
}

// FuzzCovers checks soundness: whenever Covers says a parent covers a
// child, every key the child matches is matched by the parent.
func FuzzCovers(f *testing.F) {
	f.Add("a/**", "a/b/*", "a/b/c")
	f.Add("a/*", "a/?", "a/x")
	f.Add("**/z", "x/*/z", "x/y/z")
	f.Fuzz(func(t *testing.T, p, c, key string) {
		if len(p) > 24 || len(c) > 24 || len(key) > 32 {
			return
		}
		if Covers(p, c) && Match(c, key) && !Match(p, key) {
			t.Fatalf("Covers(%q, %q) but %q matches only the child", p, c, key)
		}
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("a/**/b*", "a/x/y/bz")
	f.Fuzz(func(t *testing.T, g, key string) {
		if len(g) > 40 || len(key) > 64 {
			return
		}
		m := Match(g, key)
		// A literal glob matches exactly itself.
		if LiteralPrefix(g) == g && m != (g == key) {
			t.Fatalf("literal %q vs %q: %v", g, key, m)
		}
		// Every match starts with the literal prefix.
		if m && len(key) < len(LiteralPrefix(g)) || m && key[:len(LiteralPrefix(g))] != LiteralPrefix(g) {
			t.Fatalf("%q matches %q outside its literal prefix", g, key)
		}
	})
}

// globRegexp is a reference implementation of Match.
func globRegexp(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\A`)
	for _, t := range tokens(g) {
		switch t.kind {
		case 'D':
			b.WriteString(`(?s:.*)`)
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(string([]byte{t.b})))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

func FuzzMatchReference(f *testing.F) {
	f.Add("a/**/b*", "a/x/y/bz")
	f.Add("*/**/?", "x//y")
	f.Fuzz(func(t *testing.T, g, key string) {
		// The reference works on runes; Match on bytes ("?" is one byte).
		if len(g) > 32 || len(key) > 48 || !ascii(g) || !ascii(key) {
			return
		}
		if want := globRegexp(g).MatchString(key); Match(g, key) != want {
			t.Fatalf("Match(%q, %q) = %v, reference says %v", g, key, !want, want)
		}
	})
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
