package outline

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Format is how a file is outlined.
type Format string

// The formats.
const (
	Markdown Format = "markdown"
	JSON     Format = "json"
	YAML     Format = "yaml"
	CSV      Format = "csv"
	Go       Format = "go"
	Python   Format = "python"
	Text     Format = "text"
	Binary   Format = "binary"
)

// headLines is how many first lines a text outline shows.
const headLines = 10

// Detect chooses a format by the extension of name.
func Detect(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return Markdown
	case ".json":
		return JSON
	case ".yaml", ".yml":
		return YAML
	case ".csv":
		return CSV
	case ".go":
		return Go
	case ".py":
		return Python
	}
	return Text
}

// Item is one named part of a file at lines Start..End (1-based,
// inclusive). Level 1 is the top; Path is the names from the top down to
// this one, joined by "/".
type Item struct {
	Level int
	Kind  string // "heading", "key", "func", "type", "const", "var", "def", "class"
	Name  string
	Path  string
	Start int
	End   int
}

// Outline is a file's structure.
type Outline struct {
	Format Format
	Lines  int
	Bytes  int
	Notes  []string // facts about the whole file ("rows: 12", why a parser gave up)
	Items  []Item
	Head   []string // the first lines, for text
}

// BuildLines outlines the data ls indexes, read as the format of name.
// It never fails: a file its format's parser refuses is outlined as text,
// with a note saying why.
func BuildLines(name string, ls *Lines) *Outline {
	data := ls.data
	o := &Outline{Format: Detect(name), Lines: ls.Count(), Bytes: len(data)}
	if isBinary(data) {
		o.Format = Binary
		return o
	}
	var err error
	switch o.Format {
	case Markdown:
		o.Items, err = markdownItems(data, ls)
	case JSON:
		o.Items, o.Notes, err = jsonItems(data, ls)
	case YAML:
		o.Items, o.Notes, err = yamlItems(data, ls)
	case CSV:
		o.Notes, err = csvNotes(data)
	case Go:
		o.Items, err = goItems(data, ls)
	case Python:
		o.Items = pythonItems(data, ls)
	}
	if err != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("not valid %s (%v): outlined as text", o.Format, err))
		o.Format, o.Items = Text, nil
	}
	if o.Format == Text {
		o.Head = head(ls)
	}
	return o
}

// isBinary reports whether data looks binary: a NUL byte or invalid UTF-8
// in its first 8 KiB (a rune cut at the 8 KiB edge is not counted).
func isBinary(data []byte) bool {
	b := data[:min(len(data), 8<<10)]
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 && (len(b) >= utf8.UTFMax || utf8.FullRune(b)) {
			return true
		}
		b = b[n:]
	}
	return false
}

// head returns the first lines of a file, without their "\n".
func head(ls *Lines) []string {
	var out []string
	for i := 1; i <= min(ls.Count(), headLines); i++ {
		b, _ := ls.Slice(i, i)
		out = append(out, strings.TrimRight(string(b), "\r\n"))
	}
	return out
}

// withPaths fills in the Path of items listed in document order, from
// their levels.
func withPaths(items []Item) []Item {
	var stack []string
	for i := range items {
		lv := max(items[i].Level, 1)
		if lv-1 < len(stack) {
			stack = stack[:lv-1]
		}
		for len(stack) < lv-1 {
			stack = append(stack, "")
		}
		stack = append(stack, items[i].Name)
		items[i].Path = strings.Join(stack, "/")
	}
	return items
}

// Section finds an item by name: first an item whose Path is name, else
// the first whose Name is.
func (o *Outline) Section(name string) (Item, bool) {
	for _, it := range o.Items {
		if it.Path == name {
			return it, true
		}
	}
	for _, it := range o.Items {
		if it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}
