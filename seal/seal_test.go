package seal

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func testKey(t testing.TB) *Key {
	k, err := Derive(bytes.Repeat([]byte{7}, KeySize), bytes.Repeat([]byte{9}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sealAll(t testing.TB, k *Key, plain []byte) []byte {
	c, err := io.ReadAll(k.Encrypt(bytes.NewReader(plain)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// open reads [off, off+n) of plain's sealed form c.
func open(k *Key, c []byte, plain, off, n int64) ([]byte, error) {
	var out bytes.Buffer
	coff, clen, o := k.Range(&out, plain, off, n)
	if coff+clen > int64(len(c)) {
		clen = max(int64(len(c))-coff, 0)
	}
	if _, err := o.Write(c[coff : coff+clen]); err != nil {
		return nil, err
	}
	return out.Bytes(), o.Close()
}

func TestRoundTripRanges(t *testing.T) {
	k := testKey(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, Frame - 1, Frame, Frame + 1, 3*Frame + 5} {
		plain := make([]byte, size)
		for i := range plain {
			plain[i] = byte(r.Uint32())
		}
		c := sealAll(t, k, plain)
		if int64(len(c)) != CipherSize(int64(size)) {
			t.Fatalf("size %d: sealed %d bytes, CipherSize says %d", size, len(c), CipherSize(int64(size)))
		}
		for range 50 {
			off := r.Int64N(int64(size) + 1)
			n := r.Int64N(int64(size) - off + 1)
			got, err := open(k, c, int64(size), off, n)
			if err != nil || !bytes.Equal(got, plain[off:off+n]) {
				t.Fatalf("size %d [%d,+%d): %v, %d bytes", size, off, n, err, len(got))
			}
		}
	}
}

func TestTamperTruncateReorder(t *testing.T) {
	k := testKey(t)
	plain := bytes.Repeat([]byte("abcdefgh"), 3*Frame/8)
	c := sealAll(t, k, plain)
	flipped := bytes.Clone(c)
	flipped[Frame+Overhead+3] ^= 1
	if _, err := open(k, flipped, int64(len(plain)), 0, int64(len(plain))); !errors.Is(err, ErrOpen) {
		t.Errorf("a flipped bit: %v", err)
	}
	if _, err := open(k, c[:2*(Frame+Overhead)], int64(len(plain)), 0, int64(len(plain))); !errors.Is(err, ErrOpen) {
		t.Errorf("the last frame dropped: %v", err)
	}
	swapped := bytes.Clone(c)
	copy(swapped, c[Frame+Overhead:2*(Frame+Overhead)])
	copy(swapped[Frame+Overhead:], c[:Frame+Overhead])
	if _, err := open(k, swapped, int64(len(plain)), 0, int64(len(plain))); !errors.Is(err, ErrOpen) {
		t.Errorf("two frames swapped: %v", err)
	}
	// Two full frames sealed as a stream of their own end with a last
	// frame; read as the first frames of a longer segment they do not open.
	short := sealAll(t, k, plain[:2*Frame])
	if _, err := open(k, short, int64(len(plain)), 0, Frame); err != nil {
		t.Fatalf("the first frame of a prefix opens alike: %v", err)
	}
	if _, err := open(k, short, 2*Frame, 0, 2*Frame); err != nil {
		t.Fatal(err)
	}
	if _, err := open(k, c[:2*(Frame+Overhead)], 2*Frame, 0, 2*Frame); !errors.Is(err, ErrOpen) {
		t.Errorf("a truncated segment passed off as a shorter one: %v", err)
	}
	other, _ := Derive(bytes.Repeat([]byte{8}, KeySize), bytes.Repeat([]byte{9}, SaltSize))
	if _, err := open(other, c, int64(len(plain)), 0, 10); !errors.Is(err, ErrOpen) {
		t.Errorf("another domain's key: %v", err)
	}
}

// FuzzOpen: any bytes, any size and range, never panic, and what opens
// under the test key was sealed by it.
func FuzzOpen(f *testing.F) {
	k := testKey(f)
	f.Add(sealAll(f, k, []byte("hello")), int64(5), int64(1), int64(3))
	f.Add([]byte{}, int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, c []byte, plain, off, n int64) {
		if plain < 0 || plain > 4*Frame || off < 0 || n < 0 || off > plain || n > plain-off {
			return
		}
		var out bytes.Buffer
		coff, clen, o := k.Range(&out, plain, off, n)
		if coff < 0 || clen < 0 || coff+clen > CipherSize(plain) {
			t.Fatalf("range [%d,+%d) outside the sealed size %d", coff, clen, CipherSize(plain))
		}
		if coff > int64(len(c)) {
			return
		}
		_, err := o.Write(c[coff:min(coff+clen, int64(len(c)))])
		if err == nil {
			err = o.Close()
		}
		if err == nil && int64(out.Len()) != n {
			t.Fatalf("opened %d bytes, want %d", out.Len(), n)
		}
	})
}

// BenchmarkSealOpen seals and opens 4 MiB, beside a plain copy of the
// same bytes (the baseline): the ratio is what sealing costs a byte.
func BenchmarkSealOpen(b *testing.B) {
	k := testKey(b)
	plain := bytes.Repeat([]byte("0123456789abcdef"), 256<<10)
	b.Run("plain-copy", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			var out bytes.Buffer
			io.Copy(&out, bytes.NewReader(plain))
		}
	})
	b.Run("seal", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			io.Copy(io.Discard, k.Encrypt(bytes.NewReader(plain)))
		}
	})
	sealed := sealAll(b, k, plain)
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			if _, err := open(k, sealed, int64(len(plain)), 0, int64(len(plain))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
