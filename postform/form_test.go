package postform

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strconv"
	"strings"
	"testing"
)

// body builds a form of fields (name, value pairs) and, unless file is
// nil, a file part named fileName, followed by trailing fields.
func body(t testing.TB, fields []string, fileName string, file []byte, trailing ...string) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := w.CreateFormFile("File", fileName)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	for i := 0; i+1 < len(trailing); i += 2 {
		w.WriteField(trailing[i], trailing[i+1])
	}
	w.Close()
	return &b, w.Boundary()
}

func TestRead(t *testing.T) {
	b, boundary := body(t, []string{"Key", "a/${filename}", "X-Amz-Meta-Tag", "v"}, "dir/x.txt", []byte("hello"), "after", "ignored")
	f, err := Read(b, boundary)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Fields) != 2 || f.Fields[0] != (Field{"key", "a/${filename}"}) || f.Value("x-amz-meta-tag") != "v" {
		t.Fatalf("fields %v", f.Fields)
	}
	if f.Key() != "a/x.txt" {
		t.Errorf("key %q", f.Key())
	}
	got, err := io.ReadAll(f.File)
	if err != nil || string(got) != "hello" {
		t.Errorf("file %q, %v", got, err)
	}
	if err := f.Require("key", "policy"); !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), "policy") {
		t.Errorf("require: %v", err)
	}
}

func TestReadRefuses(t *testing.T) {
	big := strings.Repeat("x", MaxFields)
	for _, tc := range []struct {
		name   string
		fields []string
		file   []byte
		want   error
	}{
		{"no file", []string{"key", "a"}, nil, ErrNoFile},
		{"duplicate", []string{"key", "a", "KEY", "b"}, []byte("x"), ErrDuplicateField},
		{"too large", []string{"key", "a", "x-amz-meta-big", big}, []byte("x"), ErrFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, boundary := body(t, tc.fields, "f", tc.file)
			if _, err := Read(b, boundary); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		if _, err := Read(strings.NewReader("--b\r\nno header colon\r\n\r\nx\r\n--b--\r\n"), "b"); !errors.Is(err, ErrMalformed) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("many small fields", func(t *testing.T) {
		var fields []string
		for i := range 30000 {
			fields = append(fields, "f"+strconv.Itoa(i), "")
		}
		b, boundary := body(t, fields, "f", []byte("x"))
		if _, err := Read(b, boundary); !errors.Is(err, ErrFieldsTooLarge) {
			t.Fatalf("got %v", err)
		}
	})
}
