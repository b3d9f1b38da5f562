package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agentnas/nas/nastest"
)

// runCLI runs the nas command with args and returns its exit code and
// standard output.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	// Read while the command runs: an output larger than the pipe's
	// buffer would block it otherwise.
	var buf bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&buf, r); close(read) }()
	cf = clientFlags{} // flags are package state; each run starts clean
	code := run(args)
	w.Close()
	<-read
	os.Stdout = stdout
	return code, buf.String()
}

func TestCLI(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)

	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"repo", "create", "cli", "--unprotected"}, 0, "created repository cli"},
		{[]string{"repo", "create", "cli"}, 1, ""},
		{[]string{"branch", "create", "cli"}, 2, ""},                // missing NAME
		{[]string{"branch", "create", "cli", "x", "--nope"}, 2, ""}, // unknown flag
		{[]string{"frobnicate"}, 2, ""},
		{[]string{"branch", "create", "cli", "exp/one"}, 0, "created branch exp/one"},
		{[]string{"branch", "list", "cli"}, 0, "exp/one"},
		{[]string{"branch", "protect", "cli", "exp/one"}, 0, "protected"},
		{[]string{"commit", "cli", "exp/one", "-m", "nope", "--allow-empty"}, 1, ""},
		{[]string{"branch", "unprotect", "cli", "exp/one"}, 0, "unprotected"},
		{[]string{"commit", "cli", "exp/one", "-m", "empty", "--allow-empty"}, 0, "committed"},
		{[]string{"log", "cli", "exp/one", "-n", "1"}, 0, "empty"},
		{[]string{"diff", "cli", "main", "exp/one"}, 0, ""},
		{[]string{"changes", "cli", "exp/one", "--json"}, 0, ""},
		{[]string{"branch", "list", "cli", "--json"}, 0, `"protected": false`},
		{[]string{"fsck"}, 0, "1 repositories"},
		{[]string{"branch", "delete", "cli", "exp/one"}, 0, "deleted branch exp/one"},
		{[]string{"branch", "delete", "cli", "exp/one"}, 1, ""},
	}
	for _, s := range steps {
		code, out := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("nas %s: exit %d, output %q; want exit %d containing %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
}
