package source_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/adapter"
)

// adapterMarker as the first argument runs the test binary as a source
// adapter (testAdapter) instead of the tests.
const adapterMarker = "nas-test-adapter"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == adapterMarker {
		os.Exit(runTestAdapter(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// testAdapter shows the files of a folder. Keys under a few top-level
// folders misbehave on read, named for how: hang/ never answers, short/
// announces a byte less, garbage/ flips the bytes, crash/ exits, and
// stale/ keeps one version whatever the bytes. Flags make the whole
// adapter misbehave: -unsorted lists in reverse, -flip gives a new
// version on every listing, -bad-hello answers its greeting with noise.
type testAdapter struct {
	dir            string
	noSHA, flip    bool
	unsorted, envs bool
	log            *os.File
}

func runTestAdapter(args []string) int {
	fl := flag.NewFlagSet("adapter", flag.ContinueOnError)
	a := &testAdapter{}
	fl.StringVar(&a.dir, "dir", "", "folder shown")
	fl.BoolVar(&a.noSHA, "no-sha", false, "give no SHA-256")
	fl.BoolVar(&a.flip, "flip", false, "new version on every listing")
	fl.BoolVar(&a.unsorted, "unsorted", false, "list out of order")
	fl.BoolVar(&a.envs, "env", false, "show an object ENV holding the environment's names")
	badHello := fl.Bool("bad-hello", false, "answer the greeting with noise")
	logf := fl.String("log", "", "append every request here")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *badHello {
		fmt.Println("hello, I am not an adapter")
		return 0
	}
	if *logf != "" {
		f, err := os.OpenFile(*logf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return 1
		}
		a.log = f
	}
	fmt.Fprintln(os.Stderr, "test adapter serving", a.dir)
	if err := adapter.Serve(context.Background(), os.Stdin, os.Stdout, a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func (a *testAdapter) Name() string { return "test" }

func (a *testAdapter) note(op, key string) {
	if a.log != nil {
		fmt.Fprintf(a.log, "%s %s\n", op, key)
	}
}

// all reads every object of the folder, in key order.
func (a *testAdapter) all() ([]adapter.Object, map[string][]byte, error) {
	if _, err := os.Stat(a.dir); err != nil {
		return nil, nil, err // unavailable: the folder itself is gone
	}
	data := map[string][]byte{}
	if a.envs {
		var names []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		data["ENV"] = []byte(strings.Join(names, "\n"))
	}
	err := filepath.WalkDir(a.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(a.dir, p)
		data[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var objs []adapter.Object
	for k, b := range data {
		objs = append(objs, a.object(k, b))
	}
	slices.SortFunc(objs, func(x, y adapter.Object) int { return strings.Compare(x.Key, y.Key) })
	return objs, data, nil
}

func (a *testAdapter) object(key string, b []byte) adapter.Object {
	sum := sha256.Sum256(b)
	o := adapter.Object{Key: key, Size: int64(len(b)), Version: hex.EncodeToString(sum[:8]), ContentType: "text/plain"}
	if !a.noSHA && !strings.HasPrefix(key, "stale/") && !strings.HasPrefix(key, "garbage/") {
		o.SHA256 = hex.EncodeToString(sum[:])
	}
	if strings.HasPrefix(key, "garbage/") {
		o.SHA256 = hex.EncodeToString(sum[:]) // of the true bytes; the read lies
	}
	if strings.HasPrefix(key, "stale/") {
		o.Version = "forever"
	}
	if a.flip {
		o.Version += fmt.Sprint("-", time.Now().UnixNano())
	}
	return o
}

func (a *testAdapter) List(_ context.Context, after string, limit int) ([]adapter.Object, bool, error) {
	a.note("list", after)
	objs, _, err := a.all()
	if err != nil {
		return nil, false, err
	}
	objs, more := adapter.Page(objs, after, limit)
	if a.unsorted {
		slices.Reverse(objs)
	}
	return objs, more, nil
}

func (a *testAdapter) Stat(_ context.Context, key string) (adapter.Object, error) {
	a.note("stat", key)
	objs, _, err := a.all()
	if err != nil {
		return adapter.Object{}, err
	}
	for _, o := range objs {
		if o.Key == key {
			return o, nil
		}
	}
	return adapter.Object{}, &adapter.Error{Code: adapter.CodeNotFound, Message: key}
}

func (a *testAdapter) Read(_ context.Context, key, version string, off, n int64) (io.ReadCloser, int64, error) {
	a.note("read", key)
	objs, data, err := a.all()
	if err != nil {
		return nil, 0, err
	}
	i := slices.IndexFunc(objs, func(o adapter.Object) bool { return o.Key == key })
	if i < 0 {
		return nil, 0, &adapter.Error{Code: adapter.CodeNotFound, Message: key}
	}
	if objs[i].Version != version {
		return nil, 0, &adapter.Error{Code: adapter.CodeChanged, Message: "now " + objs[i].Version}
	}
	b := data[key]
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	b = b[off:min(int64(len(b)), off+n)]
	switch {
	case strings.HasPrefix(key, "hang/"):
		time.Sleep(time.Hour)
	case strings.HasPrefix(key, "crash/"):
		os.Exit(3)
	case strings.HasPrefix(key, "short/") && len(b) > 0:
		b = b[:len(b)-1]
	case strings.HasPrefix(key, "garbage/"):
		b = bytes.Clone(b)
		for j := range b {
			b[j] ^= 0xff
		}
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

// adapterProgram copies the test binary into dir (an adapter folder) and
// returns its path there.
func adapterProgram(t testing.TB, dir string) string {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	dst := filepath.Join(dir, "test-adapter")
	if err := os.Link(self, dst); err == nil {
		return dst
	} else if !errors.Is(err, fs.ErrExist) {
		b, err := os.ReadFile(self)
		must(t, err)
		must(t, os.WriteFile(dst, b, 0o755))
	}
	return dst
}
