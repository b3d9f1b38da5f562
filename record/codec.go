package record

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// formatV1 is the first byte of every canonical record body; a new format
// gets a new number and old records keep verifying under the old one.
const formatV1 = 1

// fixedBodySize is the part of a body that does not depend on the event:
// format, seq, time, prev_hash.
const fixedBodySize = 1 + 8 + 8 + sha256.Size

// appendBody appends the canonical encoding of e without its Hash (see
// doc.go) to b.
func appendBody(b []byte, e *Event) []byte {
	b = append(b, formatV1)
	b = binary.BigEndian.AppendUint64(b, e.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.UnixNano()))
	b = append(b, e.PrevHash[:]...)
	for _, f := range e.fields() {
		b = appendString(b, *f)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Details)))
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, e.Details[k])
	}
	return b
}

// encodedSize is len(appendBody(nil, e)).
func encodedSize(e *Event) int {
	n := fixedBodySize
	for _, f := range e.fields() {
		n += uvarintLen(uint64(len(*f))) + len(*f)
	}
	n += uvarintLen(uint64(len(e.Details)))
	for k, v := range e.Details {
		n += uvarintLen(uint64(len(k))) + len(k) + uvarintLen(uint64(len(v))) + len(v)
	}
	return n
}

// seal sets e.Hash from the body and returns the stored value.
func seal(e *Event) []byte {
	b := appendBody(make([]byte, 0, encodedSize(e)+sha256.Size), e)
	e.Hash = sha256.Sum256(b)
	return append(b, e.Hash[:]...)
}

// decodeRecord decodes a stored value. It accepts only canonical bodies
// (minimal varints, strictly increasing details keys, no trailing bytes), so
// encodeRecord(decodeRecord(v)) == v for every v it accepts. It returns the
// body as well so a verifier can hash it; the stored Hash is not checked.
func decodeRecord(v []byte) (Event, []byte, error) {
	var e Event
	if len(v) < fixedBodySize+sha256.Size {
		return e, nil, fmt.Errorf("record of %d bytes: %w", len(v), ErrCorrupt)
	}
	body := v[:len(v)-sha256.Size]
	copy(e.Hash[:], v[len(body):])
	if body[0] != formatV1 {
		return e, nil, fmt.Errorf("record format %d: %w", body[0], ErrCorrupt)
	}
	e.Seq = binary.BigEndian.Uint64(body[1:])
	e.Time = time.Unix(0, int64(binary.BigEndian.Uint64(body[9:]))).UTC()
	copy(e.PrevHash[:], body[17:])
	d := decoder{b: body[fixedBodySize:]}
	for _, f := range e.fields() {
		*f = d.string()
	}
	if n := d.uvarint(); n > 0 && d.err == nil {
		// Each entry takes at least two bytes; a larger count is garbage
		// and must not size an allocation.
		if n > uint64(len(d.b))/2 {
			d.err = errors.New("details count exceeds record")
		} else {
			e.Details = make(map[string]string, n)
			prev := ""
			for i := uint64(0); i < n && d.err == nil; i++ {
				k, val := d.string(), d.string()
				if i > 0 && k <= prev {
					d.err = errors.New("details keys not strictly increasing")
				}
				e.Details[k], prev = val, k
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return Event{}, nil, fmt.Errorf("record: %w: %w", d.err, ErrCorrupt)
	}
	return e, body, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// decoder reads canonical fields; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	if n != uvarintLen(x) {
		d.err = errors.New("non-minimal varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errors.New("string exceeds record")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) fixed(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = errors.New("short value")
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uint64() uint64 {
	p := d.fixed(8)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// Head is the end of the chain: the last record's sequence number, hash and
// time. The zero Head (Seq 0, zero Hash) is an empty log. Publishing a Head
// elsewhere (a second node, an object-locked bucket) anchors the chain: see
// CheckAnchor.
type Head struct {
	Seq  uint64    `json:"seq"`
	Hash Hash      `json:"hash"`
	Time time.Time `json:"time"`
}

// headSize is the stored size of a Head: seq, hash, time.
const headSize = 8 + sha256.Size + 8

func encodeHead(h Head) []byte {
	b := make([]byte, 0, headSize)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	b = append(b, h.Hash[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(h.Time.UnixNano()))
}

func decodeHead(v []byte) (Head, error) {
	var h Head
	if len(v) != headSize {
		return h, fmt.Errorf("head of %d bytes: %w", len(v), ErrCorrupt)
	}
	h.Seq = binary.BigEndian.Uint64(v)
	copy(h.Hash[:], v[8:])
	h.Time = time.Unix(0, int64(binary.BigEndian.Uint64(v[8+sha256.Size:]))).UTC()
	return h, nil
}
