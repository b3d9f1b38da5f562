package evidence

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const upperHex = "0123456789ABCDEF"

// Escape writes a path for a pointer (see the package doc): '%', '@',
// '#', space, controls and bytes outside valid UTF-8 become %XX.
func Escape(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); {
		r, n := utf8.DecodeRuneInString(path[i:])
		if mustEscape(r, n) {
			for _, c := range []byte(path[i : i+n]) {
				b.WriteByte('%')
				b.WriteByte(upperHex[c>>4])
				b.WriteByte(upperHex[c&15])
			}
		} else {
			b.WriteString(path[i : i+n])
		}
		i += n
	}
	return b.String()
}

// mustEscape reports whether rune r, n bytes long, is escaped.
func mustEscape(r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return true
	}
	return r <= ' ' || r == 0x7f || r == '%' || r == '@' || r == '#'
}

// Unescape reverses Escape. It refuses a '%' not followed by two hex
// digits and an unescaped character Escape would have escaped; it accepts
// needless escapes (%41 for 'A') and lowercase hex, which String then
// writes canonically.
func Unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '%' {
			if i+2 >= len(s) {
				return "", fmt.Errorf("%w: %% at the end of the path", ErrInvalid)
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("%w: %%%s is not a percent-escape", ErrInvalid, clip(s[i+1:i+3]))
			}
			b.WriteByte(hi<<4 | lo)
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if mustEscape(r, n) {
			return "", fmt.Errorf("%w: unescaped %q in the path", ErrInvalid, clip(s[i:i+n]))
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String(), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
