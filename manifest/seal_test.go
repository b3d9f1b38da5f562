package manifest

import (
	"bytes"
	"testing"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/seal"
)

func sealedEntry() *Entry {
	salt := bytes.Repeat([]byte{5}, seal.SaltSize)
	c := &Content{Chunks: []chunk.Ref{{Hash: chunk.Sum([]byte("x")), Size: uint32(seal.CipherSize(10) + seal.CipherSize(3))}},
		Seal: &Seal{Domain: "acme", KeyID: "0123456789abcdef", Segments: []SealSegment{{Salt: salt, Size: 10}, {Salt: salt, Size: 3}}}}
	e := &Entry{Size: 13, ETag: "e", Retention: RetentionSensitive}
	e.SetContent(c)
	return e
}

// TestSealRoundTrip: a sealed content list and the retention class
// decode as they were written, and PlainSize checks the sealed bytes.
func TestSealRoundTrip(t *testing.T) {
	e := sealedEntry()
	got, err := DecodeEntry(e.Encode())
	if err != nil || got.Retention != RetentionSensitive || got.Content.Seal == nil || got.Content.Seal.Domain != "acme" ||
		len(got.Content.Seal.Segments) != 2 || got.Content.Seal.Segments[1].Size != 3 {
		t.Fatalf("decoded %+v: %v", got, err)
	}
	if n, ok := got.Content.PlainSize(); !ok || n != 13 {
		t.Fatalf("PlainSize %d %v", n, ok)
	}
	got.Content.Chunks[0].Size++
	if _, ok := got.Content.PlainSize(); ok {
		t.Fatal("chunks that do not add up to the sealed size pass")
	}
	if StoredSize(got, got.Content) != int64(got.Content.Size()) || StoredSize(&Entry{Size: 4}, &Content{}) != 4 {
		t.Fatal("StoredSize")
	}
	for _, bad := range []*Seal{{KeyID: "k", Segments: []SealSegment{{Salt: make([]byte, 16)}}}, {Domain: "d", KeyID: "k"}} {
		if _, err := decodeSeal(bad.encode()); err == nil {
			t.Errorf("a seal without a domain or segments decodes: %+v", bad)
		}
	}
}

// FuzzDecodeSealedContent: any bytes decode to a content list whose
// encoding is stable, or fail; never a panic.
func FuzzDecodeSealedContent(f *testing.F) {
	f.Add(sealedEntry().Content.Encode())
	f.Add([]byte{3, 2, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeContent(b)
		if err != nil {
			return
		}
		again, err := DecodeContent(c.Encode())
		if err != nil || !bytes.Equal(again.Encode(), c.Encode()) {
			t.Fatalf("content re-encodes unstably: %v", err)
		}
		c.PlainSize()
	})
}
