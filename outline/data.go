package outline

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxKeyDepth is how deep JSON and YAML outlines go.
const maxKeyDepth = 2

// jsonItems lists the keys of the top object and of objects directly in
// it, each with the lines from the key to the end of its value.
func jsonItems(data []byte, ls *Lines) ([]Item, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	var items []Item
	var notes []string
	switch tok {
	case json.Delim('{'):
		items, err = jsonObject(dec, ls, 1, "", nil)
	case json.Delim('['):
		var n int
		for n = 0; dec.More() && err == nil; n++ {
			err = skipValue(dec)
		}
		notes = append(notes, fmt.Sprintf("array of %d items", n))
	default:
		notes = append(notes, "a single value")
	}
	if err != nil {
		return nil, nil, err
	}
	return items, notes, nil
}

// jsonObject lists the keys of the object whose '{' dec just read.
func jsonObject(dec *json.Decoder, ls *Lines, level int, parent string, items []Item) ([]Item, error) {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		i := len(items)
		items = append(items, Item{Level: level, Kind: "key", Name: key, Path: joinPath(parent, key), Start: ls.LineOf(int(dec.InputOffset()) - 1)})
		tok, err = dec.Token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('{') && level < maxKeyDepth {
			items, err = jsonObject(dec, ls, level+1, items[i].Path, items)
		} else {
			err = skipOpened(dec, tok)
		}
		if err != nil {
			return nil, err
		}
		items[i].End = ls.LineOf(int(dec.InputOffset()) - 1)
	}
	_, err := dec.Token() // '}'
	return items, err
}

// skipValue reads one whole value.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return skipOpened(dec, tok)
}

// skipOpened reads the rest of a value whose first token was tok.
func skipOpened(dec *json.Decoder, tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "/" + name
}

// yamlItems lists the keys of the first document's top mapping and of
// mappings directly in it; a key runs to the line before the next key of
// its level (the last one to its parent's end).
func yamlItems(data []byte, ls *Lines) ([]Item, []string, error) {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	if errors.Is(err, io.EOF) {
		return nil, []string{"an empty document"}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, []string{"not a mapping at the top"}, nil
	}
	return yamlMapping(doc.Content[0], 1, "", ls.Count(), nil), nil, nil
}

func yamlMapping(m *yaml.Node, level int, parent string, end int, items []Item) []Item {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		stop := end
		if i+2 < len(m.Content) {
			stop = max(m.Content[i+2].Line-1, k.Line)
		}
		it := Item{Level: level, Kind: "key", Name: k.Value, Path: joinPath(parent, k.Value), Start: k.Line, End: stop}
		items = append(items, it)
		if v.Kind == yaml.MappingNode && level < maxKeyDepth {
			items = yamlMapping(v, level+1, it.Path, stop, items)
		}
	}
	return items
}

// csvNotes names a CSV file's columns and counts the rows after the
// header (records, so a quoted field may span lines).
func csvNotes(data []byte) ([]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return []string{"no header, no rows"}, nil
	}
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("columns (%d): %s", len(header), strings.Join(header, ", "))}
	rows := 0
	for {
		_, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		rows++
	}
	return append(notes, fmt.Sprintf("rows: %d", rows)), nil
}
