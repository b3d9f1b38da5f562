package manifest

import (
	"errors"
	"reflect"
	"testing"
)

func lazyEntry() *Entry {
	return &Entry{Size: 1 << 30, ETag: "0123456789abcdef0123456789abcdef-128", ModTime: 1700000000123456789,
		ContentType: "binary/octet-stream",
		Remote:      &Remote{Source: "src_0123456789abcdef", Key: "data/part-0001.parquet", ETag: "0123456789abcdef0123456789abcdef-128", VersionID: "3HL4kqtJlcpXroDTDmJ"}}
}

func TestRemoteRoundTrip(t *testing.T) {
	e := lazyEntry()
	if !e.Lazy() {
		t.Fatal("an entry with a Remote and no content is lazy")
	}
	d, err := DecodeEntry(e.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, e) {
		t.Fatalf("round trip: %+v, want %+v", d.Remote, e.Remote)
	}
	// An entry written before the field existed decodes without a Remote,
	// and adding the field leaves the older fields' bytes as they were.
	plain := sampleEntry()
	enc := plain.Encode()
	if d, err := DecodeEntry(enc); err != nil || d.Remote != nil || d.Lazy() {
		t.Fatalf("old encoding: %+v, %v", d, err)
	}
	withRemote := *plain
	withRemote.Remote = &Remote{Source: "s", Key: "k", ETag: "e"}
	if b := withRemote.Encode(); string(b[:len(enc)]) != string(enc) {
		t.Fatal("the Remote field changed the encoding of the other fields")
	}
	if withRemote.Lazy() {
		t.Fatal("an entry with content is not lazy, Remote or not")
	}
	// A Remote must name its source.
	bad := lazyEntry()
	bad.Remote.Source = ""
	if _, err := DecodeEntry(bad.Encode()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Remote without a source: %v", err)
	}
}

func TestContentOfALazyEntry(t *testing.T) {
	s := NewStore(nil)
	if _, err := s.Content(t.Context(), lazyEntry()); !errors.Is(err, ErrLazy) {
		t.Fatalf("Content of a lazy entry: %v, want ErrLazy", err)
	}
}

func FuzzDecodeLazyEntry(f *testing.F) {
	f.Add(lazyEntry().Encode())
	e := lazyEntry()
	e.Remote.VersionID = ""
	f.Add(e.Encode())
	f.Add([]byte{13, 3, 1, 1, 's'})
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
