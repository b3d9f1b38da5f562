package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// decodeStrict decodes every JSON document of out into a T, refusing
// unknown fields, so the output is held to the command's struct.
func decodeStrict[T any](t *testing.T, out string) []T {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var all []T
	for {
		var v T
		err := dec.Decode(&v)
		if err == io.EOF {
			return all
		}
		if err != nil {
			t.Fatalf("decode %T: %v\n%s", v, err, out)
		}
		all = append(all, v)
	}
}

// errorDoc decodes stderr as exactly one JSON error document.
func errorDoc(t *testing.T, stderr string) apiv1.Error {
	t.Helper()
	docs := decodeStrict[apiv1.ErrorDocument](t, stderr)
	if len(docs) != 1 || docs[0].Error == nil {
		t.Fatalf("stderr is not one error document: %q", stderr)
	}
	return *docs[0].Error
}

// writeRandom writes size deterministic pseudo-random bytes (seeded by
// seed) to path.
func writeRandom(t *testing.T, path string, size int64, seed uint64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	if _, err := io.CopyN(f, rand.NewChaCha8(s), size); err != nil {
		t.Fatal(err)
	}
}

// sameFile fails unless a and b hold the same bytes.
func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s (%d bytes) and %s (%d bytes) differ", a, len(x), b, len(y))
	}
}

// mustCLI runs nas and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("nas %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// putObjects stores body under each key of repo's default branch.
func putObjects(t *testing.T, c *nasclient.Client, repo string, objs map[string]string) {
	t.Helper()
	for k, body := range objs {
		o := nasclient.Object{Repo: repo, Key: k}
		if _, err := c.Put(context.Background(), o, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLsDuCatRm: the listing, counting, reading and removing commands, in
// text and --json, and their exit codes.
func TestLsDuCatRm(t *testing.T) {
	_, c := ownerCLI(t)
	mustCLI(t, "repo", "create", "objs", "--unprotected")
	putObjects(t, c, "objs", map[string]string{"a.txt": "alpha", "dir/b.txt": "bravo!", "dir/sub/c.txt": "charlie",
		"dir": "a file beside the directory", "dirx/d.txt": "delta"})

	out := mustCLI(t, "ls", "objs/dir", "--json")
	got := decodeStrict[lsEntry](t, out)
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Type+":"+e.Key)
	}
	if want := []string{"object:dir", "object:dir/b.txt", "prefix:dir/sub/"}; !slices.Equal(keys, want) {
		t.Fatalf("ls objs/dir: %v, want %v", keys, want)
	}
	if got[1].Size != 6 || got[1].ETag == "" || time.Since(got[1].LastModified) > time.Minute || !got[2].LastModified.IsZero() {
		t.Errorf("ls entries: %+v", got)
	}
	out = mustCLI(t, "ls", "nas://objs", "--recursive")
	if n := strings.Count(out, "\n"); n != 5 || !strings.Contains(out, "dir/sub/c.txt") {
		t.Errorf("ls --recursive of the root: %d lines\n%s", n, out)
	}

	dus := decodeStrict[duJSON](t, mustCLI(t, "du", "objs/dir/", "--json"))
	if len(dus) != 1 || dus[0] != (duJSON{Repo: "objs", Path: "dir/", Objects: 2, Bytes: 13}) {
		t.Errorf("du objs/dir/: %+v", dus)
	}
	if out := mustCLI(t, "cat", "objs/dir/sub/c.txt"); out != "charlie" {
		t.Errorf("cat: %q", out)
	}
	if out := mustCLI(t, "cat", "objs/dir/sub/c.txt", "--range", "1-3"); out != "har" {
		t.Errorf("cat --range 1-3: %q", out)
	}

	code, stderr := runCLIStderr(t, "cat", "objs/missing.txt", "--json")
	if doc := errorDoc(t, stderr); code != 1 || doc.Code != "NoSuchKey" {
		t.Errorf("cat of a missing key: exit %d, %+v", code, doc)
	}
	for _, args := range [][]string{{"ls"}, {"ls", "./local"}, {"cat", "objs/x", "--range", "5-1"}, {"rm", "objs/dir/"},
		{"rm", "objs/", "--recursive"}, {"cp", "a", "b"}, {"ls", "objs@Bad/x"}} {
		code, stderr := runCLIStderr(t, append(args, "--json")...)
		if doc := errorDoc(t, stderr); code != 2 || doc.Code != codeUsage {
			t.Errorf("nas %s: exit %d, %+v; want a usage error", strings.Join(args, " "), code, doc)
		}
	}

	rms := decodeStrict[rmJSON](t, mustCLI(t, "rm", "objs/dir", "--recursive", "--json"))
	if len(rms) != 1 || rms[0].Removed != 3 || len(rms[0].Failed) != 0 {
		t.Errorf("rm --recursive objs/dir: %+v", rms)
	}
	mustCLI(t, "rm", "objs/a.txt")
	if out := mustCLI(t, "ls", "objs", "--recursive"); !strings.Contains(out, "dirx/d.txt") || strings.Count(out, "\n") != 1 {
		t.Errorf("left after rm: %q", out)
	}
	mustCLI(t, "rm", "objs@main/", "--recursive", "--force")
	if out := mustCLI(t, "ls", "objs", "--recursive"); out != "" {
		t.Errorf("left after rm --force of the root: %q", out)
	}
	if code, _ := runCLI(t, "ls", "nosuchrepo"); code != 1 {
		t.Errorf("ls of a missing repository: exit %d", code)
	}
}

// TestCpLargeFile: a 100 MiB file goes up in parts and comes back whole.
func TestCpLargeFile(t *testing.T) {
	_, c := ownerCLI(t)
	mustCLI(t, "repo", "create", "big", "--unprotected")
	dir := t.TempDir()
	src := filepath.Join(dir, "model.bin")
	writeRandom(t, src, 100<<20+12345, 1)
	res := decodeStrict[fileResult](t, mustCLI(t, "cp", src, "big/weights/", "--json"))
	if len(res) != 1 || !res[0].Multipart || res[0].Dst != "big/weights/model.bin" || res[0].Size != 100<<20+12345 ||
		!strings.HasSuffix(res[0].ETag, "-7") {
		t.Fatalf("upload: %+v", res)
	}
	back := filepath.Join(dir, "back.bin")
	res = decodeStrict[fileResult](t, mustCLI(t, "cp", "big/weights/model.bin", back, "--json"))
	if len(res) != 1 || res[0].Action != "download" || res[0].Size != 100<<20+12345 {
		t.Fatalf("download: %+v", res)
	}
	sameFile(t, src, back)
	// No upload is left open.
	var open int
	err := c.List(context.Background(), "big", "", nasclient.ListOptions{}, func(p *nasclient.ListPage) error { open += len(p.Objects); return nil })
	if err != nil || open != 1 {
		t.Fatalf("objects after the upload: %d %v", open, err)
	}
}

// TestCpRecursive: 2,000 small files up, across branches on the gateway,
// and down again, byte for byte.
func TestCpRecursive(t *testing.T) {
	ownerCLI(t)
	mustCLI(t, "repo", "create", "many", "--unprotected")
	mustCLI(t, "commit", "many", "main", "-m", "base", "--allow-empty")
	mustCLI(t, "branch", "create", "many", "cleo/run-1")
	src := filepath.Join(t.TempDir(), "src")
	for i := range 2000 {
		writeRandom(t, filepath.Join(src, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i)), int64(i%700), uint64(i))
	}
	out := mustCLI(t, "cp", "--recursive", src, "many/data", "--parallel", "8")
	if !strings.Contains(out, "copied 2000 file(s)") {
		t.Fatalf("upload: %s", out[max(0, len(out)-200):])
	}
	res := decodeStrict[fileResult](t, mustCLI(t, "cp", "-r", "many/data/", "many@cleo/run-1:/copy", "--json"))
	if len(res) != 2000 || res[0].Action != "copy" || !strings.HasPrefix(res[0].Dst, "many@cleo/run-1:/copy/d00/") {
		t.Fatalf("copy across branches: %d results, first %+v", len(res), res[0])
	}
	dst := filepath.Join(t.TempDir(), "dst")
	mustCLI(t, "cp", "-r", "nas://many@cleo/run-1:/copy", dst)
	n := 0
	err := localFiles(src, func(rel string, _ os.FileInfo) {
		sameFile(t, filepath.Join(src, rel), filepath.Join(dst, rel))
		n++
	})
	if err != nil || n != 2000 {
		t.Fatalf("compared %d files: %v", n, err)
	}
	if code, _ := runCLI(t, "cp", src, "many/x"); code != 2 {
		t.Errorf("cp of a directory without --recursive: exit %d, want 2", code)
	}
}

// TestMirror: a second mirror copies nothing; after local changes,
// mirror --remove makes the prefix equal to the directory again, and a
// mirror back down equals it too.
func TestMirror(t *testing.T) {
	ownerCLI(t)
	mustCLI(t, "repo", "create", "mir", "--unprotected")
	src := filepath.Join(t.TempDir(), "site")
	for i := range 50 {
		writeRandom(t, filepath.Join(src, fmt.Sprintf("p%d", i%5), fmt.Sprintf("%02d.html", i)), int64(100+i), uint64(i))
	}
	if res := decodeStrict[fileResult](t, mustCLI(t, "mirror", src, "mir/site", "--json")); len(res) != 50 {
		t.Fatalf("first mirror: %d results", len(res))
	}
	if out := mustCLI(t, "mirror", src, "mir/site"); !strings.Contains(out, "0 copied, 0 deleted, 50 up to date") {
		t.Fatalf("second mirror: %s", out)
	}
	writeRandom(t, filepath.Join(src, "p0", "00.html"), 100, 999) // same size, new bytes
	writeRandom(t, filepath.Join(src, "new", "n.html"), 10, 7)
	must(t, os.Remove(filepath.Join(src, "p1", "01.html")))
	must(t, os.Remove(filepath.Join(src, "p2", "02.html")))

	dry := decodeStrict[fileResult](t, mustCLI(t, "mirror", src, "mir/site", "--remove", "--dry-run", "--json"))
	var acts []string
	for _, r := range dry {
		acts = append(acts, r.Action+" "+r.Dst)
		if !r.DryRun {
			t.Errorf("a dry run's result without dry_run: %+v", r)
		}
	}
	want := []string{"upload mir/site/new/n.html", "upload mir/site/p0/00.html", "delete mir/site/p1/01.html", "delete mir/site/p2/02.html"}
	if !slices.Equal(acts, want) {
		t.Fatalf("dry run: %v, want %v", acts, want)
	}
	if out := mustCLI(t, "mirror", src, "mir/site", "--remove"); !strings.Contains(out, "2 copied, 2 deleted, 47 up to date") {
		t.Fatalf("mirror --remove: %s", out)
	}
	back := filepath.Join(t.TempDir(), "back")
	mustCLI(t, "mirror", "mir/site", back)
	writeRandom(t, filepath.Join(back, "stray.txt"), 5, 1)
	if out := mustCLI(t, "mirror", "mir/site/", back, "--remove"); !strings.Contains(out, "0 copied, 1 deleted, 49 up to date") {
		t.Fatalf("mirror down again: %s", out)
	}
	var have, had []string
	must(t, localFiles(src, func(rel string, _ os.FileInfo) { have = append(have, rel) }))
	must(t, localFiles(back, func(rel string, _ os.FileInfo) { had = append(had, rel) }))
	if !slices.Equal(have, had) {
		t.Fatalf("after the mirrors: %v vs %v", have, had)
	}
	for _, rel := range have {
		sameFile(t, filepath.Join(src, rel), filepath.Join(back, rel))
	}
}

// TestObjectCommandsLease: with --lease-json the commands work in the
// lease's branch and see only its view; a path outside it does not exist.
func TestObjectCommandsLease(t *testing.T) {
	_, c := ownerCLI(t)
	mustCLI(t, "repo", "create", "leased", "--unprotected")
	putObjects(t, c, "leased", map[string]string{"work/in.txt": "visible", "secret/out.txt": "hidden"})
	mustCLI(t, "commit", "leased", "main", "-m", "base")
	mustCLI(t, "role", "put", "runner", "--repo", "leased", "--paths", "**", "--actions", "list,read,write,delete")
	lj := mustCLI(t, "lease", "create", "leased", "--role", "runner", "--paths", "work/**", "--actions", "list,read,write,delete", "--json")
	lf := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(lf, []byte(lj), 0o600))
	var lease struct {
		Branch string `json:"branch"`
	}
	must(t, json.Unmarshal([]byte(lj), &lease))

	if out := mustCLI(t, "--lease-json", lf, "ls", "leased", "--recursive"); !strings.Contains(out, "work/in.txt") || strings.Contains(out, "secret") {
		t.Errorf("the lease's listing: %q", out)
	}
	code, stderr := runCLIStderr(t, "--lease-json", lf, "cat", "leased/secret/out.txt", "--json")
	if doc := errorDoc(t, stderr); code != 1 || doc.Code != "NoSuchKey" {
		t.Errorf("cat outside the view: exit %d, %+v", code, doc)
	}
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "up", "a.bin"), 1000, 3)
	mustCLI(t, "--lease-json", lf, "cp", "-r", filepath.Join(dir, "up"), "leased/work/up")
	if code, _ := runCLI(t, "--lease-json", lf, "cp", filepath.Join(dir, "up", "a.bin"), "leased/secret/a.bin"); code != 1 {
		t.Errorf("an upload outside the view: exit %d", code)
	}
	dus := decodeStrict[duJSON](t, mustCLI(t, "--lease-json", lf, "du", "leased", "--json"))
	if len(dus) != 1 || dus[0].Objects != 2 || dus[0].Bytes != 1007 {
		t.Errorf("the lease's du: %+v", dus)
	}
	// The owner sees the run's upload on the lease's branch only.
	if out := mustCLI(t, "ls", "leased@"+lease.Branch+":/work/up/"); !strings.Contains(out, "work/up/a.bin") {
		t.Errorf("the owner's view of the run's branch: %q", out)
	}
	if out := mustCLI(t, "ls", "leased/work/up/"); out != "" {
		t.Errorf("the run's upload on main: %q", out)
	}
	mustCLI(t, "--lease-json", lf, "rm", "-r", "leased/work/up")
	if out := mustCLI(t, "--lease-json", lf, "ls", "-r", "leased/work"); strings.Contains(out, "up/") {
		t.Errorf("after the lease's rm: %q", out)
	}
}

// TestCpKeysStayInside: a download writes only inside its target
// directory; a key that is no local name fails on its own.
func TestCpKeysStayInside(t *testing.T) {
	_, c := ownerCLI(t)
	mustCLI(t, "repo", "create", "escape", "--unprotected")
	putObjects(t, c, "escape", map[string]string{"in/ok.txt": "ok", "in/../../evil.txt": "evil", "in/a//b": "dbl"})
	top := t.TempDir()
	dst := filepath.Join(top, "a", "b")
	code, out := runCLI(t, "cp", "-r", "escape/in", dst, "--json")
	res := decodeStrict[fileResult](t, out)
	failed := 0
	for _, r := range res {
		if r.Error != "" {
			failed++
		}
	}
	if code != 1 || len(res) != 3 || failed != 2 {
		t.Fatalf("exit %d, %d results, %d failed: %+v", code, len(res), failed, res)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "ok.txt")); err != nil || string(b) != "ok" {
		t.Fatalf("ok.txt: %q %v", b, err)
	}
	var files []string
	must(t, localFiles(top, func(rel string, _ os.FileInfo) { files = append(files, rel) }))
	if !slices.Equal(files, []string{"a/b/ok.txt"}) {
		t.Fatalf("files written: %v", files)
	}
}

// TestCpLocalLookalike: a local path whose first segment could be a
// repository is a gateway address unless written with ./, and the error
// for the missing repository says how to write it.
func TestCpLocalLookalike(t *testing.T) {
	ownerCLI(t)
	mustCLI(t, "repo", "create", "dest", "--unprotected")
	t.Chdir(t.TempDir())
	writeRandom(t, filepath.Join("results", "x.csv"), 10, 1)
	code, stderr := runCLIStderr(t, "cp", "results/x.csv", "dest/")
	if code != 1 || !strings.Contains(stderr, "NoSuchBucket") || !strings.Contains(stderr, "./results/x.csv") {
		t.Fatalf("cp results/x.csv: exit %d, %q", code, stderr)
	}
	if out := mustCLI(t, "cp", "./results/x.csv", "dest/"); !strings.Contains(out, "upload ./results/x.csv -> dest/x.csv") {
		t.Fatalf("cp ./results/x.csv: %q", out)
	}
}

// TestProgressOnlyForAPerson: no bar when standard output is not a
// terminal (as under go test) or --json is set.
func TestProgressOnlyForAPerson(t *testing.T) {
	defer func(saved clientFlags) { cf = saved }(cf)
	for _, js := range []bool{false, true} {
		cf.json = js
		if p := newProgress(100, "x"); p != nil {
			t.Errorf("a bar with --json=%v and standard output %v", js, os.Stdout.Name())
		}
	}
}

// TestPartSizeFor: uploads stay within S3's 10,000 parts up to 5 TiB, in
// whole MiB parts of at least 16 MiB.
func TestPartSizeFor(t *testing.T) {
	for _, size := range []int64{1, partSize, 100 << 20, maxParts * partSize, maxParts*partSize + 1, 1 << 40, maxObject} {
		ps := partSizeFor(size)
		if ps < partSize || ps%(1<<20) != 0 || (size+ps-1)/ps > maxParts {
			t.Errorf("size %d: part size %d makes %d parts", size, ps, (size+ps-1)/ps)
		}
	}
}
