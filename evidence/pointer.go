package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Scheme starts every pointer.
const Scheme = "nas://"

// MaxLine bounds line numbers, so they fit an int on every platform.
const MaxLine = 1<<31 - 1

// maxCommit is the longest commit ID (hex of a 32-byte hash).
const maxCommit = 64

// Pointer names lines Start..End (1-based, inclusive) of Path in Repo as
// of Commit (hex).
type Pointer struct {
	Repo   string
	Path   string
	Commit string
	Start  int
	End    int
}

// Check reports whether p can be written as a pointer.
func (p Pointer) Check() error {
	switch {
	case p.Repo == "" || strings.ContainsAny(p.Repo, "/@#%") || !printable(p.Repo):
		return fmt.Errorf("%w: repository %q", ErrInvalid, p.Repo)
	case p.Path == "":
		return fmt.Errorf("%w: empty path", ErrInvalid)
	case !isHex(p.Commit):
		return fmt.Errorf("%w: commit %q is not lowercase hex of at most %d digits", ErrInvalid, p.Commit, maxCommit)
	case p.Start < 1 || p.End < p.Start || p.End > MaxLine:
		return fmt.Errorf("%w: lines %d-%d", ErrInvalid, p.Start, p.End)
	}
	return nil
}

// String writes p in its canonical form; it does not check p (use Check).
func (p Pointer) String() string {
	return fmt.Sprintf("%s%s/%s@%s#L%d-L%d", Scheme, p.Repo, Escape(p.Path), p.Commit, p.Start, p.End)
}

// Parse reads a pointer. It never panics; every malformed input answers
// an error wrapping ErrInvalid.
func Parse(s string) (Pointer, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Pointer{}, fmt.Errorf("%w: %q does not start with %s", ErrInvalid, clip(s), Scheme)
	}
	repo, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return Pointer{}, fmt.Errorf("%w: no path after the repository", ErrInvalid)
	}
	path, rest, ok := strings.Cut(rest, "@")
	if !ok {
		return Pointer{}, fmt.Errorf("%w: no @COMMIT", ErrInvalid)
	}
	commit, frag, ok := strings.Cut(rest, "#")
	if !ok {
		return Pointer{}, fmt.Errorf("%w: no #Lx-Ly", ErrInvalid)
	}
	p := Pointer{Repo: repo, Commit: commit}
	var err error
	if p.Path, err = Unescape(path); err != nil {
		return Pointer{}, err
	}
	if p.Start, p.End, err = parseLines(frag); err != nil {
		return Pointer{}, err
	}
	return p, p.Check()
}

// parseLines reads "Lx-Ly" or "Lx".
func parseLines(frag string) (int, int, error) {
	a, b, span := strings.Cut(frag, "-")
	start, err := lineNumber(a)
	if err != nil || !span {
		return start, start, err
	}
	end, err := lineNumber(b)
	return start, end, err
}

// lineNumber reads "Ln" with n a decimal of at most MaxLine, no sign.
func lineNumber(s string) (int, error) {
	d, ok := strings.CutPrefix(s, "L")
	if !ok || d == "" || len(d) > 10 || strings.Trim(d, "0123456789") != "" {
		return 0, fmt.Errorf("%w: line %q is not Ln", ErrInvalid, clip(s))
	}
	n, err := strconv.ParseInt(d, 10, 64)
	if err != nil || n > MaxLine {
		return 0, fmt.Errorf("%w: line %q", ErrInvalid, clip(s))
	}
	return int(n), nil
}

// Hash is the SHA-256 (lowercase hex) of b: a pointer's content hash is
// Hash of the exact bytes of its lines.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func isHex(s string) bool {
	if s == "" || len(s) > maxCommit {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// printable reports whether s is valid UTF-8 without spaces or controls.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
