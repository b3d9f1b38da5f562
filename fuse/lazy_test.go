package fuse_test

import (
	"bytes"
	"os"
	"os/exec"
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

// TestGitSourceOnTheMount: the files of an attached Git revision read
// through the mount, whole and by range, with the link and submodule
// forms the source lists.
func TestGitSourceOnTheMount(t *testing.T) {
	e := newEnv(t)
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	git("init", "-q", "-b", "main")
	doc := bytes.Repeat([]byte("a line of the handbook\n"), 20000)
	must(t, os.MkdirAll(filepath.Join(repo, "docs"), 0o700))
	must(t, os.WriteFile(filepath.Join(repo, "docs/handbook.md"), doc, 0o600))
	must(t, os.Symlink("docs/handbook.md", filepath.Join(repo, "latest")))
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	call(t, e.owner, "source/add", map[string]any{"repo": e.repo, "prefix": "git/", "url": "git:" + repo + "@main", "wait": true}, nil)
	dir, _ := e.mount(t, mountOpts{branch: "main"})
	if got := readFile(t, filepath.Join(dir, "git/docs/handbook.md")); !bytes.Equal(got, doc) {
		t.Fatalf("the handbook through the mount: %d bytes, want %d", len(got), len(doc))
	}
	if got := readFile(t, filepath.Join(dir, "git/latest")); string(got) != "docs/handbook.md" {
		t.Fatalf("the link reads %q, want its target", got)
	}
	f, err := os.Open(filepath.Join(dir, "git/docs/handbook.md"))
	must(t, err)
	defer f.Close()
	buf := make([]byte, 23)
	if _, err := f.ReadAt(buf, 23*1000); err != nil || !bytes.Equal(buf, doc[:23]) {
		t.Fatalf("pread: %q %v", buf, err)
	}
}
