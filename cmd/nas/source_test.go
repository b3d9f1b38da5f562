package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

func TestCLISource(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	dir := t.TempDir()
	for name, body := range map[string]string{"guide.md": "# guide", "api/ref.md": "ref"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := runCLI(t, "repo", "create", "kbase"); code != 0 {
		t.Fatalf("repo create: %d %s", code, out)
	}
	code, out := runCLI(t, "source", "add", "kbase", "dir:"+dir, "--prefix", "docs/")
	if code != 0 || !strings.Contains(out, "attached dir:"+dir) || !strings.Contains(out, "2 objects") {
		t.Fatalf("source add (to the protected main): %d %q", code, out)
	}
	id := strings.Fields(out)[3]
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"source", "list"}, 0, id + "\tkbase/main\tdocs/\tdir:" + dir + "\t2 objects\tready"},
		{[]string{"source", "list", "kbase", "--json"}, 0, `"credentials": false`},
		{[]string{"source", "add", "kbase", "dir:" + dir, "--prefix", "docs/"}, 1, ""},      // in use
		{[]string{"source", "add", "kbase", "dir:relative", "--prefix", "other/"}, 2, ""},   // not absolute
		{[]string{"source", "add", "kbase", "s3://b/x", "--source-access-key", "k"}, 2, ""}, // key without secret
		{[]string{"source", "refresh", "kbase"}, 0, "refreshed " + id + ": 0 added, 0 changed, 0 removed (nothing changed)"},
		{[]string{"source", "remove", "nope", id}, 2, ""},
		{[]string{"source", "remove", "kbase", id, "--evict"}, 0, "removed source " + id},
		{[]string{"source", "list", "kbase"}, 0, ""},
	}
	for _, s := range steps {
		code, out := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("nas %s: exit %d, output %q; want exit %d containing %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
}

// TestCLISourceEndpoint: --source-endpoint names the remote, while
// --endpoint keeps naming the gateway (here another gateway plays the
// remote S3 store).
func TestCLISourceEndpoint(t *testing.T) {
	remote := nastest.Start(t)
	srv := nastest.Start(t)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	t.Setenv("NAS_SOURCE_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SOURCE_SECRET_KEY", nastest.SecretKey)
	c := ownerClient(remote.Endpoint)
	if code, out := runCLI(t, "--endpoint", remote.Endpoint, "repo", "create", "remote-data", "--unprotected"); code != 0 {
		t.Fatalf("remote repo: %d %s", code, out)
	}
	o := nasclient.Object{Repo: "remote-data", Key: "set/a.csv"}
	if _, err := c.Put(context.Background(), o, strings.NewReader("a,b\n"), 4, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "--endpoint", srv.Endpoint, "repo", "create", "mirror"); code != 0 {
		t.Fatalf("repo create: %d %s", code, out)
	}
	code, out := runCLI(t, "--endpoint", srv.Endpoint, "source", "add", "mirror", "s3://remote-data/set",
		"--prefix", "set/", "--source-endpoint", remote.Endpoint, "--source-region", "us-east-1")
	if code != 0 || !strings.Contains(out, "1 objects") {
		t.Fatalf("source add with --source-endpoint: %d %q", code, out)
	}
	if code, out := runCLI(t, "--endpoint", remote.Endpoint, "source", "list"); code != 0 || strings.Contains(out, "mirror") {
		t.Errorf("the source landed on the remote: %d %q", code, out)
	}

	// A run's change written back to the remote (another nas serve, which
	// checks the If-Match), then a second push of a stale change conflicts.
	_, list := runCLI(t, "--endpoint", srv.Endpoint, "source", "list", "mirror")
	id := strings.Fields(list)[0]
	if code, out := runCLI(t, "--endpoint", srv.Endpoint, "branch", "create", "mirror", "run", "--from", "main"); code != 0 {
		t.Fatalf("branch create: %d %s", code, out)
	}
	s := ownerClient(srv.Endpoint)
	if _, err := s.Put(context.Background(), nasclient.Object{Repo: "mirror", Branch: "run", Key: "set/a.csv"}, strings.NewReader("a,b\n1,2\n"), 8, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "--endpoint", srv.Endpoint, "commit", "mirror", "run", "-m", "a run's output"); code != 0 {
		t.Fatalf("commit: %d %s", code, out)
	}
	if code, out := runCLI(t, "--endpoint", srv.Endpoint, "source", "push", "mirror", id, "--from", "run", "--dry-run"); code != 0 || !strings.Contains(out, "would write put    set/a.csv") {
		t.Fatalf("push --dry-run: %d %q", code, out)
	}
	code, out = runCLI(t, "--endpoint", srv.Endpoint, "source", "push", "mirror", id, "--from", "run")
	if code != 0 || !strings.Contains(out, "written     put    set/a.csv") || !strings.Contains(out, "1 written, 0 conflicts") {
		t.Fatalf("push: %d %q", code, out)
	}
	var got strings.Builder
	if err := c.Get(context.Background(), o, "", 0, -1, func(r io.Reader, _ nasclient.Info) error { _, err := io.Copy(&got, r); return err }); err != nil || got.String() != "a,b\n1,2\n" {
		t.Fatalf("the remote after the push: %q %v", got.String(), err)
	}
	if _, err := c.Put(context.Background(), o, strings.NewReader("changed\n"), 8, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), nasclient.Object{Repo: "mirror", Branch: "run", Key: "set/a.csv"}, strings.NewReader("stale\n"), 6, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "--endpoint", srv.Endpoint, "commit", "mirror", "run", "-m", "a stale change")
	code, out = runCLI(t, "--endpoint", srv.Endpoint, "source", "push", "mirror", id, "--from", "run")
	if code != 1 || !strings.Contains(out, "conflict    put    set/a.csv") {
		t.Fatalf("a push over a remote change: %d %q", code, out)
	}
}
