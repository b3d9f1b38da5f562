package tree

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// seedNodes returns the encodings of the nodes of a small tree.
func seedNodes(tb testing.TB) [][]byte {
	tr, _, mem := newTestTree(2, nil)
	m := model{"": "", "a": "1", "a/b": "22", "a/c": "", "b": "x"}
	for _, k := range seqKeys(40) {
		m[k] = k
	}
	build(tb, tr, m)
	var out [][]byte
	for _, h := range mem.Hashes() {
		b, _ := mem.GetNode(context.Background(), h)
		out = append(out, b)
	}
	return out
}

// FuzzDecodeNode feeds arbitrary bytes to the decoder: it must never panic,
// must fail only with ErrCorrupt, and must accept only canonical encodings.
func FuzzDecodeNode(f *testing.F) {
	for _, b := range seedNodes(f) {
		f.Add(b)
	}
	f.Add([]byte{1, 0, 1, 0, 0, 0})
	f.Add([]byte{1, 1, 1, 0, 0})
	f.Add([]byte{1, 0, 0x80, 0x00, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := decodeNode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if got := encodeNode(n); !bytes.Equal(got, data) {
			t.Fatalf("decoded node re-encodes differently:\n%x\n%x", data, got)
		}
		for i := 1; i < len(n.keys); i++ {
			if bytes.Compare(n.keys[i-1], n.keys[i]) >= 0 {
				t.Fatalf("keys out of order")
			}
		}
		_ = n.count()
	})
}

// FuzzApply reads edit batches from the input and checks that applying them
// one batch at a time gives the root of a fresh build.
func FuzzApply(f *testing.F) {
	f.Add([]byte("\x05abc\x03de\x81xy\x00\x02\x04abcd"), uint8(1))
	f.Add(bytes.Repeat([]byte{7, 1, 2, 3, 0x83, 9}, 30), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, bits uint8) {
		tr, _, _ := newTestTree(1+int(bits%5), nil)
		m := model{}
		root := build(t, tr, m)
		var batch []Edit
		flush := func() {
			batch = sortEdits(batch)
			root = apply(t, tr, root, batch)
			m.apply(batch)
			batch = nil
			if want := build(t, tr, m); root != want {
				t.Fatalf("apply root %s, build root %s", root, want)
			}
		}
		// Each edit is a length byte (high bit: delete) and that many key
		// bytes; a zero length ends a batch.
		for len(data) > 0 {
			l := int(data[0] & 0x7f)
			del := data[0]&0x80 != 0
			data = data[1:]
			if l == 0 {
				flush()
				continue
			}
			l = min(l%8, len(data))
			k := append([]byte(nil), data[:l]...)
			data = data[l:]
			batch = append(batch, Edit{Key: k, Value: []byte{byte(len(data))}, Delete: del})
		}
		flush()
		if err := tr.Check(context.Background(), root); err != nil {
			t.Fatal(err)
		}
	})
}

// sortEdits sorts edits by key, keeping the last edit of each key.
func sortEdits(edits []Edit) []Edit {
	m := map[string]Edit{}
	for _, e := range edits {
		m[string(e.Key)] = e
	}
	var out []Edit
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}
