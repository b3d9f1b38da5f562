package fuse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"syscall"
	"testing"
)

// TestBackingReadsLikeAFile: in memory and spilled to the staging area, a
// backing answers reads, writes past the end and truncations as a sparse
// file does, and gives its memory back.
func TestBackingReadsLikeAFile(t *testing.T) {
	dir := t.TempDir()
	budget := &stageBudget{limit: memStageTotal}
	b := newBacking(budget, dir)
	if _, err := b.WriteAt([]byte("hello"), 10); err != nil {
		t.Fatal(err)
	}
	want := append(make([]byte, 10), "hello"...)
	checkBacking(t, b, want)
	if b.f != nil || budget.used.Load() != 15 {
		t.Fatalf("a small file spilled (%v) or holds %d bytes of the budget, want 15", b.f != nil, budget.used.Load())
	}
	if err := b.Truncate(12); err != nil {
		t.Fatal(err)
	}
	want = want[:12]
	checkBacking(t, b, want)
	if err := b.Truncate(20); err != nil { // grows with zeros, not with the cut bytes
		t.Fatal(err)
	}
	want = append(want, make([]byte, 8)...)
	checkBacking(t, b, want)

	// Past memStageMax the bytes move to a file of the staging area.
	big := bytes.Repeat([]byte{7}, memStageMax)
	if _, err := b.WriteAt(big, 4); err != nil {
		t.Fatal(err)
	}
	want = append(want[:4], big...)
	checkBacking(t, b, want)
	if b.f == nil || budget.used.Load() != 0 {
		t.Fatalf("spilled %v, budget used %d: want a file and no memory held", b.f != nil, budget.used.Load())
	}
	name := b.f.Name()
	b.close()
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the staging file outlived close: %v", err)
	}
}

// TestBackingBudget: once the mount's staging memory is spoken for, a new
// file goes to the staging area, and closing files gives memory back.
func TestBackingBudget(t *testing.T) {
	dir := t.TempDir()
	budget := &stageBudget{limit: 8192}
	a, b := newBacking(budget, dir), newBacking(budget, dir)
	if _, err := a.WriteAt(make([]byte, 8000), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteAt(make([]byte, 1000), 0); err != nil {
		t.Fatal(err)
	}
	if a.f != nil || b.f == nil {
		t.Fatalf("first in memory %v, second spilled %v: want true, true", a.f == nil, b.f != nil)
	}
	a.close()
	b.close()
	if n := budget.used.Load(); n != 0 {
		t.Fatalf("%d bytes still held after close", n)
	}
}

// TestBackingRefusesOverflow: an offset whose end overflows is EFBIG,
// not a wrapped write.
func TestBackingRefusesOverflow(t *testing.T) {
	b := newBacking(&stageBudget{limit: memStageTotal}, t.TempDir())
	defer b.close()
	for _, off := range []int64{-1, math.MaxInt64 - 2} {
		if _, err := b.WriteAt([]byte("abcd"), off); !errors.Is(err, syscall.EFBIG) {
			t.Errorf("write at %d: %v, want EFBIG", off, err)
		}
	}
}

func checkBacking(t *testing.T, b *backing, want []byte) {
	t.Helper()
	got := make([]byte, len(want)+10)
	n, err := b.ReadAt(got, 0)
	if n != len(want) || err != io.EOF || !bytes.Equal(got[:n], want) {
		t.Fatalf("ReadAt: %d bytes, %v; want %d bytes and EOF, equal: %v", n, err, len(want), bytes.Equal(got[:n], want))
	}
	if n, err := b.ReadAt(got[:1], int64(len(want))); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end: %d, %v", n, err)
	}
}
