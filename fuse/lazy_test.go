package fuse_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestLazyRangesOnTheMount: a pread of a file of an attached source that
// is not local yet fetches only the source's blocks the range touches,
// not the whole file; the whole file then reads back exact.
func TestLazyRangesOnTheMount(t *testing.T) {
	e := newEnv(t)
	src := t.TempDir()
	const size = 20 << 20 // three 8 MiB blocks, the last 4 MiB
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i*7 + i>>13)
	}
	must(t, os.WriteFile(filepath.Join(src, "big.bin"), big, 0o600))
	var added struct {
		Source struct {
			ID string `json:"id"`
		} `json:"source"`
	}
	call(t, e.owner, "source/add", map[string]any{"repo": e.repo, "prefix": "ext/", "url": "dir:" + src, "wait": true}, &added)
	dir, _ := e.mount(t, mountOpts{branch: "main"})
	f, err := os.Open(filepath.Join(dir, "ext/big.bin"))
	must(t, err)
	defer f.Close()
	buf := make([]byte, 100)
	off := int64(17 << 20)
	if n, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf[:n], big[off:off+100]) {
		t.Fatalf("pread at %d: %d bytes, %v", off, n, err)
	}
	local := func() int64 {
		var st struct {
			Status struct {
				LocalBytes int64 `json:"local_bytes"`
			} `json:"status"`
		}
		call(t, e.owner, "source/status", map[string]any{"id": added.Source.ID}, &st)
		return st.Status.LocalBytes
	}
	if got := local(); got != size-16<<20 {
		t.Fatalf("after one pread in the last block, %d bytes are local, want %d (that block only)", got, size-16<<20)
	}
	if got := readFile(t, filepath.Join(dir, "ext/big.bin")); !bytes.Equal(got, big) {
		t.Fatalf("the whole file: %d bytes", len(got))
	}
	if got := local(); got != size {
		t.Fatalf("after reading it all, %d bytes are local", got)
	}
}
