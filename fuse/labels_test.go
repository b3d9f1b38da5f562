package fuse_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestLabelsOnTheMount: a mounted file answers its trust labels as
// read-only user.nas.* extended attributes; a file above the lease's
// ceiling is not there; reading an external file taints the run, which
// .nas/lease.json shows.
func TestLabelsOnTheMount(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "shared/launch/web.html", []byte("<p>from the web</p>"))
	e.put(t, "main", "shared/launch/notes.md", []byte("# notes\n"))
	e.put(t, "main", "shared/launch/key.txt", []byte("kept secret"))
	e.commit(t, "main")
	call(t, e.owner, "label/set", map[string]any{"repo": e.repo, "glob": "shared/launch/web.html", "origin": "external"}, nil)
	call(t, e.owner, "label/set", map[string]any{"repo": e.repo, "glob": "shared/launch/key.txt", "sensitivity": "secret"}, nil)
	c, br, _ := e.runLease(t, map[string]any{})
	dir, _ := e.mount(t, mountOpts{c: c, branch: br})
	web := filepath.Join(dir, "shared/launch/web.html")
	buf := make([]byte, 64)
	attr := func(name string) string {
		t.Helper()
		n, err := syscall.Getxattr(web, name, buf)
		if err != nil {
			t.Fatalf("getxattr %s: %v", name, err)
		}
		return string(buf[:n])
	}
	if got := attr("user.nas.origin"); got != "external" {
		t.Fatalf("user.nas.origin of web.html: %q", got)
	}
	if got := attr("user.nas.sensitivity"); got != "private" {
		t.Fatalf("user.nas.sensitivity: %q", got)
	}
	if _, err := syscall.Getxattr(web, "user.other", buf); err != syscall.ENODATA {
		t.Fatalf("another attribute: %v, want ENODATA", err)
	}
	if err := syscall.Setxattr(web, "user.nas.origin", []byte("owner"), 0); err != syscall.EPERM {
		t.Fatalf("setting a label: %v, want EPERM", err)
	}
	if n, err := syscall.Listxattr(web, buf); err != nil || n == 0 {
		t.Fatalf("listxattr: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "shared/launch/key.txt")); !os.IsNotExist(err) {
		t.Fatalf("a secret above the lease's ceiling: %v, want ENOENT", err)
	}
	if got := names(t, filepath.Join(dir, "shared/launch")); slices.Contains(got, "key.txt") {
		t.Fatalf("the directory lists the secret: %v", got)
	}
	// cp -a preserves what it can: the refused attributes (ENOTSUP) stop
	// nothing.
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	writeFile(t, filepath.Join(src, "sub", "f.txt"), []byte("copied"))
	if out, err := exec.Command("cp", "-a", src+"/.", filepath.Join(dir, "shared/launch/copy")).CombinedOutput(); err != nil {
		t.Fatalf("cp -a into the mount: %v %s", err, out)
	}
	if got := readFile(t, filepath.Join(dir, "shared/launch/copy/sub/f.txt")); string(got) != "copied" {
		t.Fatalf("copied file: %q", got)
	}
	readFile(t, web)
	var doc struct {
		Taint []string `json:"session_taint"`
	}
	must(t, json.Unmarshal(readFile(t, filepath.Join(dir, ".nas/lease.json")), &doc))
	if !slices.Contains(doc.Taint, "external") {
		t.Fatalf(".nas/lease.json session_taint %v after reading web.html", doc.Taint)
	}
}
