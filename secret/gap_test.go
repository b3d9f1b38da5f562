package secret

import (
	mrand "math/rand/v2"
	"testing"
)

// edgeScan scans a stream cut into pieces as a caller that kept only the
// Edge bytes at each end of a long piece does: a short piece whole, a
// long one by its head, a gap and its tail.
func edgeScan(pieces [][]byte) bool {
	s := New()
	for _, p := range pieces {
		if len(p) <= 2*Edge {
			s.Write(p)
			continue
		}
		s.Write(p[:Edge])
		s.Gap()
		s.Write(p[len(p)-Edge:])
	}
	return s.Found()
}

// TestGapFindsJoints: an example split at any point across the joint of
// two pieces, short or long, is found from the pieces' edges alone.
func TestGapFindsJoints(t *testing.T) {
	for rule, exs := range examples {
		for _, ex := range exs {
			for _, pad := range []int{10, 2 * Edge, 5000} {
				for k := 1; k < len(ex); k++ {
					a := append(append(prose(pad), ' '), ex[:k]...)
					b := append([]byte(ex[k:]), " and then\n"...)
					b = append(b, prose(pad)...)
					if !edgeScan([][]byte{prose(3000), a, b, prose(3000)}) {
						t.Fatalf("%s: %q split at %d after %d bytes: not found", rule, ex, k, pad)
					}
				}
			}
		}
	}
}

// TestGapMatchesTheWholeStream: what the edges find, a scan of the whole
// stream finds too; no window is cut short by a gap into a false match,
// however near-misses fall around the joints and gaps.
func TestGapMatchesTheWholeStream(t *testing.T) {
	tokens := []string{"x" + "AKIA" + "IOSFODNN7EXAMPLE", "AKIA" + "IOSFODNN7EXAMPLEMORE", "AKIA" + "IOSFODNN7EXAMPLE",
		"password = \"" + "hunter2" + "hunter2\"", "mypass" + "word = \"hunter2hunter2\"", "-----BEGIN " + "RSA PRIVATE KEY-----"}
	r := mrand.New(mrand.NewPCG(3, 4))
	for range 3000 {
		var pieces [][]byte
		var whole []byte
		for range 2 + r.IntN(3) {
			p := prose(r.IntN(3 * Edge))
			for range r.IntN(3) {
				at := r.IntN(len(p) + 1)
				tok := tokens[r.IntN(len(tokens))]
				p = append(p[:at:at], append([]byte(tok), p[at:]...)...)
			}
			pieces = append(pieces, p)
			whole = append(whole, p...)
		}
		if edgeScan(pieces) && !scanAll(whole).Found() {
			t.Fatalf("the edges of %q match, the whole stream does not", pieces)
		}
	}
}

// TestGapAtTheStart: a gap before anything was written, or two in a row,
// loses nothing after them.
func TestGapAtTheStart(t *testing.T) {
	s := New()
	s.Gap()
	s.Gap()
	s.Write(prose(2 * WindowLeft))
	s.Write([]byte(" " + "AKIA" + "IOSFODNN7EXAMPLE\n"))
	if !s.Found() {
		t.Fatal("a key after a gap was not found")
	}
}
