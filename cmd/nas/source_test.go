package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
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

	// A run asks; the owner approves at the gate; the remote gets it.
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	mustCLI(t, "role", "put", "runner", "--repo", "mirror", "--paths", "**", "--actions", "list,read,write,delete,propose")
	lj := mustCLI(t, "lease", "create", "mirror", "--role", "runner", "--paths", "set/**", "--actions", "list,read,write,delete,propose",
		"--fork-from", "main", "--ttl", "1h", "--json")
	lf := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(lf, []byte(lj), 0o600))
	up := filepath.Join(t.TempDir(), "b.csv")
	must(t, os.WriteFile(up, []byte("from the run\n"), 0o600))
	mustCLI(t, "--lease-json", lf, "cp", up, "mirror/set/b.csv")
	var l struct {
		Branch string `json:"branch"`
	}
	must(t, json.Unmarshal([]byte(lj), &l))
	mustCLI(t, "--lease-json", lf, "commit", "mirror", l.Branch, "-m", "the run's file")
	if code, stderr := runCLIStderr(t, "--lease-json", lf, "source", "push", "mirror", id, "--from", "run"); code != 1 || !strings.Contains(stderr, "AccessDenied") {
		t.Errorf("a lease's push: %d %q", code, stderr)
	}
	out = mustCLI(t, "--lease-json", lf, "source", "push", "mirror", "set/", "--request", "--reason", "publish b.csv", "--json")
	var gr struct {
		Gate struct {
			ID     string `json:"gate_id"`
			Status string `json:"status"`
		} `json:"gate"`
	}
	must(t, json.Unmarshal([]byte(out), &gr))
	if gr.Gate.Status != "pending" || !strings.HasPrefix(gr.Gate.ID, "gtp_") {
		t.Fatalf("push --request: %s", out)
	}
	if out := mustCLI(t, "gate", "approve", gr.Gate.ID); !strings.Contains(out, "approved") {
		t.Fatalf("approve: %q", out)
	}
	got.Reset()
	ob := nasclient.Object{Repo: "remote-data", Key: "set/b.csv"}
	if err := c.Get(context.Background(), ob, "", 0, -1, func(r io.Reader, _ nasclient.Info) error { _, err := io.Copy(&got, r); return err }); err != nil || got.String() != "from the run\n" {
		t.Fatalf("the remote after the approved request: %q %v", got.String(), err)
	}
}

// TestCLIAdapterSource: `nas source add REPO exec:PROG --arg ...` attaches
// what an adapter shows (the shipped HTTP adapter), and the listing names
// the program and its arguments.
func TestCLIAdapterSource(t *testing.T) {
	adapters := t.TempDir()
	prog := nastest.Build(t, "cmd/nas-adapter-http", adapters)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "", time.Unix(1700000000, 0), strings.NewReader("hello from the web\n"))
	}))
	defer web.Close()
	srv := nastest.Start(t, nastest.Options{Sources: source.Options{Adapters: adapters}})
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	mustCLI(t, "repo", "create", "web", "--unprotected")
	out := mustCLI(t, "source", "add", "web", "exec:"+prog, "--arg", "--url", "--arg", web.URL+"/pub/hello.txt", "--prefix", "w/")
	if !strings.Contains(out, "1 objects") {
		t.Fatalf("source add exec: %q", out)
	}
	if out := mustCLI(t, "source", "list", "web", "--json"); !strings.Contains(out, `"--url"`) || !strings.Contains(out, web.URL+"/pub/hello.txt") {
		t.Errorf("source list: %s", out)
	}
	if out := mustCLI(t, "cat", "web/w/pub/hello.txt"); out != "hello from the web\n" {
		t.Errorf("cat: %q", out)
	}
	if code, stderr := runCLIStderr(t, "source", "add", "web", "exec:/bin/sh", "--arg", "-c", "--prefix", "x/"); code == 0 || !strings.Contains(stderr, "adapter folder") {
		t.Errorf("a program outside the adapter folder: %d %q", code, stderr)
	}
}
