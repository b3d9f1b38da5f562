package secret

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzScanner checks that the answer does not depend on how the stream is
// cut into writes, and that Write takes everything without error.
func FuzzScanner(f *testing.F) {
	for _, exs := range examples {
		for _, ex := range exs {
			f.Add([]byte(ex), uint64(7))
			f.Add([]byte(ex), uint64(0))
		}
	}
	f.Add(bytes.Repeat([]byte("token = \"a1\" "), 3000), uint64(1<<40+3))
	f.Add(append(prose(chunkSize), examples["jwt"][0]...), uint64(chunkSize-3))
	f.Fuzz(func(t *testing.T, data []byte, cuts uint64) {
		whole := New()
		if n, err := whole.Write(data); n != len(data) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		pieces := New()
		for rest, c := data, cuts; len(rest) > 0; c = c>>5 | c<<59 {
			n := min(1+int(c%97)+int(c>>60)*chunkSize/4, len(rest))
			if w, err := pieces.Write(rest[:n]); w != n || err != nil {
				t.Fatalf("Write = %d, %v", w, err)
			}
			rest = rest[n:]
		}
		if a, b := whole.Rules(), pieces.Rules(); !slices.Equal(a, b) || whole.Found() != (a != nil) {
			t.Errorf("one write: %v; in pieces: %v", a, b)
		}
	})
}
