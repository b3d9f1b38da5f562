package fuse_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/fuse"
)

// TestMountAtCommit: a mount --at shows the files of that commit, not
// what the branch changed since (committed or staged), and refuses every
// change with EROFS.
func TestMountAtCommit(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "a.txt", []byte("old a"))
	e.put(t, "main", "dir/b.txt", []byte("old b"))
	e.commit(t, "main")
	var log apiv1.CommitLogResponse
	call(t, e.owner, "commit/log", map[string]any{"repo": e.repo, "ref": "main", "limit": 1}, &log)
	at := log.Commits[0].ID
	e.put(t, "main", "a.txt", []byte("new a"))
	e.put(t, "main", "later.txt", []byte("later"))
	e.commit(t, "main")
	e.put(t, "main", "staged.txt", []byte("staged"))

	dir, _ := e.mount(t, mountOpts{branch: "main", at: at})
	if got := names(t, dir); !slices.Equal(got, []string{"a.txt", "dir"}) {
		t.Errorf("mount --at lists %v", got)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); string(got) != "old a" {
		t.Errorf("a.txt at the commit: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "dir", "b.txt")); string(got) != "old b" {
		t.Errorf("dir/b.txt at the commit: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "later.txt")); !os.IsNotExist(err) {
		t.Errorf("a later file in a mount --at: %v", err)
	}
	wantErrno(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644), syscall.EROFS)
	wantErrno(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644), syscall.EROFS)
	wantErrno(t, os.Remove(filepath.Join(dir, "a.txt")), syscall.EROFS)
	wantErrno(t, os.Mkdir(filepath.Join(dir, "d2"), 0o755), syscall.EROFS)
	var doc struct {
		Mount struct {
			ReadOnly bool   `json:"read_only"`
			At       string `json:"at"`
		} `json:"mount"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, ".nas", "lease.json")), &doc); err != nil || !doc.Mount.ReadOnly || doc.Mount.At != at {
		t.Errorf(".nas/lease.json of a mount --at: %+v %v", doc, err)
	}
}

// TestMountPrefix: a mount --prefix shows only the subtree, a write lands
// under the prefix, and nothing above the prefix is reachable (".." at
// the mount's root leaves the mount).
func TestMountPrefix(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "top.txt", []byte("above the prefix"))
	e.put(t, "main", "proj/a.txt", []byte("in the subtree"))
	e.put(t, "main", "proj/sub/b.txt", []byte("deeper"))
	e.put(t, "main", "project.txt", []byte("a sibling sharing the prefix's letters"))
	e.commit(t, "main")
	e.fork(t, "dev", "main")

	dir, _ := e.mount(t, mountOpts{prefix: "proj"})
	if got := names(t, dir); !slices.Equal(got, []string{"a.txt", "sub"}) {
		t.Errorf("mount --prefix lists %v", got)
	}
	if got := readFile(t, filepath.Join(dir, "sub", "b.txt")); string(got) != "deeper" {
		t.Errorf("sub/b.txt: %q", got)
	}
	for _, p := range []string{"top.txt", "proj/a.txt", "../top.txt", "sub/../../top.txt"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s reachable from a mount of proj/: %v", p, err)
		}
	}
	parent := filepath.Dir(dir)
	if got := names(t, filepath.Join(dir, "..")); !slices.Equal(got, names(t, parent)) {
		t.Errorf(".. of the mount's root lists %v, want its parent's %v", got, names(t, parent))
	}
	writeFile(t, filepath.Join(dir, "out.txt"), []byte("written in the subtree"))
	got, err := e.get(e.owner, "dev", "proj/out.txt")
	if err != nil || !bytes.Equal(got, []byte("written in the subtree")) {
		t.Errorf("proj/out.txt on the branch: %q %v", got, err)
	}
	if _, err := e.get(e.owner, "dev", "out.txt"); err == nil {
		t.Error("a write of the subtree mount landed at the repository's root")
	}
	changes := string(readFile(t, filepath.Join(dir, ".nas", "changes")))
	if !strings.Contains(changes, "A out.txt") || strings.Contains(changes, "proj/") {
		t.Errorf(".nas/changes of a subtree mount: %q", changes)
	}
}

// TestLeaseMountAt: a lease mounts its branch as of a commit its branch
// has seen (its fork point), never one of the source's later history.
func TestLeaseMountAt(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "shared/launch/plan.md", []byte("v1"))
	e.commit(t, "main")
	lc, br, _ := e.runLease(t, nil)
	e.put(t, "main", "shared/launch/plan.md", []byte("v2"))
	e.commit(t, "main")
	headOf := func(ref string) string {
		var log apiv1.CommitLogResponse
		call(t, e.owner, "commit/log", map[string]any{"repo": e.repo, "ref": ref, "limit": 1}, &log)
		return log.Commits[0].ID
	}
	dir, _ := e.mount(t, mountOpts{c: lc, branch: br, at: headOf(br)})
	if got := readFile(t, filepath.Join(dir, "shared", "launch", "plan.md")); string(got) != "v1" {
		t.Errorf("the lease's mount at its fork point reads %q", got)
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	m, err := fuse.New(t.Context(), mnt, fuse.Options{Client: lc, Repo: e.repo, Branch: br, At: headOf("main"), CacheDir: t.TempDir()})
	if err == nil {
		m.Unmount(t.Context())
		t.Fatal("a lease mounted a commit its branch never saw")
	}
}
