package fuse_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs a program in dir and returns its output, failing the test
// when it fails.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	// The child enters dir itself (sh's cd, after exec), not the forking
	// process: with cmd.Dir the vfork child chdirs into a mount this very
	// process serves, and a garbage collection starting then waits for
	// the forking thread while the mount cannot answer: the test hangs.
	cmd := exec.Command("sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, name}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGitInsideTheMount: git init, add, commit, status, diff, checkout and
// fsck work in a mounted branch, and the repository is a plain git
// repository on the gateway (a clone of it from S3 bytes is whole).
func TestGitInsideTheMount(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newEnv(t)
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	dir := filepath.Join(mnt, "proj")
	must(t, os.Mkdir(dir, 0o755))
	run(t, dir, "git", "init", "-q", "-b", "main")
	must(t, os.MkdirAll(filepath.Join(dir, "src/pkg"), 0o755))
	for i, name := range []string{"README.md", "src/main.go", "src/pkg/lib.go", "run.sh"} {
		writeFile(t, filepath.Join(dir, name), []byte(strings.Repeat(name+"\n", i+1)))
	}
	must(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "commit", "-q", "-m", "first")
	if out := run(t, dir, "git", "status", "--porcelain"); out != "" {
		t.Fatalf("status after commit: %q", out)
	}
	writeFile(t, filepath.Join(dir, "src/main.go"), []byte("changed\n"))
	must(t, os.Remove(filepath.Join(dir, "README.md")))
	if out := run(t, dir, "git", "status", "--porcelain"); out != " D README.md\n M src/main.go\n" {
		t.Fatalf("status after edits: %q", out)
	}
	if out := run(t, dir, "git", "diff", "--stat"); !strings.Contains(out, "2 files changed") {
		t.Fatalf("diff: %q", out)
	}
	run(t, dir, "git", "commit", "-q", "-am", "second")
	run(t, dir, "git", "checkout", "-q", "HEAD~1")
	if got := readFile(t, filepath.Join(dir, "README.md")); string(got) != "README.md\n" {
		t.Fatalf("checkout restored %q", got)
	}
	run(t, dir, "git", "checkout", "-q", "main")
	run(t, dir, "git", "fsck", "--strict")
	if out := run(t, dir, "git", "log", "--format=%s"); out != "second\nfirst\n" {
		t.Fatalf("log: %q", out)
	}
	if out := run(t, dir, "git", "ls-files", "-s", "run.sh"); !strings.HasPrefix(out, "100755") {
		t.Fatalf("the executable bit was not kept: %q", out)
	}
	// The same repository, read back from the gateway into a local
	// directory, is a whole git repository.
	local := t.TempDir()
	run(t, mnt, "cp", "-a", "proj", local)
	run(t, filepath.Join(local, "proj"), "git", "fsck", "--strict")
	// After a remount (a fresh cache), git still sees a clean tree.
	mnt2, _ := e.mount(t, mountOpts{})
	if out := run(t, filepath.Join(mnt2, "proj"), "git", "status", "--porcelain"); out != "" {
		t.Fatalf("status in a second mount: %q", out)
	}
}

// TestPythonInsideTheMount: a small Python program that writes, appends,
// seeks, renames atomically and lists, as programs do.
func TestPythonInsideTheMount(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	e := newEnv(t)
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	prog := `
import json, os, tempfile
os.makedirs("out/reports", exist_ok=True)
with open("out/data.csv", "w") as f:
    for i in range(1000):
        f.write(f"{i},{i*i}\n")
with open("out/data.csv", "a") as f:
    f.write("end\n")
with open("out/data.csv", "r+b") as f:
    f.seek(2)
    f.write(b"X")
    f.seek(0, os.SEEK_END)
    size = f.tell()
# atomic replace, as json tools do
fd, tmp = tempfile.mkstemp(dir="out/reports")
with os.fdopen(fd, "w") as f:
    json.dump({"rows": 1000, "size": size}, f)
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, "out/reports/summary.json")
print(sorted(os.listdir("out")), sorted(os.listdir("out/reports")))
print(json.load(open("out/reports/summary.json")))
`
	out := run(t, mnt, py, "-c", prog)
	if !strings.Contains(out, "['data.csv', 'reports'] ['summary.json']") || !strings.Contains(out, "'rows': 1000") {
		t.Fatalf("python printed %q", out)
	}
	got, err := e.get(e.owner, "dev", "out/data.csv")
	must(t, err)
	if !bytes.HasPrefix(got, []byte("0,X\n1,1\n")) || !bytes.HasSuffix(got, []byte("999,998001\nend\n")) {
		t.Fatalf("the gateway holds %q...", got[:min(len(got), 40)])
	}
}
