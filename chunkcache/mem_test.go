package chunkcache

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestKeepSmall: with KeepSmall a small chunk is read back from memory
// and never becomes a file; a larger one goes to disk; the least recently
// used small chunks leave memory first once the limit is passed; a
// mismatching chunk is refused as before. A chunk that leaves memory
// goes to disk and reads back from there.
func TestKeepSmall(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	c.KeepSmall(2000, 3000)
	small, hs := testChunk(1, 1000)
	big, hb := testChunk(2, 5000)
	for _, x := range []struct {
		data []byte
		h    [32]byte
	}{{small, hs}, {big, hb}} {
		if err := c.Put(x.h, x.data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(c.path(hs)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a small chunk became a file: %v", err)
	}
	if _, err := os.Stat(c.path(hb)); err != nil {
		t.Fatalf("a large chunk is not on disk: %v", err)
	}
	got := make([]byte, 1000)
	if n, err := c.ReadAt(hs, got, 0); n != 1000 || err != nil || !bytes.Equal(got, small) || !c.Has(hs) {
		t.Fatalf("read from memory: %d, %v", n, err)
	}
	if n, err := c.ReadAt(hs, got, 900); n != 100 || err != io.EOF || !bytes.Equal(got[:100], small[900:]) {
		t.Fatalf("a read past the end: %d, %v; want 100 bytes and EOF", n, err)
	}
	// Two more small chunks pass the 3000-byte limit: the oldest (hs, last
	// used above, but before these) leaves.
	s2, h2 := testChunk(3, 1000)
	s3, h3 := testChunk(4, 1500)
	if err := c.Put(h2, s2); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.mem.readAt(hs, got, 0); !ok { // hs is now the most recent
		t.Fatal("hs left memory early")
	}
	if err := c.Put(h3, s3); err != nil {
		t.Fatal(err)
	}
	if c.mem.has(h2) || !c.mem.has(hs) || !c.mem.has(h3) {
		t.Fatalf("in memory after the limit: h2 %v (want gone), hs %v, h3 %v", c.mem.has(h2), c.mem.has(hs), c.mem.has(h3))
	}
	if _, err := os.Stat(c.path(h2)); err != nil {
		t.Fatalf("a chunk that left memory is not on disk: %v", err)
	}
	if n, err := c.ReadAt(h2, got, 0); n != 1000 || err != nil || !bytes.Equal(got, s2) || !c.Has(h2) {
		t.Fatalf("read back from disk after leaving memory: %d, %v", n, err)
	}
	if err := c.Put(h2, s3); !errors.Is(err, ErrMismatch) {
		t.Fatalf("a mismatching chunk: %v", err)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(entries) != 2 {
		t.Fatalf("files in the cache: %v; want the large chunk and the one that left memory", entries)
	}
}
