package postform

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzDecode: any policy field decodes or fails with ErrInvalidPolicy,
// and a decoded policy checks any form without panicking.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"expiration": "2026-05-01T13:00:00Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", ""], ["content-length-range", 0, 10]]}`,
		`{"expiration": "2026-05-01T13:00:00.000Z", "conditions": [["eq", "$acl", "private"], {"a": "1", "b": "2"}]}`,
		`{"expiration": "x", "conditions": [[]]}`,
		`{"expiration": "2026-05-01T13:00:00Z", "conditions": [["content-length-range", "1", 99999999999999999999]]}`,
		`[]`, `{}`, `null`,
	} {
		f.Add(b64(s))
	}
	f.Add("not base64 ===")
	f.Fuzz(func(t *testing.T, field string) {
		p, err := Decode(field)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error %v does not wrap ErrInvalidPolicy", err)
			}
			return
		}
		if p.HasLength && (p.MinLength < 0 || p.MaxLength < p.MinLength) {
			// An intersection of ranges may be empty; it then refuses
			// every size.
			if p.CheckLength(p.MinLength) == nil {
				t.Fatalf("empty range %d-%d accepts %d", p.MinLength, p.MaxLength, p.MinLength)
			}
		}
		err = p.Check(time.Unix(0, 0), form("key", "k", "acl", "a"), "b", "k")
		if err != nil && !errors.Is(err, ErrPolicy) {
			t.Fatalf("check: %v", err)
		}
	})
}

// FuzzRead: any body reads as a form or fails with this package's errors,
// never holding more than the bounds.
func FuzzRead(f *testing.F) {
	b, boundary := body(f, []string{"key", "a/${filename}", "policy", "p"}, "x.txt", []byte("hello"))
	f.Add(b.Bytes(), boundary)
	b, boundary = body(f, []string{"key", "a", "KEY", "b"}, "x", []byte("x"))
	f.Add(b.Bytes(), boundary)
	b, boundary = body(f, []string{"key", "a"}, "", nil)
	f.Add(b.Bytes(), boundary)
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n--b--\r\n"), "b")
	f.Fuzz(func(t *testing.T, data []byte, boundary string) {
		if boundary == "" {
			return
		}
		form, err := Read(bytes.NewReader(data), boundary)
		if err != nil {
			for _, want := range []error{ErrMalformed, ErrFieldsTooLarge, ErrNoFile, ErrDuplicateField} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		n := 0
		for _, fd := range form.Fields {
			n += len(fd.Name) + len(fd.Value)
		}
		if n > MaxFields {
			t.Fatalf("%d bytes of fields held", n)
		}
		_, _ = io.Copy(io.Discard, form.File)
	})
}
