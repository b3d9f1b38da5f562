package record

import (
	"bytes"
	"encoding/binary"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// Key layout; see doc.go.
var (
	keyHead        = []byte(keyspace.Record + "h")
	prefixEvent    = []byte(keyspace.Record + "e")
	prefixRecorder = []byte(keyspace.Record)
	prefixIndex    = []byte(keyspace.RecordIndex)
	prefixManifest = []byte(keyspace.ReadManifest)
)

// EventRange is the kv range of the stored records (not the chain head),
// for tools that inspect or damage storage directly, as the conformance
// tests' intruder does.
func EventRange() kv.Range { return kv.Prefix(prefixEvent) }

func eventKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), prefixEvent...), seq)
}

// seqOfEventKey parses an event key.
func seqOfEventKey(k []byte) (uint64, bool) {
	if len(k) != len(prefixEvent)+8 || !bytes.HasPrefix(k, prefixEvent) {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[len(prefixEvent):]), true
}

// indexField names a secondary index.
type indexField byte

const (
	indexCommit indexField = 'c'
	indexLease  indexField = 'l'
	indexRun    indexField = 'r'
)

var indexFields = [...]indexField{indexCommit, indexLease, indexRun}

// value returns the field of e that index f covers ("" means no entry).
func (f indexField) value(e *Event) string {
	switch f {
	case indexCommit:
		return e.Subject.Commit
	case indexLease:
		return e.Lease
	case indexRun:
		return e.Run
	}
	return ""
}

// appendEscaped appends s with 0x00 escaped as 0x00 0xff, so that the
// terminator 0x00 0x01 ends it unambiguously and escaped values sort like
// the values themselves; a prefix of s escapes to a prefix of its escape.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == 0 {
			b = append(b, 0xff)
		}
	}
	return b
}

// indexValuePrefix is the key prefix of every entry of index f whose value
// starts with v.
func indexValuePrefix(f indexField, v string) []byte {
	b := append(append([]byte(nil), prefixIndex...), byte(f), '/')
	return appendEscaped(b, v)
}

// indexPrefix is the key prefix of every entry of index f for value v.
func indexPrefix(f indexField, v string) []byte {
	return append(indexValuePrefix(f, v), 0, 1)
}

func indexKey(f indexField, v string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(indexPrefix(f, v), seq)
}

// parseIndexKey splits an index key into field, value and seq.
func parseIndexKey(k []byte) (indexField, string, uint64, bool) {
	if len(k) < len(prefixIndex)+2+2+8 || !bytes.HasPrefix(k, prefixIndex) || k[len(prefixIndex)+1] != '/' {
		return 0, "", 0, false
	}
	f := indexField(k[len(prefixIndex)])
	switch f {
	case indexCommit, indexLease, indexRun:
	default:
		return 0, "", 0, false
	}
	esc := k[len(prefixIndex)+2 : len(k)-8]
	seq := binary.BigEndian.Uint64(k[len(k)-8:])
	v := make([]byte, 0, len(esc))
	for i := 0; i < len(esc); i++ {
		if esc[i] != 0 {
			v = append(v, esc[i])
			continue
		}
		if i+1 >= len(esc) {
			return 0, "", 0, false
		}
		switch esc[i+1] {
		case 0xff:
			v = append(v, 0)
			i++
		case 1:
			if i+2 != len(esc) {
				return 0, "", 0, false
			}
			return f, string(v), seq, true
		default:
			return 0, "", 0, false
		}
	}
	return 0, "", 0, false
}

// manifestPrefix is the key prefix of one run's manifest; the run is length
// prefixed, so no run's prefix is a prefix of another's.
func manifestPrefix(run string) []byte {
	b := append([]byte(nil), prefixManifest...)
	b = binary.AppendUvarint(b, uint64(len(run)))
	return append(b, run...)
}

const (
	manifestPage    = 'p'
	manifestSummary = 's'
)

func pageKey(run string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(manifestPrefix(run), manifestPage), n)
}

func summaryKey(run string) []byte {
	return append(manifestPrefix(run), manifestSummary)
}

// parseManifestKey splits a manifest key into run, kind (manifestPage or
// manifestSummary) and page number.
func parseManifestKey(k []byte) (run string, kind byte, page uint64, ok bool) {
	if !bytes.HasPrefix(k, prefixManifest) {
		return "", 0, 0, false
	}
	rest := k[len(prefixManifest):]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > uint64(len(rest)-w) {
		return "", 0, 0, false
	}
	run = string(rest[w : w+int(n)])
	rest = rest[w+int(n):]
	switch {
	case len(rest) == 9 && rest[0] == manifestPage:
		return run, manifestPage, binary.BigEndian.Uint64(rest[1:]), true
	case len(rest) == 1 && rest[0] == manifestSummary:
		return run, manifestSummary, 0, true
	}
	return "", 0, 0, false
}
