package manifest

import (
	"reflect"
	"testing"

	"github.com/agentnas/nas/chunk"
)

func sampleEntry() *Entry {
	return &Entry{
		Size: 12345, ETag: "0123456789abcdef0123456789abcdef-3", ModTime: 1700000000123456789, VersionID: "18ecaeb0dbeb761b45ce9ef7",
		ContentType: "text/plain", Headers: []Pair{{"Cache-Control", "no-cache"}, {"Content-Encoding", "gzip"}},
		Meta: []Pair{{"a", "1"}, {"b", "two words"}}, ChecksumAlgorithm: "CRC32", ChecksumValue: "AAAAAA==-3", ChecksumType: "COMPOSITE",
		Content: &Content{Chunks: []chunk.Ref{{Hash: chunk.Sum([]byte("x")), Size: 5}, {Hash: chunk.Sum([]byte("y")), Size: 12340}},
			Parts: []Part{{Size: 5, Checksum: "c1"}, {Size: 12340, Checksum: "c2"}}},
	}
}

func TestEntryRoundTripAndCanonical(t *testing.T) {
	e := sampleEntry()
	b := e.Encode()
	d, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, d) {
		t.Fatalf("round trip:\n%+v\n%+v", e, d)
	}
	// Metadata order does not change the encoding.
	e2 := sampleEntry()
	e2.Meta = []Pair{{"b", "two words"}, {"a", "1"}}
	if string(e2.Encode()) != string(b) {
		t.Fatal("encoding depends on metadata order")
	}
}

func TestSetContentOutOfLine(t *testing.T) {
	c := &Content{}
	for i := 0; i < 100; i++ {
		c.Chunks = append(c.Chunks, chunk.Ref{Hash: chunk.Sum([]byte{byte(i)}), Size: 1 << 20})
	}
	var e Entry
	h, data := e.SetContent(c)
	if e.Content != nil || h.IsZero() || chunk.Sum(data) != h {
		t.Fatal("a long chunk list must be stored by hash")
	}
	back, err := DecodeContent(data)
	if err != nil || !reflect.DeepEqual(back.Chunks, c.Chunks) {
		t.Fatal("content list round trip")
	}
}

func TestCommitID(t *testing.T) {
	c := &Commit{Tree: chunk.Sum([]byte("t")), Parents: []CommitID{{1}}, Message: "m", Time: 42, Extra: []Pair{{"z", "1"}, {"a", "2"}}}
	d, err := DecodeCommit(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID() != c.ID() {
		t.Fatal("commit ID changes across a round trip")
	}
	id, err := ParseCommitID(c.ID().String())
	if err != nil || id != c.ID() {
		t.Fatal("commit ID text form")
	}
}

// The decoders face bytes from disk: never panic, and what decodes
// re-encodes to a stable form.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(sampleEntry().Encode())
	f.Add([]byte{})
	f.Add([]byte{1, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		again, err := DecodeEntry(e.Encode())
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if string(again.Encode()) != string(e.Encode()) {
			t.Fatal("encoding not stable")
		}
	})
}

func FuzzDecodeCommit(f *testing.F) {
	f.Add((&Commit{Message: "x", Parents: []CommitID{{2}}}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommit(b)
		if err != nil {
			return
		}
		if _, err := DecodeCommit(c.Encode()); err != nil {
			t.Fatalf("re-encoded commit does not decode: %v", err)
		}
	})
}
