package manifest

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/label"
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

// oldEntryHex is sampleEntry as encoded before entries had tags (commit
// 7b0edda): such entries must decode and re-encode unchanged, so trees and
// commit IDs written before stay the same.
const oldEntryHex = "0102b960022230313233343536373839616263646566303132333435363738396162636465662d330309aab4aed8c7bfce972f0418313865636165623064626562373631623435636539656637050a746578742f706c61696e06160d43616368652d436f6e74726f6c6e6f2d6361636865061510436f6e74656e742d456e636f64696e67677a69700703016131070b016274776f20776f72647308054352433332090a4141414141413d3d2d330a09434f4d504f534954450b5201213ae7d805f6789a6402acb70ad4096a85a56bf6804eaf25c0493ac697548d30b505012208112a9e334ce73042b531c25668cf5cb12a1ee040a4326afeac065461079a06b46002030563310204b4606332"

func TestEntryWithoutTagsDecodesUnchanged(t *testing.T) {
	old, _ := hex.DecodeString(oldEntryHex)
	d, err := DecodeEntry(old)
	if err != nil {
		t.Fatal(err)
	}
	if d.Tags != nil || !reflect.DeepEqual(d, sampleEntry()) {
		t.Fatalf("old entry decoded as %+v", d)
	}
	if !bytes.Equal(d.Encode(), old) {
		t.Fatal("an entry without tags must encode as before tags existed")
	}
}

func TestEntryTagsRoundTripSorted(t *testing.T) {
	e := sampleEntry()
	e.Tags = []Pair{{"team", "data"}, {"", ""}, {"env", "prod=1&x"}}
	b := e.Encode()
	d, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{{"", ""}, {"env", "prod=1&x"}, {"team", "data"}}
	if !reflect.DeepEqual(d.Tags, want) {
		t.Fatalf("tags %+v, want %+v", d.Tags, want)
	}
	if !reflect.DeepEqual(d.Meta, e.Meta) || d.Size != e.Size {
		t.Fatal("tags disturbed the other fields")
	}
	e.Tags = want
	if !bytes.Equal(e.Encode(), b) {
		t.Fatal("encoding depends on tag order")
	}
	// The tag field comes last, after every older field.
	old, _ := hex.DecodeString(oldEntryHex)
	if !bytes.HasPrefix(b, old) {
		t.Fatal("tags must be encoded after the fields that existed before them")
	}
	if tagTags != 14 {
		t.Fatalf("tagTags is %d: the encoding fixes it at 14", tagTags)
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

// taggedEntryHex is sampleEntry with tags env=prod and team=data, as
// encoded before entries had ACLs (commit eed6088).
const taggedEntryHex = oldEntryHex + "0e0803656e7670726f640e09047465616d64617461"

func TestEntryWithoutACLDecodesUnchanged(t *testing.T) {
	old, _ := hex.DecodeString(taggedEntryHex)
	d, err := DecodeEntry(old)
	if err != nil {
		t.Fatal(err)
	}
	if d.ACL != nil || len(d.Tags) != 2 {
		t.Fatalf("old entry decoded as %+v", d)
	}
	if !bytes.Equal(d.Encode(), old) {
		t.Fatal("an entry without an ACL must encode as before ACLs existed")
	}
}

func TestEntryACLRoundTrip(t *testing.T) {
	pub := acl.ACL{Grants: []acl.Grant{{Grantee: acl.User("me"), Permission: acl.FullControl}, {Grantee: acl.GroupOf(acl.AllUsers), Permission: acl.Read}}}
	for _, a := range []*acl.ACL{{Grants: []acl.Grant{}}, &pub} {
		e := sampleEntry()
		e.Tags = []Pair{{"env", "prod"}, {"team", "data"}}
		e.ACL = a
		b := e.Encode()
		d, err := DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d, e) || !bytes.Equal(d.Encode(), b) {
			t.Fatalf("round trip of ACL %+v gave %+v", a, d.ACL)
		}
		// The ACL field comes last; an emptied ACL still marks the entry.
		old, _ := hex.DecodeString(taggedEntryHex)
		if !bytes.HasPrefix(b, old) || len(b) == len(old) {
			t.Fatal("the ACL must be encoded, after the fields that existed before it")
		}
	}
	if tagACL != 15 {
		t.Fatalf("tagACL is %d: the encoding fixes it at 15", tagACL)
	}
	e := sampleEntry()
	b := append(e.Encode(), tagACL, 2, 7, 7)
	if _, err := DecodeEntry(b); err == nil {
		t.Fatal("a corrupt ACL field must not decode")
	}
}

// TestEntryLabelRoundTrip: labels encode last under tag 16, an entry
// without them encodes as before, and a corrupt label does not decode.
func TestEntryLabelRoundTrip(t *testing.T) {
	e := sampleEntry()
	e.Tags = []Pair{{"env", "prod"}, {"team", "data"}}
	old := e.Encode()
	e.Label = &label.Label{Origin: label.External, Sensitivity: label.Secret, Reviewed: true}
	b := e.Encode()
	d, err := DecodeEntry(b)
	if err != nil || !reflect.DeepEqual(d, e) || !bytes.Equal(d.Encode(), b) || !bytes.HasPrefix(b, old) {
		t.Fatalf("round trip gave %+v %v", d, err)
	}
	if tagLabel != 16 {
		t.Fatalf("tagLabel is %d: the encoding fixes it at 16", tagLabel)
	}
	if _, err := DecodeEntry(append(sampleEntry().Encode(), tagLabel, 4, 1, 9, 0, 0)); err == nil {
		t.Fatal("a corrupt label field must not decode")
	}
}
