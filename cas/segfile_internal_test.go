package cas

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// TestSegFileWritesEveryByte writes segments of several sizes in pieces
// that straddle block boundaries, directly and through the page cache,
// and reads each back byte for byte. A segment smaller than a block, or
// one with direct writes off, never holds a block buffer.
func TestSegFileWritesEveryByte(t *testing.T) {
	for _, direct := range []bool{true, false} {
		for _, size := range []int{1, SegmentBlock - 1, SegmentBlock, SegmentBlock + 1, 3*SegmentBlock + 12345, 7 * SegmentBlock} {
			want := make([]byte, size)
			rng := rand.New(rand.NewPCG(uint64(size), 7))
			for i := range want {
				want[i] = byte(rng.Uint32())
			}
			p := filepath.Join(t.TempDir(), "s.seg")
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			w := newSegFile(f, direct)
			for rest := want; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(300<<10))
				if err := w.write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			usedDirect := w.direct
			if held := w.buf != nil; held && (!direct || size < SegmentBlock) {
				t.Fatalf("direct=%v size %d: holds a block buffer", direct, size)
			}
			closeAndCompare(t, w, p, want, fmt.Sprintf("direct=%v size %d", direct, size))
			if direct && size >= 2*SegmentBlock+directAlign && !usedDirect {
				t.Logf("size %d: the file system under %s refused O_DIRECT; the page-cache path wrote it", size, p)
			}
			if !direct && usedDirect {
				t.Fatalf("size %d: O_DIRECT used while turned off", size)
			}
		}
	}
}

// TestSegFileRefusedMidWrite: when the file system takes O_DIRECT but
// refuses a block (here: the file offset is not aligned, as no segment's
// is, so the write is refused with EINVAL), that block and the rest of
// the same write go through the page cache, and every byte reads back.
func TestSegFileRefusedMidWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.seg")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := newSegFile(f, true)
	want := make([]byte, 1+SegmentBlock+20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := w.pass(want[:1]); err != nil { // the offset is now 1
		t.Fatal(err)
	}
	w.buf = directPool.Get().(*[]byte)
	w.n = copy(*w.buf, want[1:SegmentBlock-9])
	if err := w.write(want[SegmentBlock-9:]); err != nil {
		t.Fatal(err)
	}
	if w.buf != nil || w.direct {
		t.Fatal("still on the direct path after a refused block")
	}
	closeAndCompare(t, w, p, want, "after a refused block")
}

// closeAndCompare finishes and closes w, then checks that the segment
// at p holds want; what names the case in a failure.
func closeAndCompare(t *testing.T, w *segFile, p string, want []byte, what string) {
	t.Helper()
	if err := w.finish(true); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: read back %d bytes that differ from the %d written", what, len(got), len(want))
	}
}

func TestAlignedBlock(t *testing.T) {
	for range 8 {
		b := alignedBlock()
		if len(*b) != SegmentBlock || cap(*b) != SegmentBlock {
			t.Fatalf("len %d cap %d", len(*b), cap(*b))
		}
		if a := uintptr(unsafe.Pointer(&(*b)[0])) % directAlign; a != 0 {
			t.Fatalf("misaligned by %d", a)
		}
	}
}
