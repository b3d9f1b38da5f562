package manifest

import (
	"bytes"
	"testing"
)

// A part's edges round-trip through its entry, empty ends included.
func TestEdgesRoundTrip(t *testing.T) {
	for _, x := range []*Edges{{}, {Head: []byte("whole body")}, {Head: []byte("head"), Tail: []byte("tail")}} {
		e, err := DecodeEntry((&Entry{Size: 9, ETag: "e", Edges: x}).Encode())
		if err != nil {
			t.Fatal(err)
		}
		if e.Edges == nil || !bytes.Equal(e.Edges.Head, x.Head) || !bytes.Equal(e.Edges.Tail, x.Tail) {
			t.Fatalf("edges %q/%q came back as %+v", x.Head, x.Tail, e.Edges)
		}
	}
	if e, err := DecodeEntry(sampleEntry().Encode()); err != nil || e.Edges != nil {
		t.Fatalf("an entry without edges decodes with %+v, %v", e.Edges, err)
	}
}

// The edges decoder faces bytes from disk: it never panics, and what
// decodes re-encodes to a stable form.
func FuzzDecodeEdges(f *testing.F) {
	f.Add((&Edges{Head: []byte("head"), Tail: []byte("tail")}).encode())
	f.Add((&Edges{}).encode())
	f.Add([]byte{})
	f.Add([]byte{1, 1, 200})
	f.Add([]byte{2, 1, 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeEdges(b)
		if err != nil {
			return
		}
		again, err := decodeEdges(x.encode())
		if err != nil {
			t.Fatalf("re-encoded edges do not decode: %v", err)
		}
		if !bytes.Equal(again.encode(), x.encode()) {
			t.Fatal("encoding not stable")
		}
	})
}
