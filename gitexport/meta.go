package gitexport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/manifest"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// lineDoc is one line of a directory's %entries.jsonl: one key, its Git
// file name, readable copies of its metadata, and the authoritative
// values: the canonical entry encoding, the content list when stored by
// reference, and the branch that wrote its version. A line is valid only
// if it is exactly what renderLine gives for those values.
type lineDoc struct {
	Key               text      `json:"key"`
	Name              string    `json:"name"`
	Size              int64     `json:"size"`
	ETag              text      `json:"etag"`
	ContentType       text      `json:"content_type,omitempty"`
	Headers           [][2]text `json:"headers,omitempty"`
	Meta              [][2]text `json:"meta,omitempty"`
	Tags              [][2]text `json:"tags,omitempty"`
	VersionID         text      `json:"version_id,omitempty"`
	ModTime           string    `json:"mod_time"`
	ChecksumAlgorithm text      `json:"checksum_algorithm,omitempty"`
	ChecksumValue     text      `json:"checksum_value,omitempty"`
	ChecksumType      text      `json:"checksum_type,omitempty"`
	Lazy              *lazyDoc  `json:"lazy,omitempty"`
	Labels            *labelDoc `json:"labels,omitempty"`
	Chunks            int       `json:"chunks"`
	Parts             int       `json:"parts,omitempty"`
	Writer            string    `json:"writer,omitempty"`
	Entry             string    `json:"entry"`
	List              string    `json:"content_list,omitempty"`
}

// lazyDoc is the remote object a lazily attached entry stands for.
type lazyDoc struct {
	Source    text `json:"source"`
	Key       text `json:"key"`
	ETag      text `json:"etag,omitempty"`
	VersionID text `json:"version_id,omitempty"`
}

// labelDoc is a version's stored trust labels, readable (the entry
// encoding holds them too); a version without is owner and private.
type labelDoc struct {
	Origin      string `json:"origin"`
	Sensitivity string `json:"sensitivity"`
	Reviewed    bool   `json:"reviewed,omitempty"`
}

// fileRec is what a line is rendered from.
type fileRec struct {
	key    string
	entry  []byte // canonical entry encoding
	list   []byte // encoded content list, when stored by reference
	writer string // hex branch ID, "" when the version has no record
}

// renderLine renders the metadata line of f under Git file name name
// (without the newline).
func renderLine(f *fileRec, name string) ([]byte, error) {
	e, err := manifest.DecodeEntry(f.entry)
	if err != nil {
		return nil, mismatchf("%q: entry: %v", f.key, err)
	}
	d := lineDoc{Key: text(f.key), Name: name, Size: e.Size, ETag: text(e.ETag), ContentType: text(e.ContentType),
		VersionID: text(e.VersionID), ModTime: time.Unix(0, e.ModTime).UTC().Format(time.RFC3339Nano),
		ChecksumAlgorithm: text(e.ChecksumAlgorithm), ChecksumValue: text(e.ChecksumValue), ChecksumType: text(e.ChecksumType),
		Writer: f.writer, Entry: base64.StdEncoding.EncodeToString(f.entry)}
	for _, p := range e.Headers {
		d.Headers = append(d.Headers, [2]text{text(p.Name), text(p.Value)})
	}
	for _, p := range e.Meta {
		d.Meta = append(d.Meta, [2]text{text(p.Name), text(p.Value)})
	}
	for _, p := range e.Tags {
		d.Tags = append(d.Tags, [2]text{text(p.Name), text(p.Value)})
	}
	if l := e.Label; l != nil {
		d.Labels = &labelDoc{Origin: l.Origin, Sensitivity: l.Sensitivity, Reviewed: l.Reviewed}
	}
	if e.Remote != nil {
		d.Lazy = &lazyDoc{Source: text(e.Remote.Source), Key: text(e.Remote.Key), ETag: text(e.Remote.ETag), VersionID: text(e.Remote.VersionID)}
	}
	switch {
	case e.Content != nil:
		d.Chunks, d.Parts = len(e.Content.Chunks), len(e.Content.Parts)
	case !e.ContentRef.IsZero():
		c, err := manifest.DecodeContent(f.list)
		if err != nil {
			return nil, mismatchf("%q: content list: %v", f.key, err)
		}
		d.Chunks, d.Parts = len(c.Chunks), len(c.Parts)
		d.List = base64.StdEncoding.EncodeToString(f.list)
	}
	return marshalPlain(d)
}

// parseLine reads a metadata line back into what it was rendered from
// and checks that it is exactly that rendering.
func parseLine(line []byte) (*fileRec, string, error) {
	var d lineDoc
	if err := decodeStrict(line, &d); err != nil {
		return nil, "", err
	}
	f := &fileRec{key: string(d.Key), writer: d.Writer}
	var err error
	if f.entry, err = base64.StdEncoding.DecodeString(d.Entry); err != nil {
		return nil, "", formatf("%q: entry: %v", f.key, err)
	}
	if d.List != "" {
		if f.list, err = base64.StdEncoding.DecodeString(d.List); err != nil {
			return nil, "", formatf("%q: content list: %v", f.key, err)
		}
	}
	if d.Writer != "" {
		if _, err := parseHexID(d.Writer); err != nil {
			return nil, "", err
		}
	}
	want, err := renderLine(f, d.Name)
	if err != nil {
		return nil, "", err
	}
	if !bytes.Equal(want, line) {
		return nil, "", mismatchf("the metadata line of %q was altered: it does not match the entry it carries", f.key)
	}
	return f, d.Name, nil
}

// gitCommit renders the Git commit of a nas commit: author and committer
// are the principal at the commit's time, the message is the commit's
// message followed by trailers. Import renders it again and compares
// hashes, so any edit to a commit is found.
func gitCommit(id manifest.CommitID, c *manifest.Commit, tree plumbing.Hash, parents []plumbing.Hash) *object.Commit {
	sig := object.Signature{Name: identName(c.Principal), Email: identEmail(c.Principal), When: gitTime(c.Time)}
	msg := strings.TrimRight(strings.ReplaceAll(c.Message, "\x00", "\uFFFD"), "\n")
	if strings.TrimSpace(msg) == "" {
		msg = "(no message)"
	}
	var tr strings.Builder
	for _, t := range [][2]string{{"Run", c.Run}, {"Lease", c.Lease}, {"Principal", c.Principal},
		{"On-Behalf-Of", c.OnBehalfOf}, {"Nas-Commit", id.String()}} {
		if t[1] != "" {
			fmt.Fprintf(&tr, "%s: %s\n", t[0], trailerValue(t[1]))
		}
	}
	return &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents,
		Message: msg + "\n\n" + tr.String()}
}

func gitTime(ns int64) time.Time {
	if ns < 0 {
		ns = 0
	}
	return time.Unix(0, ns).UTC()
}

// trailerValue quotes a value that would not survive as one trailer line.
func trailerValue(v string) string {
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}

// identName makes a Git ident name: no '<', '>' or control characters.
func identName(p string) string {
	s := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, strings.TrimSpace(p))
	if s == "" {
		return "nas"
	}
	return s
}

// identEmail makes an address of the principal in the reserved .invalid
// domain: it names the principal, it is not a mailbox.
func identEmail(p string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r) {
			return r
		}
		return '_'
	}, p)
	if s == "" {
		s = "nas"
	}
	return s + "@nas.invalid"
}

// validRefName reports whether refs/heads/<name> is a ref Git accepts
// (branch names are [a-z0-9][a-z0-9._-]* segments, so only these rules
// can fail).
func validRefName(name string) bool {
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") || strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, ".lock") {
			return false
		}
	}
	return !strings.Contains(name, "..")
}

// readme is .nas/README: the format, for a person who finds the export.
const readme = `This Git repository is an export of an Agent NAS repository
(format agentnas-export, version 1). "nas import" reads it back into a
gateway with the same tree roots and commit IDs.

Layout of every commit
  <path>               the object's bytes, at its escaped key (below)
  .nas/repo.json       format, repository, default branch, creation time,
                       and the tree salt (it shapes the repository's trees;
                       keep it private)
  .nas/commit.json     the nas commit exactly: id, tree root, parents,
                       message, principal, on_behalf_of, run, lease, time
                       (unix ns), extra pairs, and the lineage record
                       (info) that version visibility is computed from
  .nas/objects/<dir>/%entries.jsonl
                       one JSON line per key directly in <dir>: key, file
                       name, size, etag, content type, headers, user
                       metadata, tags, version id, modification time, checksum,
                       lazy source reference, trust labels (origin,
                       sensitivity, reviewed; absent: owner and private; the
                       repository's label rules are not exported), and the
                       authoritative values:
                       "entry" (base64 of the canonical entry encoding),
                       "content_list" (base64, when stored by reference;
                       it holds the chunk boundaries), "writer" (the branch
                       that wrote the version)
The commit message ends with trailers: Run, Lease, Principal,
On-Behalf-Of, Nas-Commit (the nas commit ID). Author and committer are the
principal at the commit's time.

refs/heads/<branch> are the branches; refs/tags/nas/export is a commit
whose parents are every exported root and whose tree holds branches.json,
checkpoints.json and report.json (what the export could not carry:
uncommitted changes, delete markers, the trash, open uploads).

Key escaping: a key is split at "/"; each segment becomes one name.
  - '%', '\', control bytes and bytes that are not UTF-8 become %XX
    (upper-case hex);
  - an empty segment ("a//b", "dir/") becomes "%";
  - ".", "..", names Git reads as .git (any case, .gitmodules, .git. ,
    HFS-ignorable characters), NTFS short names (a '~' and a digit within
    the first seven bytes) and a first segment ".nas" (any case) get their
    first byte escaped (%2Egit, %2E., %67it~1);
  - an object whose key is also a directory ("x" beside "x/y") is stored
    as "x%~".
Decoding is exact: a name that escaping would not produce is refused.
Lazily attached objects have a metadata line (with "lazy") but no file:
their bytes stay in the attached source.
`
