package secret

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkScanner writes 64 MiB of ordinary text in 1 MiB writes, beside
// bytes.Count over the same writes as a baseline for one pass of memory.
func BenchmarkScanner(b *testing.B) {
	const total, write = 64 << 20, 1 << 20
	inputs := map[string][]byte{"prose": prose(write), "go": goSource(write), "random": random(write)}
	for _, name := range []string{"prose", "go", "random"} {
		p := inputs[name]
		b.Run(name+"/scanner", func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				s := New()
				for range total / write {
					s.Write(p)
				}
				if s.Found() {
					b.Fatal("plain text matched")
				}
			}
		})
		b.Run(name+"/bytes.Count", func(b *testing.B) {
			b.SetBytes(total)
			n := 0
			for b.Loop() {
				for range total / write {
					n += bytes.Count(p, []byte{'\n'})
				}
			}
			_ = n
		})
	}
}

// random returns n bytes of high-entropy data (compressed archives,
// model weights, media), where every byte value is as likely and a
// trigger byte comes every 43 bytes.
func random(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}

// goSource returns n bytes of the repository's ordinary Go code (the
// manifest and branch packages), repeated.
func goSource(n int) []byte {
	var b bytes.Buffer
	files, _ := filepath.Glob("../manifest/*.go")
	more, _ := filepath.Glob("../branch/*.go")
	for _, f := range append(files, more...) {
		if src, err := os.ReadFile(f); err == nil && !strings.HasSuffix(f, "_test.go") {
			b.Write(src)
		}
	}
	return bytes.Repeat(b.Bytes(), n/b.Len()+1)[:n]
}
