package fuse_test

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestReadAheadOfRepeatedChunks: a file whose chunks repeat (the same
// block over and over, as zeros or a repeated record are) reads back
// whole through read-ahead; marking one chunk loading twice crashed the
// mount ("close of nil channel").
func TestReadAheadOfRepeatedChunks(t *testing.T) {
	e := newEnv(t)
	block := pattern(7, 1<<20)
	body := bytes.Repeat(block, 24)
	e.put(t, "main", "repeated.bin", body)
	e.commit(t, "main")
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	if got := readFile(t, filepath.Join(mnt, "repeated.bin")); !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, equal %v", len(got), bytes.Equal(got, body))
	}
}
