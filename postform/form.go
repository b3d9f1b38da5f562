package postform

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
)

// MaxFields bounds the bytes of the names and values of the fields that
// precede the file, as S3 does (20 KiB).
const MaxFields = 20 << 10

// maxPreamble bounds every byte read before the file starts: the fields,
// their part headers and boundaries.
const maxPreamble = MaxFields + 64<<10

// FileField is the name of the file's field; it must be the last field
// that matters, since nothing after it is read.
const FileField = "file"

// Field is one form field: its name lower-cased, its value as sent.
type Field struct {
	Name, Value string
}

// Form is a POST form read up to its file: the fields before the file,
// in the order sent, and the file part, not yet read.
type Form struct {
	Fields []Field
	// File yields the file's bytes; read it to the end (io.EOF) to know
	// the form was complete.
	File io.Reader
	// FileName is the file part's filename ("" if none), without a
	// directory.
	FileName string
}

// Value returns the value of the field name (any case), "" if absent.
func (f *Form) Value(name string) string {
	v, _ := f.Lookup(name)
	return v
}

// Lookup returns the value of the field name (any case) and whether the
// form has it.
func (f *Form) Lookup(name string) (string, bool) {
	for _, fd := range f.Fields {
		if strings.EqualFold(fd.Name, name) {
			return fd.Value, true
		}
	}
	return "", false
}

// Require returns a *FieldError wrapping ErrMissingField for the first
// of names the form lacks or has empty.
func (f *Form) Require(names ...string) error {
	for _, n := range names {
		if f.Value(n) == "" {
			return &FieldError{Field: n, kind: ErrMissingField}
		}
	}
	return nil
}

// Read reads a multipart/form-data body with the given boundary up to
// the file part, which it returns unread in Form.File. It holds at most
// MaxFields bytes of fields and maxPreamble bytes of framing; errors wrap
// ErrMalformed, ErrFieldsTooLarge, ErrNoFile or ErrDuplicateField, or the
// body's own read error.
func Read(body io.Reader, boundary string) (*Form, error) {
	g := &preamble{src: body, left: maxPreamble}
	mr := multipart.NewReader(g, boundary)
	f := &Form{}
	seen := map[string]bool{}
	left := MaxFields
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, g.explain(err, io.EOF)
		}
		name := strings.ToLower(part.FormName())
		switch {
		case name == "":
			return nil, fmt.Errorf("%w: a part without a form-data name", ErrMalformed)
		case seen[name]:
			return nil, &FieldError{Field: name, kind: ErrDuplicateField}
		case name == FileField:
			g.open()
			f.File, f.FileName = part, part.FileName()
			return f, nil
		}
		seen[name] = true
		v, err := readValue(part, left-len(name))
		if err != nil {
			return nil, g.explain(err, nil)
		}
		left -= len(name) + len(v)
		f.Fields = append(f.Fields, Field{Name: name, Value: v})
	}
}

// readValue reads a field's value of at most max bytes.
func readValue(part io.Reader, max int) (string, error) {
	if max < 0 {
		return "", ErrFieldsTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(part, int64(max)+1))
	if err != nil {
		return "", err
	}
	if len(b) > max {
		return "", ErrFieldsTooLarge
	}
	return string(b), nil
}

// preamble is the body as the form reader sees it: bounded until the file
// starts, and remembering the body's own read error.
type preamble struct {
	src    io.Reader
	left   int  // bytes that may still be read before the file
	opened bool // the file started: no bound
	err    error
}

func (p *preamble) Read(b []byte) (int, error) {
	if !p.opened {
		if p.left <= 0 {
			return 0, ErrFieldsTooLarge
		}
		b = b[:min(len(b), p.left)]
	}
	n, err := p.src.Read(b)
	p.left -= n
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}

// open lifts the bound: the file's bytes follow.
func (p *preamble) open() { p.opened = true }

// explain turns a multipart error into this package's: the bound, the
// body's own failure, or malformed framing (an end of form where a part
// was due means the form has no file).
func (p *preamble) explain(err, end error) error {
	switch {
	case errors.Is(err, ErrFieldsTooLarge):
		return ErrFieldsTooLarge
	case p.err != nil:
		return fmt.Errorf("read form: %w", p.err)
	case end != nil && errors.Is(err, end):
		return ErrNoFile
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// Key returns the key field with ${filename} replaced by the file's name.
func (f *Form) Key() string {
	return strings.ReplaceAll(f.Value("key"), "${filename}", f.FileName)
}
