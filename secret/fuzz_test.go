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

// lookEverywhere is scan without the neighbour conditions: look at every
// trigger byte.
func lookEverywhere(buf []byte) uint64 {
	var found uint64
	for j, b := range buf {
		if ts := triggers[b]; ts != nil {
			found |= look(buf, j, ts, found)
		}
	}
	return found
}

// FuzzNeighbours checks that the neighbour conditions only skip trigger
// bytes where no rule could match: scan finds what looking at every
// trigger byte finds.
func FuzzNeighbours(f *testing.F) {
	for _, exs := range examples {
		for _, ex := range exs {
			f.Add([]byte(ex))
			f.Add([]byte("\x00" + ex + "\xff"))
		}
	}
	f.Add(random(4096))
	f.Add([]byte("Token\t:= 'a1b2c3d4e5'\nPASSWD:\"x9y8z7w6v5\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := scan(data, 0, len(data)), lookEverywhere(data); got != want {
			t.Errorf("scan %b, looking everywhere %b", got, want)
		}
	})
}

// TestNeighboursOnTheExamples runs FuzzNeighbours's check on every
// example, alone and inside high-entropy bytes.
func TestNeighboursOnTheExamples(t *testing.T) {
	noise := random(1 << 16)
	if scan(noise, 0, len(noise)) != lookEverywhere(noise) {
		t.Fatal("random bytes: scan and looking everywhere differ")
	}
	for rule, exs := range examples {
		for i, ex := range exs {
			in := append(append(slices.Clone(noise[:300]), ex...), noise[300:600]...)
			for _, data := range [][]byte{[]byte(ex), in} {
				got, want := scan(data, 0, len(data)), lookEverywhere(data)
				if got != want || got == 0 {
					t.Errorf("%s #%d: scan %b, looking everywhere %b", rule, i, got, want)
				}
			}
		}
	}
}
