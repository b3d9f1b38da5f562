package record

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func FuzzDecodeEvent(f *testing.F) {
	seeds := []Event{
		{},
		specEvent(),
		{Seq: 1 << 40, Time: time.Unix(0, -1).UTC(), Kind: "x", Details: map[string]string{"a": "", "b": "\x00"}},
		{Kind: KindDenied, Purpose: string(make([]byte, 300)), Hash: Hash{9}, PrevHash: Hash{7}},
	}
	for i := range seeds {
		f.Add(encodeRecord(&seeds[i]))
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 200))
	f.Fuzz(func(t *testing.T, v []byte) {
		e, body, err := decodeRecord(v)
		if err != nil {
			return
		}
		// Accepted input is canonical: re-encoding gives the same bytes,
		// and decoding those gives the same event.
		again := encodeRecord(&e)
		if !bytes.Equal(again, v) {
			t.Fatalf("re-encoding differs:\n in  %x\n out %x", v, again)
		}
		if !bytes.Equal(body, v[:len(v)-32]) {
			t.Fatal("body is not the value without its hash")
		}
		e2, _, err := decodeRecord(again)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("decode not stable:\n%+v\n%+v", e, e2)
		}
		if encodedSize(&e) != len(body) {
			t.Fatalf("encodedSize %d, body %d", encodedSize(&e), len(body))
		}
	})
}

func FuzzDecodePage(f *testing.F) {
	_, p := encodePage([]Read{
		{Path: "/a", Commit: "c", Offset: 10, Length: 20, ETag: `"e"`, ContentHashes: []string{"h1", "h2"}, Time: t0},
		{Path: "/b", VersionID: "v", Time: t0},
	}, 10)
	f.Add(p)
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, v []byte) {
		var reads []Read
		if err := decodePage(v, func(r Read) error {
			reads = append(reads, r)
			return nil
		}); err != nil {
			return
		}
		if len(v) > 2+maxPageBytes {
			return
		}
		n, again := encodePage(reads, len(reads)+1)
		if n != len(reads) {
			t.Fatalf("re-encoded %d of %d reads", n, len(reads))
		}
		// Varints need not be minimal in pages; the decoded reads must
		// survive a second round trip unchanged.
		var back []Read
		if err := decodePage(again, func(r Read) error {
			back = append(back, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(reads, back) {
			t.Fatalf("page not stable:\n%+v\n%+v", reads, back)
		}
	})
}
