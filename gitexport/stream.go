package gitexport

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The dump stream carries a repository between the gateway and the
// client, in both directions: the gateway writes it for an export (Dump)
// and the client turns it into Git (WriteGit); the client reads Git into
// it for an import (ReadGit) and the gateway rebuilds the repository from
// it (Load), verifying every hash on the way.
//
// Layout: the magic "NASDUMP1", then records, each a kind byte, a uvarint
// payload length and the payload (JSON unless said otherwise):
//
//	H  header: repoDoc
//	C  commit: commitDoc with "base", the commit whose tree the changes
//	   that follow apply to ("" for the empty tree)
//	E  a changed key: entryRec; with data "inline" one D record follows
//	   per chunk of the entry's content, in order
//	D  raw chunk bytes (at most 4 MiB)
//	F  end of the commit's changes
//	B  branch: branchDoc
//	K  checkpoint: checkpointDoc
//	Z  end: apiv1.Report (without repo and branches); nothing may follow
//	!  the writer failed: {"message": ...}; nothing may follow
//
// Commits come parents first. Memory on both sides is bounded by one
// record (a chunk, or an entry whose content list is large).
const (
	recHeader     = 'H'
	recCommit     = 'C'
	recEntry      = 'E'
	recData       = 'D'
	recCommitEnd  = 'F'
	recBranch     = 'B'
	recCheckpoint = 'K'
	recEnd        = 'Z'
	recError      = '!'
)

const (
	streamMagic = "NASDUMP1"
	// maxRecord bounds a record's payload.
	maxRecord = 64 << 20
)

// Data modes of an entry record.
const (
	dataNone   = ""       // no bytes: a delete, a lazy or an empty entry
	dataInline = "inline" // D records follow
	dataHave   = "have"   // the receiver already has every chunk
	dataFrom   = "from:"  // + commit ID: the key has the same content there
)

// Format and version of exports this package writes and reads.
const (
	formatName    = "agentnas-export"
	formatVersion = 1
)

// text is a string that survives JSON exactly: valid UTF-8 is a JSON
// string, anything else {"base64": "..."}.
type text string

func (t text) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(t)) {
		return marshalPlain(string(t))
	}
	return marshalPlain(map[string]string{"base64": base64.StdEncoding.EncodeToString([]byte(t))})
}

func (t *text) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			B64 string `json:"base64"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return err
		}
		v, err := base64.StdEncoding.DecodeString(o.B64)
		if err != nil {
			return err
		}
		*t = text(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

// marshalPlain is json.Marshal without HTML escaping and without the
// trailing newline: the canonical JSON of every document here.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// indentPlain is marshalPlain, indented, with a final newline: the form of
// the .nas JSON files.
func indentPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decodeStrict decodes one JSON document, refusing unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return formatf("%v", err)
	}
	if dec.More() {
		return formatf("trailing data after JSON")
	}
	return nil
}

// hexID formats a branch ID.
func hexID(id uint64) string { return fmt.Sprintf("%016x", id) }

func parseHexID(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, formatf("branch id %q: want 16 hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || hexID(v) != s {
		return 0, formatf("branch id %q: want 16 lower-case hex digits", s)
	}
	return v, nil
}

// repoDoc is the stream header and .nas/repo.json.
type repoDoc struct {
	Format        string `json:"format"`
	Version       int    `json:"version"`
	Repo          string `json:"repo"`
	DefaultBranch string `json:"default_branch"`
	Created       int64  `json:"created"` // unix nanoseconds
	Salt          string `json:"salt"`    // base64 of the tree salt
}

// commitDoc is a commit record and .nas/commit.json: every field of
// manifest.Commit exactly, plus the lineage record.
type commitDoc struct {
	ID         string    `json:"id"`
	Tree       string    `json:"tree"` // "" for the empty tree
	Parents    []string  `json:"parents"`
	Message    text      `json:"message"`
	Principal  text      `json:"principal"`
	OnBehalfOf text      `json:"on_behalf_of"`
	Run        text      `json:"run"`
	Lease      text      `json:"lease"`
	Time       int64     `json:"time"` // unix nanoseconds
	Extra      [][2]text `json:"extra"`
	Info       *infoDoc  `json:"info"` // null when the source kept none
	Base       *string   `json:"base,omitempty"`
}

type infoDoc struct {
	Branch  string       `json:"branch"`
	Seq     uint64       `json:"seq"`
	Lineage []lineageDoc `json:"lineage"`
}

type lineageDoc struct {
	Branch string `json:"branch"`
	MaxSeq uint64 `json:"max_seq"`
}

// entryRec is an entry record: one changed key.
type entryRec struct {
	Key    text   `json:"key"`
	Delete bool   `json:"delete,omitempty"`
	Entry  string `json:"entry,omitempty"`        // base64 of the canonical entry
	List   string `json:"content_list,omitempty"` // base64, when stored by reference
	Writer string `json:"writer,omitempty"`       // branch ID of its version record
	Data   string `json:"data,omitempty"`
}

// branchDoc is a branch record and an element of branches.json.
type branchDoc struct {
	Name      string `json:"name"`
	Head      string `json:"head"`
	GitHead   string `json:"git_head,omitempty"` // branches.json only
	Base      string `json:"base,omitempty"`
	Protected bool   `json:"protected"`
	Created   int64  `json:"created"`
}

// checkpointDoc is a checkpoint record and an element of checkpoints.json.
type checkpointDoc struct {
	Branch  string `json:"branch"`
	Name    text   `json:"name"`
	Commit  string `json:"commit"`
	Created int64  `json:"created"` // unix nanoseconds
}

// streamWriter writes records.
type streamWriter struct {
	w       *bufio.Writer
	started bool
}

func newStreamWriter(w io.Writer) *streamWriter {
	return &streamWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

func (s *streamWriter) record(kind byte, payload []byte) error {
	if !s.started {
		if _, err := s.w.WriteString(streamMagic); err != nil {
			return err
		}
		s.started = true
	}
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = kind
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	if _, err := s.w.Write(hdr[:1+n]); err != nil {
		return err
	}
	_, err := s.w.Write(payload)
	return err
}

func (s *streamWriter) json(kind byte, v any) error {
	b, err := marshalPlain(v)
	if err != nil {
		return err
	}
	return s.record(kind, b)
}

func (s *streamWriter) flush() error { return s.w.Flush() }

// fail writes an error record (best effort) and flushes.
func (s *streamWriter) fail(err error) {
	_ = s.json(recError, map[string]string{"message": err.Error()})
	_ = s.flush()
}

// streamReader reads records.
type streamReader struct {
	r       *bufio.Reader
	buf     []byte
	started bool
}

func newStreamReader(r io.Reader) *streamReader {
	return &streamReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next record; the payload is valid until the next call.
// A stream that ends without a Z record is an error; an error record is
// returned as an error.
func (s *streamReader) next() (byte, []byte, error) {
	if !s.started {
		var m [len(streamMagic)]byte
		if _, err := io.ReadFull(s.r, m[:]); err != nil || string(m[:]) != streamMagic {
			if err == nil {
				err = formatf("stream does not start with %s", streamMagic)
			}
			return 0, nil, fmt.Errorf("read stream: %w", err)
		}
		s.started = true
	}
	kind, err := s.r.ReadByte()
	if errors.Is(err, io.EOF) {
		return 0, nil, formatf("stream ended before its end record (truncated)")
	}
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(s.r)
	if err != nil {
		return 0, nil, truncated(err)
	}
	if n > maxRecord {
		return 0, nil, formatf("record of %d bytes", n)
	}
	if uint64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	s.buf = s.buf[:n]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		return 0, nil, truncated(err)
	}
	if kind == recError {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(s.buf, &e)
		return 0, nil, fmt.Errorf("the other side failed: %s: %w", e.Message, ErrRemote)
	}
	return kind, s.buf, nil
}

// expectEOF checks that nothing follows the end record, and reads the
// body to its end (a signed upload verifies there).
func (s *streamReader) expectEOF() error {
	var b [1]byte
	n, err := io.ReadFull(s.r, b[:])
	if n > 0 {
		return formatf("data after the end record")
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatf("stream truncated")
	}
	return err
}
