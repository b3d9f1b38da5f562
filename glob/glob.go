package glob

import "strings"

// Clean returns g in the form Match expects (leading "/" removed).
func Clean(g string) string { return strings.TrimPrefix(g, "/") }

// Match reports whether key matches glob g (already cleaned).
func Match(g, key string) bool {
	// Iterative matcher with backtracking for the last "*" and "**".
	var starG, starK = -1, -1   // position after the last "*" and its key position
	var dstarG, dstarK = -1, -1 // the same for "**"
	gi, ki := 0, 0
	for ki < len(key) || gi < len(g) {
		if gi < len(g) {
			switch {
			case strings.HasPrefix(g[gi:], "**"):
				dstarG, dstarK = gi+2, ki
				starG, starK = -1, -1
				gi += 2
				continue
			case g[gi] == '*':
				starG, starK = gi+1, ki
				gi++
				continue
			case ki < len(key) && g[gi] == '?' && key[ki] != '/':
				gi++
				ki++
				continue
			case ki < len(key) && g[gi] != '?' && g[gi] == key[ki]:
				gi++
				ki++
				continue
			}
		}
		// Mismatch: let the last "*" absorb one more byte (not "/"), else
		// the last "**" absorb one more byte (anything).
		if starG >= 0 && starK < len(key) && key[starK] != '/' {
			starK++
			gi, ki = starG, starK
			continue
		}
		if dstarG >= 0 && dstarK < len(key) {
			dstarK++
			gi, ki = dstarG, dstarK
			starG, starK = -1, -1
			continue
		}
		return false
	}
	return true
}

// LiteralPrefix returns the bytes every key matching g starts with: g up to
// its first wildcard.
func LiteralPrefix(g string) string {
	if i := strings.IndexAny(g, "*?"); i >= 0 {
		return g[:i]
	}
	return g
}

// token is one element of a glob: a literal byte, "?", "*" or "**".
type token struct {
	kind byte // 'l' literal, '?', '*', 'D' for "**"
	b    byte
}

func tokens(g string) []token {
	var ts []token
	for i := 0; i < len(g); i++ {
		switch {
		case strings.HasPrefix(g[i:], "**"):
			ts = append(ts, token{kind: 'D'})
			i++
		case g[i] == '*':
			ts = append(ts, token{kind: '*'})
		case g[i] == '?':
			ts = append(ts, token{kind: '?'})
		default:
			ts = append(ts, token{kind: 'l', b: g[i]})
		}
	}
	return ts
}

// Covers reports whether every key matching child also matches parent. It
// is sound (true only when containment holds) but may say false for exotic
// pairs that are in fact contained; a child lease is then refused, which is
// the safe side.
func Covers(parent, child string) bool {
	p, c := tokens(parent), tokens(child)
	memo := map[[2]int]bool{}
	var cover func(i, j int) bool
	cover = func(i, j int) bool {
		k := [2]int{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(p):
			r = j == len(c)
		case p[i].kind == 'D':
			// "**" absorbs any suffix of child tokens, one at a time.
			r = cover(i+1, j) || (j < len(c) && cover(i, j+1))
		case p[i].kind == '*':
			// "*" absorbs child tokens that never produce "/".
			r = cover(i+1, j) || (j < len(c) && noSlash(c[j]) && cover(i, j+1))
		case j == len(c):
			r = false
		case p[i].kind == '?':
			r = (c[j].kind == '?' || c[j].kind == 'l' && c[j].b != '/') && cover(i+1, j+1)
		default: // literal
			r = c[j].kind == 'l' && c[j].b == p[i].b && cover(i+1, j+1)
		}
		memo[k] = r
		return r
	}
	return cover(0, 0)
}

func noSlash(t token) bool {
	return t.kind == '?' || t.kind == '*' || t.kind == 'l' && t.b != '/'
}
