package memory

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentnas/nas/evidence"
)

// The kinds of note.
const (
	KindEpisodic   = "episodic"
	KindSemantic   = "semantic"
	KindProcedural = "procedural"
	KindPreference = "preference"
)

// Kinds lists the kinds of note.
var Kinds = []string{KindEpisodic, KindSemantic, KindProcedural, KindPreference}

// The origins of a note: who wrote it.
const (
	OriginOwner    = "owner"
	OriginAgent    = "agent"
	OriginExternal = "external"
)

// Bounds of a note.
const (
	// MaxSubject bounds a subject, in bytes.
	MaxSubject = 256
	// MaxBody bounds a body, in bytes.
	MaxBody = 64 << 10
	// MaxRefs bounds the sources, and the superseded IDs, of one note.
	MaxRefs = 64
	// MaxFrontMatter bounds the front matter, in bytes.
	MaxFrontMatter = 64 << 10
	// MaxFile bounds a note file: front matter, fences and body.
	MaxFile = MaxFrontMatter + MaxBody + 16
	// maxID bounds an ID, in bytes.
	maxID = 64
)

// DefaultConfidence is the confidence of a note whose writer gave none:
// neither sure nor doubtful.
const DefaultConfidence = 0.5

// IDPrefix starts every note ID.
const IDPrefix = "mem_"

// Note is a note's front matter and body. Its fields are apiv1.Note's,
// in the same order, so one converts to the other.
type Note struct {
	ID         string   `yaml:"id"`
	Kind       string   `yaml:"kind"`
	Subject    string   `yaml:"subject"`
	ValidFrom  string   `yaml:"valid_from"`
	ValidTo    *string  `yaml:"valid_to"`
	Confidence float64  `yaml:"confidence"`
	Origin     string   `yaml:"origin"`
	Reviewed   bool     `yaml:"reviewed"`
	Sources    []string `yaml:"sources"`
	Supersedes []string `yaml:"supersedes"`
	Body       string   `yaml:"-"`
}

// idEncoding writes new IDs: lowercase base32, no padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a new, unguessable note ID: mem_ and 80 random bits.
func NewID() string {
	var b [10]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return IDPrefix + idEncoding.EncodeToString(b[:])
}

// ValidID checks a note ID: mem_ and 1 to 60 lowercase letters and
// digits (the specification's mem_4kq2 is one; NewID's are others).
func ValidID(id string) error {
	rest, ok := strings.CutPrefix(id, IDPrefix)
	if !ok || rest == "" || len(id) > maxID || strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return fmt.Errorf("%w: note ID %q is not mem_ and lowercase letters and digits", ErrInvalid, clip(id))
	}
	return nil
}

// ValidTime checks a valid_from or valid_to: an RFC 3339 date
// (2026-10-02) or date and time (2026-10-02T09:30:00Z).
func ValidTime(s string) error {
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return nil
	}
	return fmt.Errorf("%w: %q is not an RFC 3339 date or time", ErrInvalid, clip(s))
}

// Validate checks n: a known kind and origin, a subject of one line, a
// confidence in 0..1, valid times, sources that are evidence pointers,
// superseded IDs that are note IDs (not n's own), and a UTF-8 body, each
// within its bound.
func (n *Note) Validate() error {
	if err := ValidID(n.ID); err != nil {
		return err
	}
	if err := n.validFields(); err != nil {
		return err
	}
	if err := n.validRefs(); err != nil {
		return err
	}
	if len(n.Body) > MaxBody || !utf8.ValidString(n.Body) {
		return fmt.Errorf("%w: the body must be UTF-8 of at most %d bytes", ErrInvalid, MaxBody)
	}
	return nil
}

// validFields checks the scalar fields of the front matter.
func (n *Note) validFields() error {
	switch {
	case !oneOf(n.Kind, Kinds...):
		return fmt.Errorf("%w: kind %q is not one of %s", ErrInvalid, clip(n.Kind), strings.Join(Kinds, ", "))
	case !oneOf(n.Origin, OriginOwner, OriginAgent, OriginExternal):
		return fmt.Errorf("%w: origin %q is not owner, agent or external", ErrInvalid, clip(n.Origin))
	case strings.TrimSpace(n.Subject) == "" || len(n.Subject) > MaxSubject || !oneLine(n.Subject):
		return fmt.Errorf("%w: the subject must be one line of 1 to %d bytes of UTF-8 text", ErrInvalid, MaxSubject)
	case !(n.Confidence >= 0 && n.Confidence <= 1): // NaN too
		return fmt.Errorf("%w: confidence %v is not in 0..1", ErrInvalid, n.Confidence)
	}
	if err := ValidTime(n.ValidFrom); err != nil {
		return fmt.Errorf("valid_from: %w", err)
	}
	if n.ValidTo != nil {
		if err := ValidTime(*n.ValidTo); err != nil {
			return fmt.Errorf("valid_to: %w", err)
		}
	}
	return nil
}

// validRefs checks the sources and the superseded IDs.
func (n *Note) validRefs() error {
	if len(n.Sources) > MaxRefs || len(n.Supersedes) > MaxRefs {
		return fmt.Errorf("%w: at most %d sources and %d superseded notes", ErrInvalid, MaxRefs, MaxRefs)
	}
	for _, s := range n.Sources {
		if _, err := evidence.Parse(s); err != nil {
			return fmt.Errorf("%w: source %q: %w", ErrInvalid, clip(s), err)
		}
	}
	for _, id := range n.Supersedes {
		if err := ValidID(id); err != nil {
			return fmt.Errorf("supersedes: %w", err)
		}
		if id == n.ID {
			return fmt.Errorf("%w: note %s supersedes itself", ErrInvalid, id)
		}
	}
	return nil
}

func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// oneLine reports whether s is valid UTF-8 text without control
// characters (line breaks included).
func oneLine(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
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
