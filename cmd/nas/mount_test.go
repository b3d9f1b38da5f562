package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/nastest"
)

// TestMain lets a test run the nas command in a child process (the test
// binary itself, with NAS_CLI_ARGS), to send it real signals.
func TestMain(m *testing.M) {
	if args := os.Getenv("NAS_CLI_ARGS"); args != "" {
		os.Exit(run(strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

// nasChild starts `nas args...` as a child process.
func nasChild(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), env...), "NAS_CLI_ARGS="+strings.Join(args, "\x1f"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// waitMounted waits until dir is a FUSE mount point.
func waitMounted(t *testing.T, dir string, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/self/mounts")
		if strings.Contains(string(b), " "+dir+" fuse") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s was not mounted:\n%s", dir, out)
}

// TestMountCommand: `nas mount` serves in the foreground; SIGTERM
// unmounts it cleanly after committing what was written, and `nas
// unmount` ends another mount the same way. A lease file alone says what
// to mount.
func TestMountCommand(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and /dev/fuse to mount")
	}
	srv := nastest.Start(t)
	env := []string{"NAS_ENDPOINT=" + srv.Endpoint, "NAS_ACCESS_KEY=" + nastest.AccessKey, "NAS_SECRET_KEY=" + nastest.SecretKey}
	for k, v := range map[string]string{"NAS_ENDPOINT": srv.Endpoint, "NAS_ACCESS_KEY": nastest.AccessKey, "NAS_SECRET_KEY": nastest.SecretKey} {
		t.Setenv(k, v)
	}
	if code, _ := runCLI(t, "repo", "create", "mnt", "--unprotected"); code != 0 {
		t.Fatal("repo create failed")
	}
	if code, _ := runCLI(t, "branch", "create", "mnt", "dev"); code != 0 {
		t.Fatal("branch create failed")
	}

	dir := filepath.Join(t.TempDir(), "m")
	must(t, os.Mkdir(dir, 0o755))
	cache := "--cache-dir=" + t.TempDir()
	cmd, out := nasChild(t, env, "mount", dir, "--repo", "mnt", "--branch", "dev", cache, "--commit-after", "1h")
	waitMounted(t, dir, out)
	must(t, os.WriteFile(filepath.Join(dir, "by-mount.txt"), []byte("written through the mount"), 0o644))
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nas mount after SIGTERM: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(b), " "+dir+" ") {
		t.Fatal("still mounted after SIGTERM")
	}
	// The write was committed on the way out (the quiet period was 1h).
	code, log := runCLI(t, "log", "mnt", "dev", "-n", "1")
	if code != 0 || !strings.Contains(log, "nas mount") {
		t.Fatalf("no commit of the mount's changes: %q\n%s", log, out)
	}

	// A lease file names the repository and branch; `nas unmount` ends it.
	if code, out := runCLI(t, "role", "put", "tester", "--repo", "mnt", "--paths", "**", "--actions", "list,read,write,delete,propose"); code != 0 {
		t.Fatalf("role put: %s", out)
	}
	code, lj := runCLI(t, "lease", "create", "mnt", "--role", "tester", "--paths", "work/**", "--actions", "list,read,write", "--fork-from", "dev", "--ttl", "1h", "--json")
	if code != 0 {
		t.Fatalf("lease create: %s", lj)
	}
	lf := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(lf, []byte(lj), 0o600))
	dir2 := filepath.Join(t.TempDir(), "m2")
	must(t, os.Mkdir(dir2, 0o755))
	cmd2, out2 := nasChild(t, []string{"NAS_ENDPOINT=", "NAS_ACCESS_KEY=", "NAS_SECRET_KEY="}, "--lease-json", lf, "mount", dir2, cache)
	waitMounted(t, dir2, out2)
	ents, err := os.ReadDir(dir2)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "work" {
		t.Fatalf("the lease's mount shows %v", names)
	}
	// .nas is not listed (git status, cp -a must not see it), but it is there.
	if _, err := os.Stat(filepath.Join(dir2, ".nas", "lease.json")); err != nil {
		t.Fatalf(".nas/lease.json: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir2, "work", "out.txt"), []byte("run output"), 0o644))
	if code, out := runCLI(t, "changes", dir2); code != 0 || !strings.Contains(out, "A work/out.txt") {
		t.Fatalf("nas changes DIR: %d %q", code, out)
	}
	if code, _ := runCLI(t, "unmount", dir2); code != 0 {
		t.Fatalf("nas unmount failed\n%s", out2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd2.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("nas mount after nas unmount: %v\n%s", err, out2)
		}
	case <-time.After(time.Minute):
		cmd2.Process.Kill()
		t.Fatalf("nas mount did not exit after nas unmount\n%s", out2)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
