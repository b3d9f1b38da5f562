package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gopkg.in/yaml.v3"
)

// fence opens and closes the front matter, each on a line of its own.
const fence = "---\n"

// Parse reads a note file: the front matter between the two fences,
// then the body, and validates it. It never panics; every malformed input
// answers an error wrapping ErrInvalid.
func Parse(b []byte) (*Note, error) {
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%w: a note file is at most %d bytes", ErrInvalid, MaxFile)
	}
	rest, ok := bytes.CutPrefix(b, []byte(fence))
	if !ok {
		return nil, fmt.Errorf("%w: a note starts with a --- line", ErrInvalid)
	}
	front, body, ok := cutFence(rest)
	if !ok {
		return nil, fmt.Errorf("%w: no --- line ends the front matter", ErrInvalid)
	}
	if len(front) > MaxFrontMatter {
		return nil, fmt.Errorf("%w: the front matter is over %d bytes", ErrInvalid, MaxFrontMatter)
	}
	n, err := decodeFront(front)
	if err != nil {
		return nil, err
	}
	n.Body = string(body)
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// cutFence splits b at its first line that is exactly "---": the front
// matter before it, the body after it.
func cutFence(b []byte) (front, body []byte, ok bool) {
	if rest, ok := bytes.CutPrefix(b, []byte(fence)); ok {
		return nil, rest, true
	}
	if i := bytes.Index(b, []byte("\n"+fence)); i >= 0 {
		return b[:i+1], b[i+1+len(fence):], true
	}
	if rest, ok := bytes.CutSuffix(b, []byte("\n---")); ok {
		return append(rest, '\n'), nil, true
	}
	return nil, nil, false
}

// decodeFront decodes the front matter: one YAML mapping (keys the
// format does not know are ignored). yaml.v3 bounds alias expansion;
// a panic inside it, were one ever found, is answered as an invalid note
// rather than taking the gateway down.
func decodeFront(front []byte) (n *Note, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("%w: front matter: the YAML parser failed: %v", ErrInvalid, r)
		}
	}()
	n = &Note{}
	dec := yaml.NewDecoder(bytes.NewReader(front))
	if err := dec.Decode(n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty front matter", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: front matter: %v", ErrInvalid, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: front matter holds more than one YAML document", ErrInvalid)
	}
	return n, nil
}

// Render writes n as a note file, after validating it: the front matter
// in the order and shape of the package doc, then the body as it is.
func Render(n *Note) ([]byte, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v)
	}
	add("id", str(n.ID))
	add("kind", str(n.Kind))
	add("subject", str(n.Subject))
	add("valid_from", timeNode(n.ValidFrom))
	add("valid_to", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
	if n.ValidTo != nil {
		doc.Content[len(doc.Content)-1] = timeNode(*n.ValidTo)
	}
	add("confidence", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: floatText(n.Confidence)})
	add("origin", str(n.Origin))
	add("reviewed", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(n.Reviewed)})
	add("sources", list(n.Sources, 0))
	add("supersedes", list(n.Supersedes, yaml.FlowStyle))
	var buf bytes.Buffer
	buf.WriteString(fence)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render note %s: %w", n.ID, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render note %s: %w", n.ID, err)
	}
	buf.WriteString(fence)
	buf.WriteString(n.Body)
	return buf.Bytes(), nil
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// timeNode writes a valid time as YAML writes a timestamp, unquoted; it
// still decodes into a string as written.
func timeNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: s}
}

// floatText writes a confidence so that YAML reads it back as the same
// float: 0.8, 1.0, 0.0.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if f == float64(int64(f)) {
		s += ".0"
	}
	return s
}

func list(items []string, style yaml.Style) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: style}
	if len(items) == 0 {
		l.Style = yaml.FlowStyle
	}
	for _, s := range items {
		l.Content = append(l.Content, str(s))
	}
	return l
}
