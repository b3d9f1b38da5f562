package fuse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
)

// The lease cases of the mount: a run's mount sees exactly its lease's
// small world, through every path a program can take, with the errno of
// the specification's table; and the gateway, checked with the owner's
// credentials, shows that nothing leaked or changed.

// world is what every lease test seeds on main: a visible part under
// shared/launch/, and hidden keys beside it, under it and above it.
var world = map[string]string{
	"shared/launch/notes.md":     "notes v1",
	"shared/launch/sub/deep.txt": "deep",
	"shared/secret/plan.txt":     "hidden plan",      // shared/secret holds only hidden keys
	"shared/launchx":             "prefix neighbour", // shares the glob's literal prefix
	"shared/launch2/x":           "prefix neighbour dir",
	"finance/salaries.txt":       "secret salaries",
	"finance/q1/report.txt":      "hidden report",
	"top.txt":                    "top secret",
}

// symlinkMode is st_mode of a symbolic link as the mount stores it.
const symlinkMode = "41471" // S_IFLNK | 0777

// seedWorld stores world on main, with two symbolic links (one hidden,
// one visible pointing at a hidden file) and two empty directories (one
// hidden), and commits it.
func seedWorld(t testing.TB, e *env) {
	t.Helper()
	for k, v := range world {
		e.put(t, "main", k, []byte(v))
	}
	e.put(t, "main", "shared/launch/empty/", nil)
	e.put(t, "main", "finance/empty/", nil)
	e.putLink(t, "main", "finance/link", "salaries.txt")
	e.putLink(t, "main", "shared/launch/to-salaries", "../../finance/salaries.txt")
	e.commit(t, "main")
}

// putLink stores a symbolic link object as the mount would.
func (e *env) putLink(t testing.TB, branch, key, target string) {
	t.Helper()
	_, err := e.owner.Put(context.Background(), client.Object{Repo: e.repo, Branch: branch, Key: key}, strings.NewReader(target),
		int64(len(target)), client.PutOptions{ContentType: "application/x-symlink", Meta: map[string]string{"mode": symlinkMode}})
	if err != nil {
		t.Fatalf("put link %s: %v", key, err)
	}
}

// runLease issues a lease on a fresh run branch forked from main and
// returns its client, its branch and its ID.
func (e *env) runLease(t testing.TB, args map[string]any) (*client.Client, string, string) {
	t.Helper()
	base := map[string]any{"fork_from": "main", "ttl": "1h", "paths": []string{"shared/launch/**"},
		"actions": []string{"list", "read", "write", "delete"}}
	for k, v := range args {
		base[k] = v
	}
	c, l := e.lease(t, base)
	return c, l["branch"].(string), l["lease_id"].(string)
}

// snapshot is every key of a branch with its version, as the owner sees
// it: what "nothing changed on the gateway" is checked against.
func (e *env) snapshot(t testing.TB, branch string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		var p struct {
			Objects []struct {
				Key       string `json:"key"`
				ETag      string `json:"etag"`
				VersionID string `json:"version_id"`
			} `json:"objects"`
			Next string `json:"next_cursor"`
		}
		call(t, e.owner, "object/list", map[string]any{"repo": e.repo, "branch": branch, "cursor": cursor, "limit": 10000}, &p)
		for _, o := range p.Objects {
			out[o.Key] = o.ETag + "@" + o.VersionID
		}
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
}

// unchanged fails unless the branch holds exactly what before held, except
// for the keys in allowed (which may have been added or changed).
func (e *env) unchanged(t testing.TB, branch string, before map[string]string, allowed ...string) {
	t.Helper()
	after := e.snapshot(t, branch)
	var diffs []string
	for k, v := range before {
		if slices.Contains(allowed, k) {
			continue
		}
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if w != v {
			diffs = append(diffs, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && !slices.Contains(allowed, k) {
			diffs = append(diffs, "added "+k)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("the gateway's %s changed: %v", branch, diffs)
	}
}

// ownerGet reads a key of a branch with the owner's credentials.
func (e *env) ownerGet(t testing.TB, branch, key string) string {
	t.Helper()
	b, err := e.get(e.owner, branch, key)
	if err != nil {
		t.Fatalf("owner get %s@%s: %v", key, branch, err)
	}
	return string(b)
}

// ownerMissing fails unless the key is absent from the branch.
func (e *env) ownerMissing(t testing.TB, branch, key string) {
	t.Helper()
	if _, err := e.get(e.owner, branch, key); client.Code(err) != "NoSuchKey" {
		t.Fatalf("owner get %s@%s: %v, want NoSuchKey", key, branch, err)
	}
}

// remaining is the lease's remaining budgets, as the owner reads them.
func (e *env) remaining(t testing.TB, leaseID string) (read, written int64) {
	t.Helper()
	var out struct {
		Remaining struct {
			BytesRead    int64 `json:"bytes_read"`
			BytesWritten int64 `json:"bytes_written"`
		} `json:"remaining"`
	}
	call(t, e.owner, "lease/get", map[string]any{"lease_id": leaseID}, &out)
	return out.Remaining.BytesRead, out.Remaining.BytesWritten
}

// createErr tries to create p and reports what open(O_CREAT) said: the
// refusal must come from the open itself, not later at close.
func createErr(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	os.Remove(p)
	return errors.New("open(O_CREAT) of " + p + " succeeded")
}

// openErr tries to open p with flag and reports what open said.
func openErr(p string, flag int) error {
	f, err := os.OpenFile(p, flag, 0)
	if err != nil {
		return err
	}
	f.Close()
	return fmt.Errorf("open(%#x) of %s succeeded", flag, p)
}

// walk lists every path under dir (relative, directories with a trailing
// "/"), without the control directory.
func walk(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == ".nas" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

// hiddenPaths are the seeded names a lease on shared/launch/** must not
// see, as paths under the mount.
var hiddenPaths = []string{
	"finance", "finance/salaries.txt", "finance/q1", "finance/q1/report.txt", "finance/link", "finance/empty",
	"top.txt", "shared/secret", "shared/secret/plan.txt", "shared/launchx", "shared/launch2", "shared/launch2/x",
}

// TestLeaseSmallWorld: every escape attempt out of a lease's view, on
// one mount of a lease on shared/launch/** (plus two empty view
// directories), answers ENOENT and changes nothing on the gateway.
func TestLeaseSmallWorld(t *testing.T) {
	e := newEnv(t)
	seedWorld(t, e)
	mainBefore := e.snapshot(t, "main")
	lc, br, _ := e.runLease(t, map[string]any{"paths": []string{"shared/launch/**", "out/**", "reports/2024/**"}})
	mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
	at := func(p string) string { return filepath.Join(mnt, p) }

	t.Run("hidden names do not exist", func(t *testing.T) {
		before := e.snapshot(t, br)
		for _, p := range hiddenPaths {
			_, err := os.Lstat(at(p))
			wantErrno(t, err, syscall.ENOENT)
			_, err = os.Stat(at(p))
			wantErrno(t, err, syscall.ENOENT)
			_, err = os.Open(at(p))
			wantErrno(t, err, syscall.ENOENT)
			_, err = os.ReadFile(at(p))
			wantErrno(t, err, syscall.ENOENT)
			_, err = os.Readlink(at(p))
			wantErrno(t, err, syscall.ENOENT)
			_, err = os.ReadDir(at(p))
			wantErrno(t, err, syscall.ENOENT)
		}
		e.unchanged(t, br, before)
	})

	t.Run("listings omit hidden names at every level", func(t *testing.T) {
		if got, want := names(t, mnt), []string{"out", "reports", "shared"}; !slices.Equal(got, want) {
			t.Fatalf("root: %v, want %v", got, want)
		}
		if got, want := names(t, at("shared")), []string{"launch"}; !slices.Equal(got, want) {
			t.Fatalf("shared: %v, want %v", got, want)
		}
		want := []string{"out/", "reports/", "reports/2024/", "shared/", "shared/launch/", "shared/launch/empty/", "shared/launch/notes.md",
			"shared/launch/sub/", "shared/launch/sub/deep.txt", "shared/launch/to-salaries"}
		if got := walk(t, mnt); !slices.Equal(got, want) {
			t.Fatalf("the whole mount: %v, want %v", got, want)
		}
		if got := readFile(t, at("shared/launch/notes.md")); string(got) != "notes v1" {
			t.Fatalf("visible file: %q", got)
		}
	})

	t.Run("create at hidden paths", func(t *testing.T) {
		before := e.snapshot(t, br)
		for _, p := range []string{"new-top.txt", "top.txt", "finance/new.txt", "finance/salaries.txt", "shared/new.txt",
			"shared/secret/new.txt", "shared/launchy", "shared/launch2/y", "reports/r.txt", "out.txt"} {
			wantErrno(t, createErr(at(p)), syscall.ENOENT)
			wantErrno(t, os.WriteFile(at(p), []byte("x"), 0o644), syscall.ENOENT)
			_, err := os.Lstat(at(p))
			wantErrno(t, err, syscall.ENOENT)
		}
		if got := names(t, mnt); slices.Contains(got, "new-top.txt") || slices.Contains(got, "out.txt") {
			t.Fatalf("a refused name is listed: %v", got)
		}
		e.unchanged(t, br, before)
		if got := e.ownerGet(t, br, "top.txt"); got != "top secret" {
			t.Fatalf("the hidden top.txt became %q", got)
		}
	})

	t.Run("mkdir at hidden paths", func(t *testing.T) {
		before := e.snapshot(t, br)
		for _, p := range []string{"newdir", "finance", "finance/q2", "shared/secret", "shared/other", "shared/launch2"} {
			wantErrno(t, os.Mkdir(at(p), 0o755), syscall.ENOENT)
			_, err := os.Stat(at(p))
			wantErrno(t, err, syscall.ENOENT)
		}
		wantErrno(t, os.MkdirAll(at("finance/q3/deep"), 0o755), syscall.ENOENT)
		e.unchanged(t, br, before)
	})

	t.Run("rename into and out of the hidden moves nothing", func(t *testing.T) {
		before := e.snapshot(t, br)
		src := at("shared/launch/notes.md")
		for _, dst := range []string{"top.txt", "new-top.txt", "shared/notes.md", "shared/secret/notes.md", "finance/notes.md", "shared/launchx"} {
			wantErrno(t, os.Rename(src, at(dst)), syscall.ENOENT)
			_, err := os.Stat(at(dst))
			wantErrno(t, err, syscall.ENOENT)
		}
		// A whole directory, into a hidden name.
		for _, dst := range []string{"sub2", "shared/sub", "finance/sub"} {
			wantErrno(t, os.Rename(at("shared/launch/sub"), at(dst)), syscall.ENOENT)
		}
		// An empty view directory, into a hidden name.
		wantErrno(t, os.Rename(at("out"), at("out2")), syscall.ENOENT)
		// Out of the hidden.
		for _, from := range []string{"top.txt", "finance/salaries.txt", "finance", "shared/secret", "shared/launchx"} {
			wantErrno(t, os.Rename(at(from), at("shared/launch/stolen")), syscall.ENOENT)
		}
		if got := readFile(t, src); string(got) != "notes v1" {
			t.Fatalf("the source after refused renames: %q", got)
		}
		if got := readFile(t, at("shared/launch/sub/deep.txt")); string(got) != "deep" {
			t.Fatalf("the directory after refused renames: %q", got)
		}
		if got := walk(t, mnt); slices.Contains(got, "sub2/") || slices.Contains(got, "out2/") || slices.Contains(got, "shared/launch/stolen") || !slices.Contains(got, "out/") {
			t.Fatalf("after refused renames the mount shows %v", got)
		}
		e.unchanged(t, br, before)
	})

	t.Run("unlink and rmdir of hidden names", func(t *testing.T) {
		before := e.snapshot(t, br)
		for _, p := range []string{"top.txt", "finance/salaries.txt", "finance/link", "shared/launchx", "shared/secret/plan.txt"} {
			wantErrno(t, os.Remove(at(p)), syscall.ENOENT)
		}
		for _, p := range []string{"finance", "finance/q1", "finance/empty", "shared/secret", "shared/launch2"} {
			wantErrno(t, syscall.Rmdir(at(p)), syscall.ENOENT)
		}
		// rm -r of a hidden directory finds nothing to remove.
		must(t, os.RemoveAll(at("finance")))
		e.unchanged(t, br, before)
	})

	t.Run("symbolic links do not let reads escape", func(t *testing.T) {
		// A visible link whose target is a hidden file: the link itself
		// is the lease's to read, the target is not there.
		if got, err := os.Readlink(at("shared/launch/to-salaries")); err != nil || got != "../../finance/salaries.txt" {
			t.Fatalf("readlink: %q %v", got, err)
		}
		_, err := os.ReadFile(at("shared/launch/to-salaries"))
		wantErrno(t, err, syscall.ENOENT)
		_, err = os.Stat(at("shared/launch/to-salaries"))
		wantErrno(t, err, syscall.ENOENT)
		// Links the run makes, relative and absolute, to hidden names.
		before := e.snapshot(t, br)
		must(t, os.Symlink("../../top.txt", at("shared/launch/rel")))
		must(t, os.Symlink(at("finance/salaries.txt"), at("shared/launch/abs")))
		must(t, os.Symlink(at("finance"), at("shared/launch/absdir")))
		for _, l := range []string{"rel", "abs", "absdir/salaries.txt", "absdir/link"} {
			_, err := os.ReadFile(at("shared/launch/" + l))
			wantErrno(t, err, syscall.ENOENT)
		}
		_, err = os.ReadDir(at("shared/launch/absdir"))
		wantErrno(t, err, syscall.ENOENT)
		// Writing through a link to a hidden name is a create there.
		wantErrno(t, os.WriteFile(at("shared/launch/rel"), []byte("x"), 0o644), syscall.ENOENT)
		// A link at a hidden name cannot be made.
		wantErrno(t, os.Symlink("notes.md", at("shared/l")), syscall.ENOENT)
		wantErrno(t, os.Symlink("notes.md", at("finance/l")), syscall.ENOENT)
		e.unchanged(t, br, before, "shared/launch/rel", "shared/launch/abs", "shared/launch/absdir")
		if got := e.ownerGet(t, br, "top.txt"); got != "top secret" {
			t.Fatalf("top.txt through a link: %q", got)
		}
		// The links themselves are stored faithfully.
		if got := e.ownerGet(t, br, "shared/launch/rel"); got != "../../top.txt" {
			t.Fatalf("link object: %q", got)
		}
		// A link to a visible file works.
		must(t, os.Symlink("notes.md", at("shared/launch/ok")))
		if got := readFile(t, at("shared/launch/ok")); string(got) != "notes v1" {
			t.Fatalf("through a visible link: %q", got)
		}
	})

	t.Run("view directories exist when empty and take files", func(t *testing.T) {
		for _, d := range []string{"out", "reports", "reports/2024"} {
			st, err := os.Stat(at(d))
			if err != nil || !st.IsDir() {
				t.Fatalf("view directory %s: %v", d, err)
			}
		}
		if got := names(t, at("out")); len(got) != 0 {
			t.Fatalf("out lists %v", got)
		}
		if got := names(t, at("reports")); !slices.Equal(got, []string{"2024"}) {
			t.Fatalf("reports lists %v", got)
		}
		writeFile(t, at("out/x"), []byte("result"))
		must(t, os.MkdirAll(at("out/a/b"), 0o755))
		writeFile(t, at("out/a/b/c"), []byte("c"))
		writeFile(t, at("reports/2024/r.txt"), []byte("r"))
		if got := e.ownerGet(t, br, "out/x"); got != "result" {
			t.Fatalf("out/x on the gateway: %q", got)
		}
		if got := e.ownerGet(t, br, "out/a/b/c"); got != "c" {
			t.Fatalf("out/a/b/c on the gateway: %q", got)
		}
		if got := e.ownerGet(t, br, "reports/2024/r.txt"); got != "r" {
			t.Fatalf("reports/2024/r.txt on the gateway: %q", got)
		}
		if got := names(t, at("out")); !slices.Equal(got, []string{"a", "x"}) {
			t.Fatalf("out lists %v", got)
		}
	})

	// main never changed, whatever the run did.
	e.unchanged(t, "main", mainBefore)
	for k, v := range world {
		if got := e.ownerGet(t, "main", k); got != v {
			t.Fatalf("main's %s: %q", k, got)
		}
	}
}

// TestLeaseReadOnly: a lease that may list and read gets EACCES on every
// change of a visible name (ENOENT still for hidden ones), and a mount
// made read-only gets EROFS even with a lease that may write.
func TestLeaseReadOnly(t *testing.T) {
	e := newEnv(t)
	seedWorld(t, e)
	changes := func(t *testing.T, at func(string) string, want syscall.Errno) {
		t.Helper()
		notes := at("shared/launch/notes.md")
		wantErrno(t, createErr(at("shared/launch/new.txt")), want)
		wantErrno(t, openErr(notes, os.O_WRONLY), want)
		wantErrno(t, openErr(notes, os.O_RDWR), want)
		wantErrno(t, openErr(notes, os.O_WRONLY|os.O_TRUNC), want)
		wantErrno(t, openErr(notes, os.O_WRONLY|os.O_APPEND), want)
		wantErrno(t, os.WriteFile(notes, []byte("overwritten"), 0o644), want)
		wantErrno(t, os.Truncate(notes, 0), want)
		wantErrno(t, os.Mkdir(at("shared/launch/d"), 0o755), want)
		wantErrno(t, os.Remove(notes), want)
		wantErrno(t, os.Rename(notes, at("shared/launch/renamed.md")), want)
		wantErrno(t, os.Rename(at("shared/launch/sub"), at("shared/launch/sub2")), want)
		wantErrno(t, syscall.Rmdir(at("shared/launch/empty")), want)
		wantErrno(t, os.Symlink("notes.md", at("shared/launch/l")), want)
		wantErrno(t, os.Chmod(notes, 0o600), want)
		mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
		wantErrno(t, os.Chtimes(notes, mt, mt), want)
		// access(2) tells the truth before anything is tried ([ -w f ]).
		wantErrno(t, syscall.Access(notes, 2), want) // W_OK
		must(t, syscall.Access(notes, 4))            // R_OK
		if got := readFile(t, notes); string(got) != "notes v1" {
			t.Fatalf("after refused changes: %q", got)
		}
		if got := names(t, at("shared/launch")); !slices.Equal(got, []string{"empty", "notes.md", "sub", "to-salaries"}) {
			t.Fatalf("after refused changes the directory lists %v", got)
		}
	}

	t.Run("lease without write", func(t *testing.T) {
		lc, br, _ := e.runLease(t, map[string]any{"actions": []string{"list", "read"}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
		at := func(p string) string { return filepath.Join(mnt, p) }
		before := e.snapshot(t, br)
		changes(t, at, syscall.EACCES)
		// Hidden names stay hidden: ENOENT, not EACCES.
		wantErrno(t, createErr(at("finance/new.txt")), syscall.ENOENT)
		wantErrno(t, createErr(at("top.txt")), syscall.ENOENT)
		wantErrno(t, os.Mkdir(at("finance"), 0o755), syscall.ENOENT)
		e.unchanged(t, br, before)
	})

	t.Run("lease with list only", func(t *testing.T) {
		lc, br, _ := e.runLease(t, map[string]any{"actions": []string{"list"}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
		at := func(p string) string { return filepath.Join(mnt, p) }
		if got := names(t, at("shared/launch")); !slices.Equal(got, []string{"empty", "notes.md", "sub", "to-salaries"}) {
			t.Fatalf("listing: %v", got)
		}
		_, err := os.ReadFile(at("shared/launch/notes.md"))
		wantErrno(t, err, syscall.EACCES)
		_, err = os.Readlink(at("shared/launch/to-salaries"))
		wantErrno(t, err, syscall.EACCES)
		wantErrno(t, createErr(at("shared/launch/new.txt")), syscall.EACCES)
		_, err = os.ReadFile(at("finance/salaries.txt"))
		wantErrno(t, err, syscall.ENOENT)
	})

	t.Run("read-only mount", func(t *testing.T) {
		lc, br, _ := e.runLease(t, nil)
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br, readOnly: true})
		at := func(p string) string { return filepath.Join(mnt, p) }
		before := e.snapshot(t, br)
		changes(t, at, syscall.EROFS)
		_, err := os.Stat(at("finance/salaries.txt"))
		wantErrno(t, err, syscall.ENOENT)
		e.unchanged(t, br, before)
	})
}

// TestLeaseBudgets: a spent read budget is EDQUOT on read, also when the
// bytes sit in the host's chunk cache; a lease with budget left is
// charged for cached bytes; a spent write budget is EDQUOT at write or
// close and nothing of the refused bytes reaches the gateway.
func TestLeaseBudgets(t *testing.T) {
	e := newEnv(t)
	data := pattern(11, 200<<10)
	e.put(t, "main", "shared/launch/data.bin", data)
	e.put(t, "main", "shared/launch/notes.md", []byte("notes v1"))
	e.commit(t, "main")

	t.Run("read budget over the network", func(t *testing.T) {
		lc, br, id := e.runLease(t, map[string]any{"budgets": map[string]any{"bytes_read": 1000}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
		_, err := os.ReadFile(filepath.Join(mnt, "shared/launch/data.bin"))
		wantErrno(t, err, syscall.EDQUOT)
		if r, _ := e.remaining(t, id); r != 1000 {
			t.Fatalf("remaining bytes_read %d after a refused read, want 1000", r)
		}
	})

	t.Run("read budget over the chunk cache", func(t *testing.T) {
		cache := t.TempDir()
		// The owner's mount of main fills the host's chunk cache.
		own, _ := e.mount(t, mountOpts{branch: "main", cacheDir: cache})
		if got := readFile(t, filepath.Join(own, "shared/launch/data.bin")); !bytes.Equal(got, data) {
			t.Fatal("owner read differs")
		}
		if countFiles(t, filepath.Join(cache, "chunks")) == 0 {
			t.Fatal("the owner's read cached nothing")
		}
		// A lease with a tiny budget reads the cached file: refused.
		lc, br, id := e.runLease(t, map[string]any{"budgets": map[string]any{"bytes_read": 1000}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br, cacheDir: cache})
		_, err := os.ReadFile(filepath.Join(mnt, "shared/launch/data.bin"))
		wantErrno(t, err, syscall.EDQUOT)
		if r, _ := e.remaining(t, id); r != 1000 {
			t.Fatalf("remaining bytes_read %d after a refused cached read, want 1000", r)
		}
		// A lease with enough budget is charged for exactly what it read.
		const budget = 10 << 20
		lc2, br2, id2 := e.runLease(t, map[string]any{"budgets": map[string]any{"bytes_read": budget}})
		mnt2, _ := e.mount(t, mountOpts{c: lc2, branch: br2, cacheDir: cache})
		if got := readFile(t, filepath.Join(mnt2, "shared/launch/data.bin")); !bytes.Equal(got, data) {
			t.Fatal("cached read differs")
		}
		if r, _ := e.remaining(t, id2); r != budget-int64(len(data)) {
			t.Fatalf("remaining bytes_read %d after reading %d cached bytes, want %d", r, len(data), budget-int64(len(data)))
		}
	})

	t.Run("request budget", func(t *testing.T) {
		lc, br, _ := e.runLease(t, map[string]any{"budgets": map[string]any{"requests": 40}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			_, err = os.ReadFile(filepath.Join(mnt, "shared/launch/notes.md"))
		}
		wantErrno(t, err, syscall.EDQUOT)
		// A spent budget is not an ended lease: changes are EDQUOT too,
		// never EROFS.
		wantErrno(t, os.Remove(filepath.Join(mnt, "shared/launch/notes.md")), syscall.EDQUOT)
		e.ownerGet(t, br, "shared/launch/notes.md")
	})

	t.Run("write budget", func(t *testing.T) {
		lc, br, id := e.runLease(t, map[string]any{"budgets": map[string]any{"bytes_written": 1000}})
		mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
		at := func(p string) string { return filepath.Join(mnt, p) }
		before := e.snapshot(t, br)
		// One write larger than the budget: EDQUOT at write.
		f, err := os.Create(at("shared/launch/big"))
		must(t, err)
		_, err = f.Write(pattern(1, 4000))
		wantErrno(t, err, syscall.EDQUOT)
		f.Close()
		if b, err := e.get(e.owner, br, "shared/launch/big"); err == nil && len(b) != 0 {
			t.Fatalf("the gateway holds %d bytes of a refused write", len(b))
		}
		// Two files within the budget each, over it together: the second
		// close is EDQUOT and leaves nothing.
		a, err := os.Create(at("shared/launch/a"))
		must(t, err)
		b, err := os.Create(at("shared/launch/b"))
		must(t, err)
		_, err = a.Write(pattern(2, 600))
		must(t, err)
		_, err = b.Write(pattern(3, 600))
		must(t, err)
		must(t, a.Close())
		wantErrno(t, b.Close(), syscall.EDQUOT)
		if got := e.ownerGet(t, br, "shared/launch/a"); got != string(pattern(2, 600)) {
			t.Fatal("the file within the budget differs on the gateway")
		}
		e.ownerMissing(t, br, "shared/launch/b")
		gone(t, at("shared/launch/b"))
		// An edit of an existing file over what is left: refused at close,
		// and the file is what the gateway still holds.
		g, err := os.OpenFile(at("shared/launch/notes.md"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = g.Write(pattern(4, 500))
		if err == nil {
			err = g.Close()
		} else {
			g.Close()
		}
		wantErrno(t, err, syscall.EDQUOT)
		if got := readFile(t, at("shared/launch/notes.md")); string(got) != "notes v1" {
			t.Fatalf("the refused edit shows: %d bytes", len(got))
		}
		e.unchanged(t, br, before, "shared/launch/a", "shared/launch/big")
		if _, w := e.remaining(t, id); w != 400 {
			t.Fatalf("remaining bytes_written %d, want 400", w)
		}
	})
}

// countFiles counts the regular files under dir.
func countFiles(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// gone waits (a bounded while: the kernel may keep a name for the
// mount's TTL) until p no longer exists.
func gone(t testing.TB, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Lstat(p)
		if errors.Is(err, syscall.ENOENT) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after 10s: %v", p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// endedChecks is what a mount does once its lease has ended (expired or
// revoked) and a program was told so (ESTALE): every change the mount can
// refuse itself is EROFS, on an open file and on names it knows; whatever
// needs the gateway (reading, even a cached file; a name never seen; a
// listing) is ESTALE; .nas/lease.json says so; the gateway is unchanged.
func endedChecks(t *testing.T, e *env, mnt, br string, before map[string]string, w *os.File) {
	t.Helper()
	at := func(p string) string { return filepath.Join(mnt, p) }
	notes := at("shared/launch/notes.md")
	_, err := w.Write([]byte("after the end"))
	wantErrno(t, err, syscall.EROFS)
	must(t, w.Close()) // nothing was taken, nothing to upload
	_, err = os.ReadFile(notes)
	wantErrno(t, err, syscall.ESTALE)
	wantErrno(t, openErr(notes, os.O_WRONLY), syscall.EROFS)
	wantErrno(t, openErr(notes, os.O_RDWR|os.O_TRUNC), syscall.EROFS)
	wantErrno(t, os.WriteFile(notes, []byte("x"), 0o644), syscall.EROFS)
	wantErrno(t, os.Truncate(notes, 0), syscall.EROFS)
	wantErrno(t, os.Chmod(notes, 0o600), syscall.EROFS)
	wantErrno(t, os.Remove(notes), syscall.EROFS)
	_, err = os.ReadFile(notes)
	wantErrno(t, err, syscall.ESTALE)
	wantErrno(t, createErr(at("shared/launch/after.txt")), syscall.ESTALE)
	wantErrno(t, os.Mkdir(at("shared/launch/d"), 0o755), syscall.ESTALE)
	_, err = os.Stat(at("shared/launch/never-seen"))
	wantErrno(t, err, syscall.ESTALE)
	_, err = os.ReadDir(at("shared/launch"))
	wantErrno(t, err, syscall.ESTALE)
	var doc struct {
		Mount struct {
			ReadOnly   bool `json:"read_only"`
			LeaseEnded bool `json:"lease_ended"`
		} `json:"mount"`
	}
	must(t, json.Unmarshal(readFile(t, at(".nas/lease.json")), &doc))
	if !doc.Mount.ReadOnly || !doc.Mount.LeaseEnded {
		t.Fatalf(".nas/lease.json after the lease ended: %+v", doc.Mount)
	}
	e.unchanged(t, br, before)
}

// TestLeaseExpiry: after a short lease expires, the next operation (here
// a write on a file opened before) is ESTALE, and the mount is read-only.
func TestLeaseExpiry(t *testing.T) {
	e := newEnv(t)
	seedWorld(t, e)
	lc, l := e.lease(t, map[string]any{"fork_from": "main", "ttl": "2s", "paths": []string{"shared/launch/**"},
		"actions": []string{"list", "read", "write", "delete"}})
	br := l["branch"].(string)
	exp, err := time.Parse(time.RFC3339Nano, l["expires_at"].(string))
	must(t, err)
	mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
	if got := readFile(t, filepath.Join(mnt, "shared/launch/notes.md")); string(got) != "notes v1" {
		t.Fatalf("before expiry: %q", got)
	}
	w, err := os.OpenFile(filepath.Join(mnt, "shared/launch/sub/deep.txt"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	before := e.snapshot(t, br)
	time.Sleep(time.Until(exp) + 300*time.Millisecond)
	_, err = w.Write([]byte("after expiry"))
	wantErrno(t, err, syscall.ESTALE)
	endedChecks(t, e, mnt, br, before, w)
}

// TestLeaseRevocation: once the owner revokes the lease, the next
// operation is ESTALE, for a file opened before the revocation (it reads
// no new bytes) and for files cached on the host alike, and the mount is
// read-only.
func TestLeaseRevocation(t *testing.T) {
	e := newEnv(t)
	seedWorld(t, e)
	big := pattern(5, 16<<20)
	e.put(t, "main", "shared/launch/big.bin", big)
	e.commit(t, "main")
	lc, br, id := e.runLease(t, nil)
	mnt, _ := e.mount(t, mountOpts{c: lc, branch: br})
	at := func(p string) string { return filepath.Join(mnt, p) }
	// A file read whole (in the chunk cache), one open and read in part,
	// one open for writing.
	if got := readFile(t, at("shared/launch/notes.md")); string(got) != "notes v1" {
		t.Fatalf("before revocation: %q", got)
	}
	f, err := os.Open(at("shared/launch/big.bin"))
	must(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	_, err = f.ReadAt(buf, 0)
	must(t, err)
	if !bytes.Equal(buf, big[:len(buf)]) {
		t.Fatal("first piece differs")
	}
	w, err := os.OpenFile(at("shared/launch/sub/deep.txt"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	before := e.snapshot(t, br)
	call(t, e.owner, "lease/revoke", map[string]any{"lease_id": id}, nil)
	// The open handle reads no new bytes (past what the kernel read
	// ahead before the revocation), whether the mount read them ahead
	// into its cache or not.
	_, err = f.ReadAt(buf, 12<<20)
	wantErrno(t, err, syscall.ESTALE)
	_, err = f.ReadAt(buf, 6<<20)
	wantErrno(t, err, syscall.ESTALE)
	endedChecks(t, e, mnt, br, before, w)
}

// TestLeaseControlFiles: .nas shows the run its own lease, changes and
// gates, and two runs mounted side by side see neither each other's
// writes nor each other's .nas.
func TestLeaseControlFiles(t *testing.T) {
	e := newEnv(t)
	seedWorld(t, e)
	acts := []string{"list", "read", "write", "delete", "propose"}
	ca, bra, ida := e.runLease(t, map[string]any{"actions": acts, "budgets": map[string]any{"bytes_read": 1 << 30}})
	cb, brb, idb := e.runLease(t, map[string]any{"actions": acts})
	cache := t.TempDir()
	ma, _ := e.mount(t, mountOpts{c: ca, branch: bra, cacheDir: cache})
	mb, _ := e.mount(t, mountOpts{c: cb, branch: brb, cacheDir: cache})

	t.Run("lease.json", func(t *testing.T) {
		var doc struct {
			Lease struct {
				ID        string    `json:"lease_id"`
				Branch    string    `json:"branch"`
				Paths     []string  `json:"paths"`
				Actions   []string  `json:"actions"`
				ExpiresAt time.Time `json:"expires_at"`
			} `json:"lease"`
			Remaining map[string]int64 `json:"remaining"`
			Mount     struct {
				Branch   string `json:"branch"`
				ReadOnly bool   `json:"read_only"`
			} `json:"mount"`
		}
		must(t, json.Unmarshal(readFile(t, filepath.Join(ma, ".nas/lease.json")), &doc))
		l := doc.Lease
		if l.ID != ida || l.Branch != bra || !slices.Equal(l.Paths, []string{"shared/launch/**"}) || !slices.Equal(l.Actions, acts) {
			t.Fatalf("lease.json: %+v", l)
		}
		if until := time.Until(l.ExpiresAt); until < 50*time.Minute || until > time.Hour {
			t.Fatalf("lease.json expires_at %v", l.ExpiresAt)
		}
		if doc.Remaining["bytes_read"] <= 0 || doc.Remaining["bytes_read"] > 1<<30 {
			t.Fatalf("lease.json remaining: %v", doc.Remaining)
		}
		if doc.Mount.Branch != bra || doc.Mount.ReadOnly {
			t.Fatalf("lease.json mount: %+v", doc.Mount)
		}
		// The other run's lease.json is its own.
		must(t, json.Unmarshal(readFile(t, filepath.Join(mb, ".nas/lease.json")), &doc))
		if doc.Lease.ID != idb || doc.Lease.Branch != brb {
			t.Fatalf("run b's lease.json: %+v", doc.Lease)
		}
		wantErrno(t, os.WriteFile(filepath.Join(ma, ".nas/lease.json"), []byte("{}"), 0o644), syscall.EACCES)
	})

	t.Run("side by side", func(t *testing.T) {
		writeFile(t, filepath.Join(ma, "shared/launch/from-a.md"), []byte("a"))
		writeFile(t, filepath.Join(mb, "shared/launch/from-b.md"), []byte("b"))
		must(t, os.Remove(filepath.Join(mb, "shared/launch/notes.md")))
		_, err := os.Stat(filepath.Join(mb, "shared/launch/from-a.md"))
		wantErrno(t, err, syscall.ENOENT)
		_, err = os.Stat(filepath.Join(ma, "shared/launch/from-b.md"))
		wantErrno(t, err, syscall.ENOENT)
		if got := readFile(t, filepath.Join(ma, "shared/launch/notes.md")); string(got) != "notes v1" {
			t.Fatalf("run a lost notes.md that run b deleted: %q", got)
		}
		if got := names(t, filepath.Join(ma, "shared/launch")); !slices.Equal(got, []string{"empty", "from-a.md", "notes.md", "sub", "to-salaries"}) {
			t.Fatalf("run a lists %v", got)
		}
		if got := names(t, filepath.Join(mb, "shared/launch")); !slices.Equal(got, []string{"empty", "from-b.md", "sub", "to-salaries"}) {
			t.Fatalf("run b lists %v", got)
		}
		// Over S3 and the control API, each lease reaches only its branch.
		if _, err := e.get(ca, brb, "shared/launch/from-b.md"); err == nil {
			t.Fatal("lease a read run b's file over S3")
		}
		if err := ca.Do(context.Background(), apiv1.ChangesListRequest{Repo: e.repo, Branch: brb}, nil); client.Code(err) != "NotFound" {
			t.Fatalf("lease a listing run b's changes: %v", err)
		}
	})

	t.Run("changes and pending", func(t *testing.T) {
		changes := string(readFile(t, filepath.Join(ma, ".nas/changes")))
		if !strings.Contains(changes, "A shared/launch/from-a.md") || strings.Contains(changes, "from-b") || strings.Contains(changes, "notes.md") {
			t.Fatalf("run a's .nas/changes: %q", changes)
		}
		changes = string(readFile(t, filepath.Join(mb, ".nas/changes")))
		if !strings.Contains(changes, "A shared/launch/from-b.md") || !strings.Contains(changes, "D shared/launch/notes.md") || strings.Contains(changes, "from-a") {
			t.Fatalf("run b's .nas/changes: %q", changes)
		}
		if got := readFile(t, filepath.Join(ma, ".nas/pending")); len(got) != 0 {
			t.Fatalf("pending before any proposal: %q", got)
		}
		var p apiv1.ProposeCreateResponse
		if err := ca.Do(context.Background(), apiv1.ProposeCreateRequest{Repo: e.repo, Into: "main", Intent: "from a"}, &p); err != nil {
			t.Fatalf("propose: %v", err)
		}
		if p.Proposal.Status != "pending" || p.Proposal.GateID == "" {
			t.Fatalf("proposal: %+v", p.Proposal)
		}
		pending := string(readFile(t, filepath.Join(ma, ".nas/pending")))
		if !strings.Contains(pending, "gate "+p.Proposal.GateID+" waiting") || !strings.Contains(pending, bra) {
			t.Fatalf("run a's .nas/pending: %q", pending)
		}
		// Run b sees neither run a's gate nor its changes.
		if got := readFile(t, filepath.Join(mb, ".nas/pending")); len(got) != 0 {
			t.Fatalf("run b's .nas/pending shows %q", got)
		}
		if strings.Contains(string(readFile(t, filepath.Join(mb, ".nas/changes"))), "from-a") {
			t.Fatal("run b's .nas/changes shows run a's file")
		}
		e.ownerMissing(t, "main", "shared/launch/from-a.md")
		// The run cannot decide its own gate through the mount: .nas takes
		// no writes, and nothing else of the mount reaches a gate.
		wantErrno(t, os.WriteFile(filepath.Join(ma, ".nas/pending"), []byte("approve "+p.Proposal.GateID+"\n"), 0o644), syscall.EACCES)
		wantErrno(t, createErr(filepath.Join(ma, ".nas/approve")), syscall.EACCES)
		wantErrno(t, os.Mkdir(filepath.Join(ma, ".nas/gates"), 0o755), syscall.EACCES)
		wantErrno(t, os.Remove(filepath.Join(ma, ".nas/pending")), syscall.EACCES)
		wantErrno(t, os.Rename(filepath.Join(ma, ".nas/pending"), filepath.Join(ma, ".nas/approved")), syscall.EACCES)
		wantErrno(t, os.Chmod(filepath.Join(ma, ".nas/pending"), 0o666), syscall.EACCES)
		wantErrno(t, os.Remove(filepath.Join(ma, ".nas")), syscall.EACCES)
		if got := string(readFile(t, filepath.Join(ma, ".nas/pending"))); !strings.Contains(got, p.Proposal.GateID) {
			t.Fatalf("after the attempts, .nas/pending: %q", got)
		}
		e.ownerMissing(t, "main", "shared/launch/from-a.md")
	})
}
