package gitexport

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Path escaping turns object keys into Git paths and back. A key is split
// at every "/" into segments; each segment becomes one Git tree entry name:
//
//   - '%', '\', control bytes (0x00-0x1F, 0x7F) and bytes that are not part
//     of valid UTF-8 are written as %XX (two upper-case hex digits);
//   - an empty segment (from "a//b", a leading "/" or a trailing "/" as in
//     the folder marker "logs/") is written as "%";
//   - a segment Git refuses or treats specially gets its first byte escaped:
//     "." and "..", anything that reads as ".git" to Git's HFS+ and NTFS
//     checks (".git", ".GIT", ".gitmodules", ".git. .", ".g\u200cit", ...),
//     NTFS short names ("git~1", "gitmod~1", any name with '~' followed by a
//     digit within its first seven bytes) and, as the first segment, any
//     case variant of ".nas" (the export's own metadata directory);
//   - the name of an object whose key is also a directory (key "x" beside
//     "x/y") gets the suffix "%~".
//
// Escaping never produces '%' followed by anything but two upper-case hex
// digits, except for the two markers ("%" alone and the "%~" suffix) and
// the metadata file name "%entries.jsonl", so decoding needs no context: a
// name decodes to exactly one segment, and a name that escaping could not
// have produced (lower-case hex, a needless escape) is refused.
const (
	emptyName  = "%"
	fileSuffix = "%~"
	// entriesName is the per-directory metadata file; escaping never
	// produces it (its '%' is followed by 'e').
	entriesName = "%entries.jsonl"
)

const upperHex = "0123456789ABCDEF"

// EncodeSegment returns the Git tree entry name of one key segment (a
// string without '/'); top says it is the key's first segment.
func EncodeSegment(seg string, top bool) string {
	if seg == "" {
		return emptyName
	}
	var b strings.Builder
	b.Grow(len(seg) + 8)
	for i := 0; i < len(seg); {
		c := seg[i]
		if c < utf8.RuneSelf {
			if c == '%' || c == '\\' || c < 0x20 || c == 0x7f {
				writeEscape(&b, c)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(seg[i:])
		if r == utf8.RuneError && n == 1 {
			writeEscape(&b, c)
			i++
			continue
		}
		b.WriteString(seg[i : i+n])
		i += n
	}
	name := b.String()
	if name[0] != '%' && reserved(name, top) {
		var e strings.Builder
		writeEscape(&e, seg[0])
		name = e.String() + name[1:]
	}
	return name
}

func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

// reserved reports whether name must not appear in a Git tree as it is.
func reserved(name string, top bool) bool {
	if name == "." || name == ".." {
		return true
	}
	if top && strings.EqualFold(name, ".nas") {
		return true
	}
	if name[0] == '.' && strings.HasPrefix(strings.ToLower(stripIgnorable(name[1:])), "git") {
		return true
	}
	// NTFS 8.3 short names: up to six characters, '~', a digit.
	for i := 1; i <= 6 && i+1 < len(name); i++ {
		if name[i] == '~' {
			return name[i+1] >= '0' && name[i+1] <= '9'
		}
	}
	return false
}

// stripIgnorable drops the code points HFS+ ignores when comparing names
// (Git's is_hfs_dotgit skips them).
func stripIgnorable(s string) string {
	if !strings.ContainsFunc(s, hfsIgnorable) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, s)
}

func hfsIgnorable(r rune) bool {
	switch {
	case r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x206a && r <= 0x206f:
		return true
	case r == 0xfeff:
		return true
	}
	return false
}

// DecodeSegment reverses EncodeSegment: it returns the segment a tree
// entry name stands for and whether the name carries the "%~" suffix.
// Names escaping could not have produced are refused with ErrPath.
func DecodeSegment(name string, top bool) (seg string, suffix bool, err error) {
	body, suffix := strings.CutSuffix(name, fileSuffix)
	if body == emptyName {
		return "", suffix, nil
	}
	if body == "" {
		return "", false, fmt.Errorf("%q: empty name: %w", name, ErrPath)
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(body) {
			return "", false, fmt.Errorf("%q: truncated escape: %w", name, ErrPath)
		}
		hi, lo := strings.IndexByte(upperHex, body[i+1]), strings.IndexByte(upperHex, body[i+2])
		if hi < 0 || lo < 0 {
			return "", false, fmt.Errorf("%q: bad escape: %w", name, ErrPath)
		}
		out = append(out, byte(hi<<4|lo))
		i += 2
	}
	seg = string(out)
	if EncodeSegment(seg, top) != body {
		return "", false, fmt.Errorf("%q: not the canonical escaping of its segment: %w", name, ErrPath)
	}
	return seg, suffix, nil
}
