package cas

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFileCacheClosesEvictedHandles: a handle evicted while a reader
// holds it still reads, and is closed when that reader releases it; one
// evicted with no reader is closed at once, so open files stay bounded.
func TestFileCacheClosesEvictedHandles(t *testing.T) {
	dir := t.TempDir()
	c := newFileCache(1)
	path := func(i int) string { return filepath.Join(dir, string(rune('a'+i))) }
	for i := range 3 {
		if err := os.WriteFile(path(i), []byte("segment"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, release, err := c.open(path(0))
	if err != nil {
		t.Fatal(err)
	}
	free, releaseFree, err := c.open(path(1)) // evicts a, which is held
	if err != nil {
		t.Fatal(err)
	}
	releaseFree()
	if _, err := held.ReadAt(make([]byte, 3), 0); err != nil {
		t.Fatalf("an evicted handle a reader holds: %v", err)
	}
	release()
	if _, err := held.ReadAt(make([]byte, 3), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("an evicted handle after its last release: %v, want closed", err)
	}
	_, r3, err := c.open(path(2)) // evicts b, which nobody holds
	if err != nil {
		t.Fatal(err)
	}
	defer r3()
	if _, err := free.ReadAt(make([]byte, 3), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("an evicted handle nobody held: %v, want closed", err)
	}
}
