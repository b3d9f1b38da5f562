package chunk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentnas/nas/chunk"
)

func TestParseHash(t *testing.T) {
	h := chunk.Sum([]byte("hello"))
	got, err := chunk.ParseHash(h.String())
	if err != nil || got != h {
		t.Fatalf("ParseHash(String()) = %v, %v; want %v", got, err, h)
	}
	for _, bad := range []string{"", "00", strings.Repeat("g", 64), strings.Repeat("0", 63), strings.Repeat("0", 65)} {
		if _, err := chunk.ParseHash(bad); !errors.Is(err, chunk.ErrBadHash) {
			t.Errorf("ParseHash(%q) = %v, want ErrBadHash", bad, err)
		}
	}
}

func TestHasherMatchesSum(t *testing.T) {
	hs := chunk.NewHasher()
	hs.Write([]byte("hel"))
	hs.Write([]byte("lo"))
	if hs.Sum() != chunk.Sum([]byte("hello")) {
		t.Fatal("incremental hash differs from Sum")
	}
	hs.Reset()
	if hs.Sum() != chunk.Sum(nil) {
		t.Fatal("Reset did not clear the hasher")
	}
	if !(chunk.Hash{}).IsZero() || chunk.Sum(nil).IsZero() {
		t.Fatal("IsZero")
	}
}

func FuzzParseHash(f *testing.F) {
	f.Add(chunk.Sum(nil).String())
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := chunk.ParseHash(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(h.String(), s) {
			t.Fatalf("ParseHash(%q) round-trips to %q", s, h.String())
		}
	})
}
