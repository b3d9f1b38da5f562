package acl

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzParseGrantHeader checks that any header value parses or fails with
// ErrMalformedGrant, and that what parses survives the encoding.
func FuzzParseGrantHeader(f *testing.F) {
	for _, s := range []string{`id="abc"`, `uri="` + AllUsers + `", emailAddress="a@b.c"`, `id=x,`, `"`, `id="a"b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		gs, err := ParseGrantHeader(v, WriteACP)
		if err != nil {
			return
		}
		a := ACL{Grants: gs}
		got, err := Decode(Encode(a))
		if err != nil || !slices.Equal(got.Grants, gs) {
			t.Fatalf("round trip of %v: %v, %v", gs, got, err)
		}
	})
}

// FuzzDecode checks that Decode never panics and that what it accepts
// re-encodes to the same bytes (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Private(owner)))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(Encode(a), b) {
			t.Fatalf("Decode(%x) re-encodes as %x", b, Encode(a))
		}
	})
}
