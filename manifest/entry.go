package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/seal"
)

// MaxSize is the largest object S3 allows, 5 TiB; no entry is larger, and
// every size computed from a request is checked against it.
const MaxSize = 5 << 40

// Entry is one version of one object.
type Entry struct {
	Size      int64
	ETag      string // without quotes: hex MD5, or hex-N for multipart
	ModTime   int64  // unix nanoseconds
	VersionID string

	ContentType string
	// Headers holds the other stored content headers, canonical names
	// (Cache-Control, Content-Disposition, Content-Encoding,
	// Content-Language, Expires), sorted by name.
	Headers []Pair
	// Meta holds user metadata (x-amz-meta-*), names lower-cased without the
	// prefix, sorted by name.
	Meta []Pair
	// Tags is the object's tag set (S3 object tagging), sorted by tag key;
	// keys are unique. Tags belong to the version: changing them restages
	// the same version (see branch.Service.SetTags). Encoded under its own
	// tag, so entries written before the field existed decode unchanged.
	Tags []Pair
	// ACL is the version's access control list as a client set it (S3
	// object ACLs); nil means none was set, which answers as private. It
	// grants nothing (see package acl) and, like Tags, belongs to the
	// version: changing it restages the same version (branch.Service.SetACL).
	// Encoded under its own tag (acl.Encode), so entries written before
	// the field existed decode and re-encode unchanged.
	ACL *acl.ACL
	// Label is the version's trust labels (package label); nil is the
	// default, owner and private, which every entry written before labels
	// existed carries. Encoded under its own tag, so those decode and
	// re-encode unchanged.
	Label *label.Label

	ChecksumAlgorithm string // CRC32, CRC32C, CRC64NVME, SHA1, SHA256 or ""
	ChecksumValue     string // base64, "-N" suffix for composite
	ChecksumType      string // FULL_OBJECT or COMPOSITE

	// Content is the chunk list when it is short enough to sit in the entry;
	// otherwise ContentRef names a content list stored by hash.
	Content    *Content
	ContentRef chunk.Hash

	// Remote, when set and the entry holds no content, makes the entry lazy:
	// its bytes live in an attached source (package source) and are fetched
	// on first read. Encoded under its own tag, so entries written before
	// the field existed decode unchanged.
	Remote *Remote

	// Edges is set on an uploaded multipart part only: the first and
	// last bytes of its body, so completion can scan the joints between
	// parts for secrets (package secret). Never set on a version.
	// Encoded under its own tag, so entries without it decode unchanged.
	Edges *Edges

	// Retention is the version's retention class, chosen when it was
	// written: "" (normal), RetentionScratch or RetentionSensitive (its
	// content is sealed). Encoded under its own tag, so entries without
	// it decode unchanged.
	Retention string
}

// The retention classes besides normal ("").
const (
	RetentionScratch   = label.Scratch
	RetentionSensitive = label.Sensitive
)

// Edges are the two ends of a part's body: Head its first bytes and Tail
// its last, or Head the whole body and Tail empty when the body is short.
// The writer bounds them (s3api keeps secret.Edge bytes each, the whole
// body up to twice that).
//
// Encoding (inside the entry's tagEdges field): a format byte 1, then
// tag 1 head, tag 2 tail, empty fields omitted; 1 to about 6 bytes plus
// the two ends.
type Edges struct {
	Head, Tail []byte
}

// Remote names the object of an attached source that a lazy entry stands
// for, and the version of it the entry pins. A read must return exactly
// the pinned bytes or fail; it never mixes versions.
//
// Encoding (inside the entry's tagRemote field, canonical like the entry):
// tag 1 source ID, 2 key, 3 ETag, 4 version ID; empty fields omitted. About
// 20 bytes plus the key and ETag.
type Remote struct {
	Source    string // the source's ID in the registry ("src_…")
	Key       string // the object's key relative to the source's root
	ETag      string // the pinned ETag, without quotes
	VersionID string // the pinned remote version; "" when the remote keeps none
}

// Lazy reports whether e's bytes are not stored locally but in an attached
// source: it has a Remote and no content of its own.
func (e *Entry) Lazy() bool {
	return e.Remote != nil && e.Content == nil && e.ContentRef.IsZero()
}

// Pair is a name and a value.
type Pair struct{ Name, Value string }

// Content is what an object's bytes are made of.
type Content struct {
	Chunks []chunk.Ref
	// Parts lists the part sizes and checksums of a multipart object, in
	// order; empty for a single PUT.
	Parts []Part
	// Seal, when set, says the chunks hold sealed bytes (package seal):
	// the object's plaintext is its segments in order, each sealed under
	// its own salt and the domain key Seal names. A copy that shares the
	// chunks shares the seal, so destroying the key reaches it too.
	Seal *Seal
}

// Seal names the key that sealed a content's segments and the segments.
//
// Encoding (inside the content's tagSeal field): tag 1 domain, 2 key ID,
// 3 a segment (its 16-byte salt then its plaintext size as a uvarint),
// repeated in order.
type Seal struct {
	Domain   string
	KeyID    string
	Segments []SealSegment
}

// SealSegment is one sealed segment: a single PUT is one, a multipart
// object one a part.
type SealSegment struct {
	Salt []byte // seal.SaltSize bytes
	Size int64  // plaintext bytes
}

// PlainSize is the plaintext size of the sealed content; -1 when it
// exceeds MaxSize (no object is that large: a hostile list, as an import
// can carry, cannot overflow the sum).
func (s *Seal) PlainSize() int64 {
	var n int64
	for _, g := range s.Segments {
		if n += g.Size; n > MaxSize {
			return -1
		}
	}
	return n
}

func (s *Seal) encode() []byte {
	var w enc
	w.str(1, s.Domain)
	w.str(2, s.KeyID)
	for _, g := range s.Segments {
		w.bytes(3, binary.AppendUvarint(append([]byte(nil), g.Salt...), uint64(g.Size)))
	}
	return w.b
}

// sealSalt is a segment salt's size.
const sealSalt = seal.SaltSize

func decodeSeal(b []byte) (*Seal, error) {
	s := &Seal{}
	d := dec{b: b}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		switch tag {
		case 1:
			s.Domain = string(v)
		case 2:
			s.KeyID = string(v)
		case 3:
			if len(v) <= sealSalt {
				return nil, ErrCorrupt
			}
			sz, err := uintOf(v[sealSalt:])
			if err != nil || sz > MaxSize {
				return nil, ErrCorrupt
			}
			s.Segments = append(s.Segments, SealSegment{Salt: bytes.Clone(v[:sealSalt]), Size: int64(sz)})
		}
	}
	if d.err != nil || s.Domain == "" || s.KeyID == "" || len(s.Segments) == 0 {
		return nil, ErrCorrupt
	}
	return s, nil
}

// Part is one part of a multipart object.
type Part struct {
	Size     int64
	Checksum string // base64 of the part's checksum, if the upload had one
}

// inlineContentMax is the largest encoded Content kept inside its Entry.
const inlineContentMax = 1 << 10

const (
	tagSize = iota + 1
	tagETag
	tagModTime
	tagVersionID
	tagContentType
	tagHeader
	tagMeta
	tagChecksumAlgorithm
	tagChecksumValue
	tagChecksumType
	tagContent
	tagContentRef
	tagRemote
	tagTags  // one field per tag, in tag-key order
	tagACL   // acl.Encode of the ACL, when one is set
	tagLabel // label.Encode of the labels, when set
	tagEdges // Edges.encode, on parts
	tagRetention
)

// SetContent stores c in the entry, inline when small; when it is too large
// it returns the encoded list and its hash, which the caller must store
// (Store.PutContent or ContentKey in its transaction) before the entry.
func (e *Entry) SetContent(c *Content) (chunk.Hash, []byte) {
	b := c.Encode()
	if len(b) <= inlineContentMax {
		e.Content, e.ContentRef = c, chunk.Hash{}
		return chunk.Hash{}, nil
	}
	h := chunk.Sum(b)
	e.Content, e.ContentRef = nil, h
	return h, b
}

// Encode returns the canonical encoding of e.
func (e *Entry) Encode() []byte {
	var w enc
	w.b = make([]byte, 0, 128)
	w.uint(tagSize, uint64(e.Size))
	w.str(tagETag, e.ETag)
	w.int(tagModTime, e.ModTime)
	w.str(tagVersionID, e.VersionID)
	w.str(tagContentType, e.ContentType)
	for _, p := range sortedPairs(e.Headers) {
		w.bytes(tagHeader, encodePair(p))
	}
	for _, p := range sortedPairs(e.Meta) {
		w.bytes(tagMeta, encodePair(p))
	}
	w.str(tagChecksumAlgorithm, e.ChecksumAlgorithm)
	w.str(tagChecksumValue, e.ChecksumValue)
	w.str(tagChecksumType, e.ChecksumType)
	if e.Content != nil {
		w.bytes(tagContent, e.Content.Encode())
	}
	if !e.ContentRef.IsZero() {
		w.bytes(tagContentRef, e.ContentRef[:])
	}
	if e.Remote != nil {
		w.bytes(tagRemote, e.Remote.encode())
	}
	for _, p := range sortedPairs(e.Tags) {
		w.bytes(tagTags, encodePair(p))
	}
	if e.ACL != nil {
		w.bytes(tagACL, acl.Encode(*e.ACL))
	}
	if e.Label != nil {
		w.bytes(tagLabel, label.Encode(*e.Label))
	}
	if e.Edges != nil {
		w.bytes(tagEdges, e.Edges.encode())
	}
	w.str(tagRetention, e.Retention)
	return w.b
}

// DecodeEntry decodes an Entry written by Encode.
func DecodeEntry(b []byte) (*Entry, error) {
	e := &Entry{}
	d := dec{b: b}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		var err error
		switch tag {
		case tagSize:
			var u uint64
			u, err = uintOf(v)
			e.Size = int64(u)
		case tagETag:
			e.ETag = string(v)
		case tagModTime:
			e.ModTime, err = intOf(v)
		case tagVersionID:
			e.VersionID = string(v)
		case tagContentType:
			e.ContentType = string(v)
		case tagHeader, tagMeta, tagTags:
			err = e.addPair(tag, v)
		case tagChecksumAlgorithm:
			e.ChecksumAlgorithm = string(v)
		case tagChecksumValue:
			e.ChecksumValue = string(v)
		case tagChecksumType:
			e.ChecksumType = string(v)
		case tagContent:
			e.Content, err = DecodeContent(v)
		case tagContentRef:
			if len(v) != chunk.HashSize {
				err = ErrCorrupt
			}
			copy(e.ContentRef[:], v)
		case tagRemote:
			e.Remote, err = decodeRemote(v)
		case tagACL:
			var a acl.ACL
			a, err = acl.Decode(v)
			e.ACL = &a
		case tagLabel:
			var l label.Label
			l, err = label.Decode(v)
			e.Label = &l
		case tagEdges:
			e.Edges, err = decodeEdges(v)
		case tagRetention:
			e.Retention = string(v)
		}
		if err != nil {
			return nil, fmt.Errorf("decode entry: %w", ErrCorrupt)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode entry: %w", d.err)
	}
	if e.Size < 0 {
		return nil, fmt.Errorf("decode entry: negative size: %w", ErrCorrupt)
	}
	return e, nil
}

// addPair decodes v and appends it to the list its tag names.
func (e *Entry) addPair(tag uint64, v []byte) error {
	p, err := decodePair(v)
	if err != nil {
		return err
	}
	switch tag {
	case tagHeader:
		e.Headers = append(e.Headers, p)
	case tagMeta:
		e.Meta = append(e.Meta, p)
	default:
		e.Tags = append(e.Tags, p)
	}
	return nil
}

const (
	tagRemoteSource = iota + 1
	tagRemoteKey
	tagRemoteETag
	tagRemoteVersionID
)

func (r *Remote) encode() []byte {
	var w enc
	w.str(tagRemoteSource, r.Source)
	w.str(tagRemoteKey, r.Key)
	w.str(tagRemoteETag, r.ETag)
	w.str(tagRemoteVersionID, r.VersionID)
	if len(w.b) == 0 {
		// An empty Remote still marks the entry; keep it distinguishable
		// from no Remote at all (decodeRemote rejects it as corrupt).
		return []byte{0}
	}
	return w.b
}

func decodeRemote(b []byte) (*Remote, error) {
	r := &Remote{}
	d := dec{b: b}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		switch tag {
		case tagRemoteSource:
			r.Source = string(v)
		case tagRemoteKey:
			r.Key = string(v)
		case tagRemoteETag:
			r.ETag = string(v)
		case tagRemoteVersionID:
			r.VersionID = string(v)
		}
	}
	if d.err != nil || r.Source == "" {
		return nil, ErrCorrupt
	}
	return r, nil
}

// edgesFormat is the first byte of an encoded Edges.
const edgesFormat = 1

func (x *Edges) encode() []byte {
	w := enc{b: []byte{edgesFormat}}
	w.bytes(1, x.Head)
	w.bytes(2, x.Tail)
	return w.b
}

// decodeEdges decodes the Edges of an entry's tagEdges field.
func decodeEdges(b []byte) (*Edges, error) {
	if len(b) == 0 || b[0] != edgesFormat {
		return nil, fmt.Errorf("decode edges: format: %w", ErrCorrupt)
	}
	x := &Edges{}
	d := dec{b: b[1:]}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		switch tag {
		case 1:
			x.Head = slices.Clone(v)
		case 2:
			x.Tail = slices.Clone(v)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode edges: %w", d.err)
	}
	return x, nil
}

func encodePair(p Pair) []byte {
	b := binary.AppendUvarint(nil, uint64(len(p.Name)))
	b = append(b, p.Name...)
	return append(b, p.Value...)
}

func decodePair(v []byte) (Pair, error) {
	l, n := binary.Uvarint(v)
	if n <= 0 || l > uint64(len(v)-n) {
		return Pair{}, ErrCorrupt
	}
	return Pair{Name: string(v[n : n+int(l)]), Value: string(v[n+int(l):])}, nil
}

func sortedPairs(ps []Pair) []Pair {
	if slices.IsSortedFunc(ps, comparePairs) {
		return ps
	}
	s := slices.Clone(ps)
	slices.SortStableFunc(s, comparePairs)
	return s
}

func comparePairs(a, b Pair) int { return strings.Compare(a.Name, b.Name) }

const (
	tagChunk = iota + 1
	tagPart
	tagSeal
)

// Encode returns the canonical encoding of c.
func (c *Content) Encode() []byte {
	var w enc
	w.b = make([]byte, 0, len(c.Chunks)*(chunk.HashSize+5)+len(c.Parts)*8)
	var ref [chunk.HashSize + binary.MaxVarintLen32]byte
	for _, r := range c.Chunks {
		copy(ref[:], r.Hash[:])
		n := binary.PutUvarint(ref[chunk.HashSize:], uint64(r.Size))
		// A chunk ref is never empty, so it is always written.
		w.b = binary.AppendUvarint(w.b, tagChunk)
		w.b = binary.AppendUvarint(w.b, uint64(chunk.HashSize+n))
		w.b = append(w.b, ref[:chunk.HashSize+n]...)
	}
	for _, p := range c.Parts {
		pb := binary.AppendUvarint(nil, uint64(p.Size))
		pb = append(pb, p.Checksum...)
		w.b = binary.AppendUvarint(w.b, tagPart)
		w.b = binary.AppendUvarint(w.b, uint64(len(pb)))
		w.b = append(w.b, pb...)
	}
	if c.Seal != nil {
		w.bytes(tagSeal, c.Seal.encode())
	}
	return w.b
}

// DecodeContent decodes a Content written by Encode.
func DecodeContent(b []byte) (*Content, error) {
	c := &Content{}
	d := dec{b: b}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		switch tag {
		case tagChunk:
			if len(v) <= chunk.HashSize {
				return nil, ErrCorrupt
			}
			var r chunk.Ref
			copy(r.Hash[:], v)
			sz, err := uintOf(v[chunk.HashSize:])
			if err != nil || sz > cas.ChunkMax {
				return nil, ErrCorrupt
			}
			r.Size = uint32(sz)
			c.Chunks = append(c.Chunks, r)
		case tagPart:
			sz, n := binary.Uvarint(v)
			if n <= 0 {
				return nil, ErrCorrupt
			}
			c.Parts = append(c.Parts, Part{Size: int64(sz), Checksum: string(v[n:])})
		case tagSeal:
			var err error
			if c.Seal, err = decodeSeal(v); err != nil {
				return nil, err
			}
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// PlainSize returns the object bytes c holds: the chunks' sum, or for
// sealed content its segments' plaintext; ok is false when sealed chunks
// do not add up to the sealed size of the segments.
func (c *Content) PlainSize() (n int64, ok bool) {
	if c.Seal == nil {
		return c.Size(), true
	}
	n = c.Seal.PlainSize()
	if n < 0 {
		return n, false
	}
	var sealed int64
	for _, g := range c.Seal.Segments {
		sealed += seal.CipherSize(g.Size) // at most MaxSize plus 16 bytes a frame: no overflow
	}
	return n, sealed == c.Size()
}

// StoredSize is the bytes e's chunks hold, given its content c (nil for
// none): its size, or for sealed content the sealed bytes. Tools that
// copy chunks verbatim (exports, dumps) move this many.
func StoredSize(e *Entry, c *Content) int64 {
	if c != nil && c.Seal != nil {
		return c.Size()
	}
	return e.Size
}

// Size returns the sum of the chunk sizes (sealed bytes, for sealed
// content).
func (c *Content) Size() int64 {
	var n int64
	for _, r := range c.Chunks {
		n += int64(r.Size)
	}
	return n
}
