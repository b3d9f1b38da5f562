package source_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/source"
	"github.com/agentnas/nas/source/sourcetest"
)

// writeTree writes objs under dir.
func writeTree(t testing.TB, dir string, objs map[string][]byte) {
	t.Helper()
	for k, v := range objs {
		p := filepath.Join(dir, filepath.FromSlash(k))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, v, 0o644))
	}
}

// openTestExec opens the test adapter over dir with extra flags.
func openTestExec(t testing.TB, dir string, flags ...string) *source.Exec {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	e, err := source.OpenExec(source.ExecConfig{Path: self, Args: append([]string{adapterMarker, "-dir", dir}, flags...),
		Timeout: 2 * time.Second})
	must(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

func TestExecConformance(t *testing.T) {
	t.Parallel()
	for _, flags := range [][]string{nil, {"-no-sha"}} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), ""), func(t *testing.T) {
			sourcetest.TestSource(t, func(t *testing.T, objs map[string][]byte) sourcetest.Fixture {
				dir := t.TempDir()
				writeTree(t, dir, objs)
				return sourcetest.Fixture{Source: openTestExec(t, dir, flags...), Overwrites: true, Replace: func(t *testing.T, key string, data []byte) {
					writeTree(t, dir, map[string][]byte{key: data})
				}}
			})
		})
	}
}

// pinOf lists s and returns the pin of key.
func pinOf(t *testing.T, s source.Source, key string) source.Pin {
	t.Helper()
	var pin *source.Pin
	err := s.List(context.Background(), "", func(o source.Object) error {
		if o.Key == key {
			p := o.Pin()
			pin = &p
		}
		return nil
	})
	if err != nil || pin == nil {
		t.Fatalf("listing for %s: %v (found: %v)", key, err, pin != nil)
	}
	return *pin
}

func readAll(s source.Source, p source.Pin, off, n int64) ([]byte, error) {
	rc, err := s.ReadRange(context.Background(), p, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// TestExecLyingAdapter: every way an adapter can fail or lie ends in a
// clear error, never in wrong bytes, and the next request gets a fresh,
// working adapter.
func TestExecLyingAdapter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := []byte("good bytes\n")
	writeTree(t, dir, map[string][]byte{"good": good, "hang/x": []byte("never"), "short/x": []byte("shortened"),
		"garbage/x": []byte("flipped"), "crash/x": []byte("exits"), "stale/x": []byte("grows")})
	e := openTestExec(t, dir)
	for _, c := range []struct {
		key  string
		want error
	}{
		{"hang/x", source.ErrUnavailable},
		{"short/x", source.ErrCorrupt},
		{"garbage/x", source.ErrCorrupt},
		{"crash/x", source.ErrUnavailable},
	} {
		start := time.Now()
		pin := pinOf(t, e, c.key)
		b, err := readAll(e, pin, 0, pin.Size)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %q, %v; want %v", c.key, b, err, c.want)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("%s took %v", c.key, time.Since(start))
		}
		if b, err := readAll(e, pinOf(t, e, "good"), 0, int64(len(good))); err != nil || string(b) != string(good) {
			t.Fatalf("after %s: %q, %v", c.key, b, err)
		}
	}

	// The object grew under the same version: a read up to the pinned end
	// sees the extra byte; a read inside it gets the pinned prefix.
	pin := pinOf(t, e, "stale/x")
	writeTree(t, dir, map[string][]byte{"stale/x": []byte("grows, and grows")})
	if _, err := readAll(e, pin, 0, pin.Size); !errors.Is(err, source.ErrCorrupt) {
		t.Errorf("a longer object under its pinned version: %v", err)
	}
	if b, err := readAll(e, pin, 0, 3); err != nil || string(b) != "gro" {
		t.Errorf("prefix of the grown object: %q %v", b, err)
	}

	// Drift: the pinned version is gone.
	pin = pinOf(t, e, "good")
	writeTree(t, dir, map[string][]byte{"good": []byte("new bytes")})
	if _, err := readAll(e, pin, 0, pin.Size); !errors.Is(err, source.ErrChanged) {
		t.Errorf("drifted read: %v", err)
	}
	must(t, os.Remove(filepath.Join(dir, "good")))
	if _, err := e.Stat(context.Background(), "good"); !errors.Is(err, source.ErrChanged) {
		t.Errorf("stat of a removed object: %v", err)
	}
}

// TestExecBrokenAdapters: adapters broken as a whole fail their listing
// or their start clearly.
func TestExecBrokenAdapters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"a": []byte("a"), "b": []byte("b"), "c": []byte("c")})
	ctx := context.Background()
	noop := func(source.Object) error { return nil }
	if err := openTestExec(t, dir, "-unsorted").List(ctx, "", noop); !errors.Is(err, source.ErrCorrupt) {
		t.Errorf("unsorted listing: %v", err)
	}
	if err := openTestExec(t, dir, "-bad-hello").Probe(ctx); !errors.Is(err, source.ErrUnavailable) {
		t.Errorf("not an adapter: %v", err)
	}
	e, err := source.OpenExec(source.ExecConfig{Path: "/nonexistent/adapter"})
	must(t, err)
	if err := e.Probe(ctx); !errors.Is(err, source.ErrUnavailable) {
		t.Errorf("missing program: %v", err)
	}
	flip := openTestExec(t, dir, "-flip")
	if _, err := readAll(flip, pinOf(t, flip, "a"), 0, 1); !errors.Is(err, source.ErrChanged) {
		t.Errorf("a version that changes on every listing: %v", err)
	}
	gone := t.TempDir()
	writeTree(t, gone, map[string][]byte{"a": []byte("a")})
	down := openTestExec(t, gone)
	pin := pinOf(t, down, "a")
	must(t, os.RemoveAll(gone))
	if _, err := readAll(down, pin, 0, 1); !errors.Is(err, source.ErrUnavailable) {
		t.Errorf("adapter whose data is unreachable: %v", err)
	}
	if _, err := source.OpenExec(source.ExecConfig{Path: "relative/adapter"}); !errors.Is(err, source.ErrInvalid) {
		t.Errorf("relative program: %v", err)
	}
	if _, err := source.OpenExec(source.ExecConfig{Path: "/bin/true", Args: []string{"a\x00b"}}); !errors.Is(err, source.ErrInvalid) {
		t.Errorf("argument with NUL: %v", err)
	}
}

// TestExecAttach: an adapter's objects through the real gateway: reads,
// ranges, a refresh showing drift as a diff, a lease that reaches only
// its paths (and the adapter only for those), an outage as 503, and the
// adapter folder as the only programs an attach may run.
func TestExecAttach(t *testing.T) {
	t.Setenv("NAS_TEST_GATEWAY_SECRET", "must not reach the adapter")
	adapters, data := t.TempDir(), t.TempDir()
	prog := adapterProgram(t, adapters)
	logf := filepath.Join(t.TempDir(), "requests")
	writeTree(t, data, map[string][]byte{"a.txt": []byte("alpha\n"), "docs/b.md": []byte("bravo, version 1\n"), "old.txt": []byte("old\n")})
	gw := startGateway(t, source.Options{Adapters: adapters, AdapterTimeout: 2 * time.Second})
	gw.mkRepo(t, "data")
	info := gw.attach(t, "data", "src/", "exec:"+prog, "", map[string]any{"args": []string{adapterMarker, "-dir", data, "-log", logf, "-env"}})
	id := info["id"].(string)
	if info["listed"] != 4.0 || info["versioned"] != false || len(info["args"].([]any)) != 6 {
		t.Fatalf("attach: %v", info)
	}
	mustGet(t, gw.S3, "data", "src/a.txt", []byte("alpha\n"))
	if b, err := get(t, gw.S3, "data", "src/docs/b.md", "bytes=7-13"); err != nil || string(b) != "version" {
		t.Fatalf("range: %q %v", b, err)
	}
	env, err := get(t, gw.S3, "data", "src/ENV", "")
	must(t, err)
	if strings.Contains(string(env), "NAS_") || strings.Contains(string(env), "AWS_") {
		t.Errorf("the adapter saw the gateway's variables: %s", env)
	}

	writeTree(t, data, map[string][]byte{"docs/b.md": []byte("bravo, version 2\n"), "new.txt": []byte("new\n")})
	must(t, os.Remove(filepath.Join(data, "old.txt")))
	head := gw.owner(t, "branch/get", map[string]any{"repo": "data", "name": "main"})["branch"].(map[string]any)["head"].(string)
	info = gw.refresh(t, id)
	if got := gw.diff(t, "data", head, info["commit"].(string)); strings.Join(got, ",") != "A src/new.txt,D src/old.txt,M src/docs/b.md" {
		t.Fatalf("diff after refresh: %q", got)
	}
	mustGet(t, gw.S3, "data", "src/docs/b.md", []byte("bravo, version 2\n"))

	gw.owner(t, "role/put", map[string]any{"name": "agent", "repo": "data",
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read"}}}})
	l := gw.owner(t, "lease/create", map[string]any{"repo": "data", "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"src/docs/**"}, "actions": []string{"list", "read"}})["lease"].(map[string]any)
	cl := s3Client(gw.URL, aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string),
		SessionToken: l["session_token"].(string)})
	_, err = get(t, cl, "data", "src/new.txt", "")
	wantCode(t, err, http.StatusNotFound, "NoSuchKey")
	log, err := os.ReadFile(logf)
	must(t, err)
	if strings.Contains(string(log), "read new.txt") {
		t.Errorf("a lease's refused read reached the adapter:\n%s", log)
	}

	// The adapter's data goes away: what is not local answers 503.
	must(t, os.Rename(data, data+".away"))
	_, err = get(t, gw.S3, "data", "src/new.txt", "")
	if _, st := errCode(err); st != http.StatusServiceUnavailable {
		t.Fatalf("GET with the adapter's data gone: %v, want 503", err)
	}
	must(t, os.Rename(data+".away", data))
	mustGet(t, gw.S3, "data", "src/new.txt", []byte("new\n"))

	// Only programs in the adapter folder run.
	gw.mkRepo(t, "other")
	for _, args := range []map[string]any{
		{"repo": "other", "url": "exec:/bin/sh", "args": []string{"-c", "touch /tmp/pwned"}},
		{"repo": "other", "url": "exec:" + adapters + "/../" + filepath.Base(adapters) + "x/adapter"},
		{"repo": "other", "url": "exec:" + adapters},
		{"repo": "other", "url": "dir:" + data, "args": []string{"x"}},
	} {
		if st, out := ctl(t, gw.URL, ownerCreds, "source/add", args); st != http.StatusBadRequest {
			t.Errorf("source/add %v: %d %v", args, st, out)
		}
	}
	off := startGateway(t, source.Options{})
	off.mkRepo(t, "data")
	if st, out := ctl(t, off.URL, ownerCreds, "source/add", map[string]any{"repo": "data", "url": "exec:" + prog}); st != http.StatusBadRequest ||
		!strings.Contains(stringify(out), "--source-adapters") {
		t.Errorf("a gateway without an adapter folder: %d %v", st, out)
	}
}
