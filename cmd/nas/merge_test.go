package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestMergeConflictListsKeys: a conflicting merge prints every
// conflicting key with both sides' ETags, and changes nothing.
func TestMergeConflictListsKeys(t *testing.T) {
	_, c := ownerCLI(t)
	put := func(branch, key, body string) {
		t.Helper()
		o := nasclient.Object{Repo: "mconf", Branch: branch, Key: key}
		if _, err := c.Put(context.Background(), o, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"repo", "create", "mconf", "--unprotected"}, {"commit", "mconf", "main", "-m", "base", "--allow-empty"},
		{"branch", "create", "mconf", "a"}, {"branch", "create", "mconf", "b"}} {
		if code, out := runCLI(t, args...); code != 0 {
			t.Fatalf("nas %s: %d %s", strings.Join(args, " "), code, out)
		}
	}
	put("a", "same.txt", "from a")
	put("b", "same.txt", "from b")
	put("a", "other.txt", "a only")
	put("b", "other.txt", "b only")
	runCLI(t, "commit", "mconf", "a", "-m", "a")
	runCLI(t, "commit", "mconf", "b", "-m", "b")
	if code, out := runCLI(t, "merge", "mconf", "a", "--into", "main"); code != 0 {
		t.Fatalf("first merge: %d %s", code, out)
	}
	code, stderr := runCLIStderr(t, "merge", "mconf", "b", "--into", "main")
	if code != 1 {
		t.Fatalf("conflicting merge exit %d, want 1", code)
	}
	for _, want := range []string{"same.txt", "other.txt", "ours ", "theirs ", "2 conflicting key(s)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("conflict output lacks %q:\n%s", want, stderr)
		}
	}
}

// runCLIStderr is runCLI returning standard error instead.
func runCLIStderr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	r, w, _ := os.Pipe()
	stderr := os.Stderr
	os.Stderr = w
	var buf bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&buf, r); close(read) }() // as runCLI does
	code, _ := runCLI(t, args...)
	w.Close()
	<-read
	os.Stderr = stderr
	return code, buf.String()
}

// ownerCLI starts a gateway, points the CLI at it with the owner's keys
// and returns it with an owner's client for S3 writes.
func ownerCLI(t *testing.T) (*nastest.Server, *nasclient.Client) {
	t.Helper()
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	return srv, ownerClient(srv.Endpoint)
}

// ownerClient is a client of the gateway at endpoint with the owner's keys.
func ownerClient(endpoint string) *nasclient.Client {
	return nasclient.New(nasclient.Config{Endpoint: endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})
}

// TestBranchFromCheckpoint: --from takes a checkpoint's name, or
// BRANCH@NAME when several branches have one so named.
func TestBranchFromCheckpoint(t *testing.T) {
	_, c := ownerCLI(t)
	o := nasclient.Object{Repo: "cpfork", Key: "v.txt"}
	steps := [][]string{{"repo", "create", "cpfork", "--unprotected"}}
	for _, s := range steps {
		if code, out := runCLI(t, s...); code != 0 {
			t.Fatalf("nas %s: %d %s", strings.Join(s, " "), code, out)
		}
	}
	if _, err := c.Put(context.Background(), o, strings.NewReader("one"), 3, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]string{{"commit", "cpfork", "main", "-m", "one"}, {"checkpoint", "create", "cpfork", "main", "good"},
		{"branch", "create", "cpfork", "other"}, {"checkpoint", "create", "cpfork", "other", "twice"},
		{"checkpoint", "create", "cpfork", "main", "twice"}} {
		if code, out := runCLI(t, s...); code != 0 {
			t.Fatalf("nas %s: %d %s", strings.Join(s, " "), code, out)
		}
	}
	for _, tc := range []struct {
		from string
		code int
	}{{"good", 0}, {"main@twice", 0}, {"twice", 2}, {"nosuch", 1}} {
		code, out := runCLI(t, "branch", "create", "cpfork", "from-"+strings.ReplaceAll(tc.from, "@", "-"), "--from", tc.from)
		if code != tc.code {
			t.Errorf("branch create --from %s: exit %d (%q), want %d", tc.from, code, out, tc.code)
		}
	}
	if code, out := runCLI(t, "log", "cpfork", "from-good", "-n", "1"); code != 0 || !strings.Contains(out, "one") {
		t.Errorf("the fork from a checkpoint is not at its commit: %d %q", code, out)
	}
}
