package fuse

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"syscall"
)

// backing is where a staged file's local bytes live: in memory while the
// file is small, so a program writing many small files makes no file in
// the staging area for each of them; in a sparse file of the staging area
// once it grows past memStageMax, or when the mount's memory for staging
// (memStageTotal) is spoken for. Its methods are called under the staged
// file's mutex.
type backing struct {
	budget *stageBudget
	dir    string   // the staging area
	mem    []byte   // the bytes while in memory
	f      *os.File // the staging file once spilled
}

// Bounds of staging in memory: a file up to 1 MiB, up to 64 MiB for all
// of a mount's staged files together.
const (
	memStageMax   = 1 << 20
	memStageTotal = 64 << 20
)

// stageBudget is the mount's memory for staged files.
type stageBudget struct {
	used  atomic.Int64
	limit int64
}

// take reserves n bytes, or reports false when they would pass the limit.
func (b *stageBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *stageBudget) give(n int64) { b.used.Add(-n) }

// newBacking is an empty backing in memory.
func newBacking(budget *stageBudget, dir string) *backing {
	return &backing{budget: budget, dir: dir}
}

// ReadAt reads like a file: short, with io.EOF, past the end.
func (b *backing) ReadAt(p []byte, off int64) (int, error) {
	if b.f != nil {
		return b.f.ReadAt(p, off)
	}
	if off < 0 {
		return 0, fmt.Errorf("staging area: read at %d: %w", off, os.ErrInvalid)
	}
	if off >= int64(len(b.mem)) {
		return 0, io.EOF
	}
	n := copy(p, b.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes like a file: a gap before off reads as zeros.
func (b *backing) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > math.MaxInt64-int64(len(p)) {
		return 0, fmt.Errorf("staging area: write of %d bytes at %d: %w", len(p), off, syscall.EFBIG)
	}
	if b.f == nil {
		end := off + int64(len(p))
		if end <= int64(len(b.mem)) {
			return copy(b.mem[off:], p), nil
		}
		if b.grow(end) {
			return copy(b.mem[off:], p), nil
		}
		if err := b.spill(); err != nil {
			return 0, err
		}
	}
	return b.f.WriteAt(p, off)
}

// Truncate sets the size like a file's.
func (b *backing) Truncate(n int64) error {
	if b.f == nil {
		switch {
		case n <= int64(len(b.mem)):
			clear(b.mem[n:])
			b.budget.give(int64(len(b.mem)) - n)
			b.mem = b.mem[:n]
			return nil
		case b.grow(n):
			return nil
		}
		if err := b.spill(); err != nil {
			return err
		}
	}
	return b.f.Truncate(n)
}

// grow extends the bytes in memory to n (zeros), if n stays within the
// bounds of staging in memory.
func (b *backing) grow(n int64) bool {
	more := n - int64(len(b.mem))
	if n > memStageMax || !b.budget.take(more) {
		return false
	}
	if n <= int64(cap(b.mem)) {
		b.mem = b.mem[:n]
		return true
	}
	m := make([]byte, n, min(max(2*int64(cap(b.mem)), n, 4096), memStageMax))
	copy(m, b.mem)
	b.mem = m
	return true
}

// spill moves the bytes in memory to a new file of the staging area.
func (b *backing) spill() error {
	f, err := os.CreateTemp(b.dir, "edit-*")
	if err != nil {
		return fmt.Errorf("staging area: %w", err)
	}
	if _, err := f.WriteAt(b.mem, 0); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("staging area: %w", err)
	}
	b.budget.give(int64(len(b.mem)))
	b.mem, b.f = nil, f
	return nil
}

// close drops the bytes, and the staging file if there is one.
func (b *backing) close() {
	if b.f != nil {
		b.f.Close()
		os.Remove(b.f.Name())
		b.f = nil
	}
	b.budget.give(int64(len(b.mem)))
	b.mem = nil
}
