package manifest

import (
	"encoding/binary"
	"fmt"
)

// enc appends canonical (tag, length, value) fields.
type enc struct{ b []byte }

func (e *enc) bytes(tag uint64, v []byte) {
	if len(v) == 0 {
		return
	}
	e.b = binary.AppendUvarint(e.b, tag)
	e.b = binary.AppendUvarint(e.b, uint64(len(v)))
	e.b = append(e.b, v...)
}

func (e *enc) str(tag uint64, v string) { e.bytes(tag, []byte(v)) }

func (e *enc) uint(tag uint64, v uint64) {
	if v == 0 {
		return
	}
	e.bytes(tag, binary.AppendUvarint(nil, v))
}

func (e *enc) int(tag uint64, v int64) {
	if v == 0 {
		return
	}
	e.bytes(tag, binary.AppendVarint(nil, v))
}

// dec reads fields written by enc.
type dec struct {
	b   []byte
	err error
}

// next returns the next field; ok is false at the end or on error.
func (d *dec) next() (tag uint64, v []byte, ok bool) {
	if d.err != nil || len(d.b) == 0 {
		return 0, nil, false
	}
	tag, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrCorrupt
		return 0, nil, false
	}
	l, m := binary.Uvarint(d.b[n:])
	if m <= 0 || l > uint64(len(d.b)-n-m) {
		d.err = ErrCorrupt
		return 0, nil, false
	}
	start := n + m
	v = d.b[start : start+int(l)]
	d.b = d.b[start+int(l):]
	return tag, v, true
}

func uintOf(v []byte) (uint64, error) {
	x, n := binary.Uvarint(v)
	if n != len(v) {
		return 0, ErrCorrupt
	}
	return x, nil
}

func intOf(v []byte) (int64, error) {
	x, n := binary.Varint(v)
	if n != len(v) {
		return 0, ErrCorrupt
	}
	return x, nil
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }
