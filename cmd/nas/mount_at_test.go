package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestMountAtCheckpointAndPrefix: `nas mount --at CHECKPOINT --prefix P`
// serves P/ of the checkpoint's commit read-only (it turns --read-only
// on), whatever the branch holds since.
func TestMountAtCheckpointAndPrefix(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and /dev/fuse to mount")
	}
	srv, c := ownerCLI(t)
	env := []string{"NAS_ENDPOINT=" + srv.Endpoint, "NAS_ACCESS_KEY=" + nastest.AccessKey, "NAS_SECRET_KEY=" + nastest.SecretKey}
	mustCLI(t, "repo", "create", "mat", "--unprotected")
	put := func(key, body string) {
		t.Helper()
		if _, err := c.Put(context.Background(), nasclient.Object{Repo: "mat", Key: key}, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("p/a.txt", "checkpointed")
	put("top.txt", "above")
	mustCLI(t, "commit", "mat", "main", "-m", "one")
	mustCLI(t, "checkpoint", "create", "mat", "main", "good")
	put("p/a.txt", "changed since")
	mustCLI(t, "commit", "mat", "main", "-m", "two")

	dir := filepath.Join(t.TempDir(), "m")
	must(t, os.Mkdir(dir, 0o755))
	cmd, out := nasChild(t, env, "mount", dir, "--repo", "mat", "--at", "good", "--prefix", "p", "--cache-dir="+t.TempDir())
	waitMounted(t, dir, out)
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	if err != nil || string(b) != "checkpointed" {
		t.Errorf("a.txt: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "top.txt")); !os.IsNotExist(err) {
		t.Errorf("top.txt reachable: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write in a mount --at: %v, want EROFS", err)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nas mount after SIGTERM: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "(read-only), subtree p") {
		t.Errorf("mount banner: %s", out)
	}
}
