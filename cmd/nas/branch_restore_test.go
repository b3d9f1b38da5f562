package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestBranchRestore: a deleted branch is listed by list --deleted,
// survives a collection that keeps one second of history (its head is
// pinned) and comes back byte-identical; restoring over a live name is
// refused and --as works; a lease can neither list nor restore.
func TestBranchRestore(t *testing.T) {
	_, c := ownerCLI(t)
	ctx := context.Background()
	mustCLI(t, "repo", "create", "undel", "--unprotected")
	mustCLI(t, "branch", "create", "undel", "exp")
	data := map[string][]byte{"big.bin": bytes.Repeat([]byte("exp only "), 300000), "small.txt": []byte("small")}
	for k, b := range data {
		if _, err := c.Put(ctx, nasclient.Object{Repo: "undel", Branch: "exp", Key: k}, bytes.NewReader(b), int64(len(b)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var cr apiv1.CommitResponse
	decodeInto(t, mustCLI(t, "commit", "undel", "exp", "-m", "exp data", "--json"), &cr)
	mustCLI(t, "branch", "delete", "undel", "exp")

	var ld apiv1.BranchListDeletedResponse
	decodeInto(t, mustCLI(t, "branch", "list", "undel", "--deleted", "--json"), &ld)
	if len(ld.Deleted) != 1 || ld.Deleted[0].Name != "exp" || ld.Deleted[0].Head != cr.Commit.ID || !ld.Deleted[0].ExpiresAt.After(time.Now().Add(6*24*time.Hour)) {
		t.Fatalf("list --deleted: %+v", ld)
	}
	time.Sleep(1100 * time.Millisecond)
	mustCLI(t, "gc", "--retention", "1s")

	mustCLI(t, "branch", "create", "undel", "exp")
	if code, out := runCLI(t, "branch", "restore", "undel", "exp"); code != 1 {
		t.Errorf("restore over a live branch: exit %d %s", code, out)
	}
	leaseJSON := leaseFor(t, "undel", "exp")
	for _, args := range [][]string{{"branch", "list", "undel", "--deleted"}, {"branch", "restore", "undel", "exp", "--as", "mine"}} {
		code, stderr := runCLIStderr(t, append([]string{"--lease-json", leaseJSON}, args...)...)
		if code != 1 || !strings.Contains(stderr, "AccessDenied") {
			t.Errorf("lease: nas %s: exit %d %s", strings.Join(args, " "), code, stderr)
		}
	}
	var br apiv1.BranchResponse
	decodeInto(t, mustCLI(t, "branch", "restore", "undel", "exp", "--as", "exp-back", "--json"), &br)
	if br.Branch.Name != "exp-back" || br.Branch.Head != cr.Commit.ID {
		t.Fatalf("restore --as: %+v", br.Branch)
	}
	for k, want := range data {
		var got bytes.Buffer
		err := c.Get(ctx, nasclient.Object{Repo: "undel", Branch: "exp-back", Key: k}, "", 0, -1, func(r io.Reader, _ nasclient.Info) error {
			got.Reset()
			_, err := io.Copy(&got, r)
			return err
		})
		if err != nil || !bytes.Equal(got.Bytes(), want) {
			t.Errorf("restored %s: %d bytes, %v", k, got.Len(), err)
		}
	}
	if code, out := runCLI(t, "branch", "restore", "undel", "exp", "--as", "twice"); code != 1 {
		t.Errorf("a second restore of one deletion: exit %d %s", code, out)
	}
}

// TestBranchRestoreWindow: once the retention window has passed a deleted
// branch is not listed and cannot be restored.
func TestBranchRestoreWindow(t *testing.T) {
	srv, _ := ownerCLI(t)
	srv.Gateway.Branches.SetDeletedRetention(200 * time.Millisecond)
	mustCLI(t, "repo", "create", "undel", "--unprotected")
	mustCLI(t, "branch", "create", "undel", "short")
	mustCLI(t, "branch", "delete", "undel", "short")
	if out := mustCLI(t, "branch", "list", "undel", "--deleted"); !strings.HasPrefix(out, "short\t") {
		t.Errorf("list --deleted within the window: %q", out)
	}
	time.Sleep(300 * time.Millisecond)
	if out := mustCLI(t, "branch", "list", "undel", "--deleted"); out != "" {
		t.Errorf("list --deleted after the window: %q", out)
	}
	if code, stderr := runCLIStderr(t, "branch", "restore", "undel", "short"); code != 1 || !strings.Contains(stderr, "no restorable deleted branch") {
		t.Errorf("restore after the window: exit %d %s", code, stderr)
	}
}

// TestOfflineGCDeletedRetention: offline `nas gc --data` honours
// --deleted-retention (a record past it is dropped); online it is a usage
// error, since the gateway keeps its own.
func TestOfflineGCDeletedRetention(t *testing.T) {
	dir := t.TempDir()
	srv := nastest.Start(t, nastest.Options{DataDir: dir})
	c := ownerClient(srv.Endpoint)
	ctx := context.Background()
	must(t, c.Do(ctx, apiv1.RepoCreateRequest{Repo: "offgc"}, nil))
	must(t, c.Do(ctx, apiv1.BranchCreateRequest{Repo: "offgc", Name: "gone", From: "main"}, nil))
	must(t, c.Do(ctx, apiv1.BranchDeleteRequest{Repo: "offgc", Name: "gone"}, nil))
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	if code, _ := runCLI(t, "gc", "--deleted-retention", "1h"); code != exitUsage {
		t.Fatalf("online gc --deleted-retention: exit %d, want 2", code)
	}
	srv.Stop()
	var out apiv1.GCResponse
	jsonStep(t, exitOK, &out, "gc", "--data", dir, "--deleted-retention", "1ns")
	if out.Stats.DeletedBranches != 1 {
		t.Fatalf("offline gc with a 1ns window dropped %d deleted branches, want 1", out.Stats.DeletedBranches)
	}
}

// leaseFor writes a lease of repo's branch with every path and action to a
// file and returns its name.
func leaseFor(t *testing.T, repo, br string) string {
	t.Helper()
	mustCLI(t, "role", "put", "all-"+repo, "--repo", repo, "--paths", "**", "--actions", "list,read,write,delete,propose")
	lj := mustCLI(t, "lease", "create", repo, "--role", "all-"+repo, "--paths", "**", "--actions", "list,read,write,delete,propose",
		"--branch", br, "--ttl", "1h", "--json")
	p := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(p, []byte(lj), 0o600))
	return p
}
