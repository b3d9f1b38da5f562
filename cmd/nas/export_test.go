package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestExportCommit: an export leaves staged changes out and says so;
// --commit commits them first, so the export holds them.
func TestExportCommit(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	c := nasclient.New(nasclient.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})
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
	code, stderr = runCLIStderr(t, "export", "exp-commit", filepath.Join(dir, "committed.git"), "--commit")
	if code != 0 || !strings.Contains(stderr, "committed the staged changes of exp-commit/main") || strings.Contains(stderr, "not exported") {
		t.Fatalf("export --commit: %d %q", code, stderr)
	}
	if code, out := runCLI(t, "log", "exp-commit", "main", "-n", "1"); code != 0 || !strings.Contains(out, "nas export --commit") {
		t.Errorf("no commit before the export: %d %q", code, out)
	}
}
