package apiv1

import (
	"slices"
	"strings"
	"testing"
)

func TestChunkMapRoundTrip(t *testing.T) {
	h1, h2 := strings.Repeat("ab", 32), strings.Repeat("09", 32)
	in := []Chunk{{Hash: h1, Size: 4096}, {Hash: h2, Size: 1<<32 - 1}}
	s := FormatChunkMap(in)
	if s != h1+":4096,"+h2+":4294967295" {
		t.Fatalf("formatted %q", s)
	}
	out, err := ParseChunkMap(s)
	if err != nil || !slices.Equal(out, in) {
		t.Fatalf("parsed %v, %v", out, err)
	}
}

func TestChunkMapRefusesMalformed(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, s := range []string{
		"", ",", h, h + ":", h + ":0", h + ":-1", h + ":+5", h + ":05", h + ":4294967296",
		h + ":1,", strings.ToUpper(h) + ":1", h[:63] + ":1", h + "0:1", h + ":1:2", " " + h + ":1",
		strings.Repeat(h+":1,", MaxChunkMapChunks) + h + ":1",
	} {
		if c, err := ParseChunkMap(s); err == nil {
			t.Errorf("%q parsed as %v", s, c)
		}
	}
}

// FuzzParseChunkMap: whatever a header holds, the parser answers an error
// or a map that formats back to the same text.
func FuzzParseChunkMap(f *testing.F) {
	f.Add(strings.Repeat("ab", 32) + ":4096")
	f.Add(strings.Repeat("0", 64) + ":1," + strings.Repeat("f", 64) + ":65536")
	f.Add("x:1,,")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChunkMap(s)
		if err != nil {
			return
		}
		if len(c) == 0 || len(c) > MaxChunkMapChunks || FormatChunkMap(c) != s {
			t.Fatalf("%q parsed as %v", s, c)
		}
	})
}
