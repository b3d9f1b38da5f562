package fuse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/fuse"
	"github.com/agentnas/nas/nastest"
)

// requireFUSE skips a test that needs to mount when this machine cannot.
func requireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: FUSE mounts are not possible here")
	}
	if os.Geteuid() != 0 {
		if _, err := os.Stat("/bin/fusermount3"); err != nil {
			t.Skip("not root and no fusermount3: cannot mount")
		}
	}
}

// owner is a client with the test gateway's owner credentials.
func owner(srv *nastest.Server) *client.Client {
	return client.New(client.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}, Attempts: 2, Backoff: 20 * time.Millisecond})
}

// raw is a control-API request as a map, for tests that speak the wire
// (and for operations whose typed form a test does not need).
type raw struct {
	op   string
	args map[string]any
}

func (r raw) Op() string                   { return r.op }
func (r raw) MarshalJSON() ([]byte, error) { return json.Marshal(r.args) }

// call calls the control API and fails the test on an error.
func call(t testing.TB, c *client.Client, op string, args map[string]any, out any) {
	t.Helper()
	if err := c.Do(context.Background(), raw{op, args}, out); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

// env is a gateway with a repository and a branch to mount.
type env struct {
	srv   *nastest.Server
	owner *client.Client
	repo  string
}

// newEnv starts a gateway with repository repo (main unprotected, so the
// owner can seed it) and the branch dev forked from it.
func newEnv(t testing.TB, opts ...nastest.Options) *env {
	t.Helper()
	requireFUSE(t)
	srv := nastest.Start(t, opts...)
	e := &env{srv: srv, owner: owner(srv), repo: "data"}
	call(t, e.owner, "repo/create", map[string]any{"repo": e.repo, "protected": false}, nil)
	return e
}

// put stores an object on a branch with the owner's credentials.
func (e *env) put(t testing.TB, branch, key string, body []byte) {
	t.Helper()
	if _, err := e.owner.Put(context.Background(), client.Object{Repo: e.repo, Branch: branch, Key: key}, bytes.NewReader(body), int64(len(body)), client.PutOptions{}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// get reads an object over S3 with c's credentials.
func (e *env) get(c *client.Client, branch, key string) ([]byte, error) {
	var out []byte
	err := c.Get(context.Background(), client.Object{Repo: e.repo, Branch: branch, Key: key}, "", 0, -1, func(r io.Reader, _ client.Info) error {
		var buf bytes.Buffer
		_, err := buf.ReadFrom(r)
		out = buf.Bytes()
		return err
	})
	return out, err
}

// head returns what a one-byte GET says of an object (ETag, version).
func (e *env) head(t testing.TB, branch, key string) client.Info {
	t.Helper()
	var info client.Info
	err := e.owner.Get(context.Background(), client.Object{Repo: e.repo, Branch: branch, Key: key}, "", 0, 1, func(r io.Reader, i client.Info) error {
		info = i
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		t.Fatalf("head %s: %v", key, err)
	}
	return info
}

func (e *env) commit(t testing.TB, branch string) {
	t.Helper()
	err := e.owner.Do(context.Background(), apiv1.CommitCreateRequest{Repo: e.repo, Branch: branch, Message: "seed"}, nil)
	if err != nil && client.Code(err) != "NothingToCommit" {
		t.Fatalf("commit: %v", err)
	}
}

func (e *env) fork(t testing.TB, name, from string) {
	t.Helper()
	call(t, e.owner, "branch/create", map[string]any{"repo": e.repo, "name": name, "from": from}, nil)
}

// mountOpts tune mount.
type mountOpts struct {
	c         *client.Client // default: the owner
	branch    string         // default: dev
	readOnly  bool
	cacheDir  string // default: a fresh one
	commit    time.Duration
	noStream  bool   // send files whole at close, never while written
	writeback bool   // close returns before the upload
	at        string // mount as of this commit
	prefix    string // mount this subtree
}

// mount mounts a branch at a fresh directory and unmounts it when the
// test ends.
func (e *env) mount(t testing.TB, o mountOpts) (string, *fuse.Mount) {
	t.Helper()
	if o.c == nil {
		o.c = e.owner
	}
	if o.branch == "" {
		o.branch = "dev"
	}
	if o.cacheDir == "" {
		o.cacheDir = t.TempDir()
	}
	if o.commit == 0 {
		o.commit = -1
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := fuse.New(context.Background(), dir, fuse.Options{Client: o.c, Repo: e.repo, Branch: o.branch, ReadOnly: o.readOnly, At: o.at, Prefix: o.prefix,
		CacheDir: o.cacheDir, CommitAfter: o.commit, TTL: 200 * time.Millisecond, Stream: !o.noStream, Writeback: o.writeback})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Unmount(ctx); err != nil {
			t.Logf("unmount: %v", err)
		}
	})
	return dir, m
}

// lease issues a lease through the owner and returns a client with its
// credentials and the lease document.
func (e *env) lease(t testing.TB, args map[string]any) (*client.Client, map[string]any) {
	t.Helper()
	if _, ok := args["repo"]; !ok {
		args["repo"] = e.repo
	}
	if _, ok := args["role"]; !ok {
		args["role"] = "agent"
	}
	// The owner's leases are held to their role: define it as wide as a
	// role can be.
	call(t, e.owner, "role/put", map[string]any{"name": args["role"], "repo": args["repo"],
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete", "propose"}}}}, nil)
	var out struct {
		Lease map[string]any `json:"lease"`
	}
	call(t, e.owner, "lease/create", args, &out)
	l := out.Lease
	c := client.New(client.Config{Endpoint: e.srv.Endpoint, Attempts: 2, Backoff: 20 * time.Millisecond,
		Credentials: aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string), SessionToken: l["session_token"].(string)}})
	return c, l
}

// wantErrno fails unless err is the errno want.
func wantErrno(t testing.TB, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v (%d)", err, want, int(want))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

func writeFile(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}

// names lists a directory's entries.
func names(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// pattern returns n deterministic bytes.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// ownerVia is the owner's client through a proxy in front of the gateway
// that calls before with every request it passes (to count or hold them).
func (e *env) ownerVia(t *testing.T, before func(r *http.Request)) *client.Client {
	return e.ownerAround(t, before, nil)
}

// ownerAround is ownerVia that also calls after, when not nil, once the
// gateway has answered a request and before the answer is passed on (to
// hold an answer the gateway gave).
func (e *env) ownerAround(t *testing.T, before, after func(r *http.Request)) *client.Client {
	u, err := url.Parse(e.srv.Endpoint)
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before(r)
		}
		if after == nil {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		after(r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return client.New(client.Config{Endpoint: srv.URL, Attempts: 2, Backoff: 20 * time.Millisecond,
		Credentials: aws.Credentials{AccessKeyID: e.owner.Credentials().AccessKeyID, SecretAccessKey: e.owner.Credentials().SecretAccessKey}})
}
