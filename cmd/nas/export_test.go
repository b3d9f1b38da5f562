package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	nasclient "github.com/agentnas/nas/client"
)

// TestExportCommit: an export leaves staged changes out and says so;
// --commit commits them first, so the export holds them.
func TestExportCommit(t *testing.T) {
	_, c := ownerCLI(t)
	if code, out := runCLI(t, "repo", "create", "exp-commit", "--unprotected"); code != 0 {
		t.Fatalf("repo create: %d %s", code, out)
	}
	o := nasclient.Object{Repo: "exp-commit", Key: "notes.txt"}
	if _, err := c.Put(context.Background(), o, strings.NewReader("staged"), 6, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, stderr := runCLIStderr(t, "export", "exp-commit", filepath.Join(dir, "plain.git"))
	if code != 0 || !strings.Contains(stderr, "not exported") || !strings.Contains(stderr, "--commit") {
		t.Fatalf("export with staged changes: %d %q", code, stderr)
	}
	code, stderr = runCLIStderr(t, "export", "exp-commit", filepath.Join(dir, "plain-json.git"), "--json")
	if code != 0 || !strings.Contains(stderr, "uncommitted changes on 1 branch(es)") {
		t.Fatalf("export --json with staged changes: %d %q", code, stderr)
	}
	code, stderr = runCLIStderr(t, "export", "exp-commit", filepath.Join(dir, "committed.git"), "--commit")
	if code != 0 || !strings.Contains(stderr, "committed the staged changes of exp-commit/main") || strings.Contains(stderr, "not exported") {
		t.Fatalf("export --commit: %d %q", code, stderr)
	}
	if code, out := runCLI(t, "log", "exp-commit", "main", "-n", "1"); code != 0 || !strings.Contains(out, "nas export --commit") {
		t.Errorf("no commit before the export: %d %q", code, out)
	}
}
