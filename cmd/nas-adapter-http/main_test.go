package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/adapter"
	"github.com/agentnas/nas/adapter/adaptertest"
)

// binary is the adapter built once for the tests.
var binary string

func TestMain(m *testing.M) {
	path, done, out, err := adaptertest.Build("nas-adapter-http")
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	binary = path
	code := m.Run()
	done()
	os.Exit(code)
}

// client speaks the protocol to a running adapter.
type client struct{ *adaptertest.Client }

// start runs the adapter binary with args; t.Cleanup ends it.
func start(t *testing.T, args ...string) *client {
	t.Helper()
	return &client{adaptertest.Start(t, binary, "http", args...)}
}

func (c *client) call(req adapter.Request) adapter.Response {
	c.T.Helper()
	return c.Call(req)
}

func (c *client) logged(s string) bool { return c.Logged(s) }

// read reads [off, off+n) of key at version: the bytes, or the error
// code.
func (c *client) read(key, version string, off, n int64) ([]byte, string) {
	c.T.Helper()
	return c.Read(key, version, off, n)
}

// listAll lists every object, limit per page, checking the order.
func (c *client) listAll(limit int) ([]adapter.Object, *adapter.Error) {
	c.T.Helper()
	var all []adapter.Object
	after := ""
	for {
		res := c.call(adapter.Request{Op: adapter.OpList, After: after, Limit: limit})
		if res.Error != nil {
			return nil, res.Error
		}
		if len(res.Objects) > limit {
			c.T.Fatalf("page of %d objects for limit %d", len(res.Objects), limit)
		}
		for _, o := range res.Objects {
			if o.Key <= after {
				c.T.Fatalf("key %q after %q", o.Key, after)
			}
			after = o.Key
		}
		all = append(all, res.Objects...)
		if !res.More {
			return all, nil
		}
	}
}

// file is a resource of site.
type file struct {
	body    string
	etag    string    // set as ETag when not empty
	mod     time.Time // Last-Modified when not zero
	noLen   bool      // answered without a Content-Length
	status  int       // answered with this status when not 0
	noRange bool      // answered whole, ignoring Range
}

// site is an HTTP server of files that tests change.
type site struct {
	mu    sync.Mutex
	files map[string]file
	gets  int
	*httptest.Server
}

func newSite(t *testing.T, files map[string]file) *site {
	s := &site{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *site) set(name string, f file) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = f
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	if r.Method == http.MethodGet {
		s.gets++
	}
	s.mu.Unlock()
	switch {
	case !ok:
		http.NotFound(w, r)
	case f.status != 0:
		http.Error(w, "no", f.status)
	case f.noLen:
		w.Header().Set("ETag", f.etag)
		if r.Method == http.MethodGet {
			io.WriteString(w, f.body)
			w.(http.Flusher).Flush()
		}
	case f.noRange:
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Length", fmt.Sprint(len(f.body)))
		if r.Method == http.MethodGet {
			io.WriteString(w, f.body)
		}
	default:
		if f.etag != "" {
			w.Header().Set("ETag", f.etag)
		}
		http.ServeContent(w, r, r.URL.Path, f.mod, strings.NewReader(f.body))
	}
}

var modTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestURLs: the real binary over --url resources: hello, list pages,
// stat, ranged and whole reads, a changed, a deleted and a failing
// resource, a server that ignores Range.
func TestURLs(t *testing.T) {
	s := newSite(t, map[string]file{
		"/a.txt":       {body: "hello, world", etag: `"a1"`, mod: modTime},
		"/b.csv":       {body: "x,y\n1,2\n", etag: `W/"b1"`},
		"/dir/c.txt":   {body: "0123456789", mod: modTime},
		"/whole.bin":   {body: "abcdefghij", etag: `"w1"`, noRange: true},
		"/nolen.txt":   {body: "streamed", etag: `"n1"`, noLen: true},
		"/nover.txt":   {body: "no version"},
		"/missing.txt": {status: http.StatusNotFound},
	})
	var args []string
	for _, p := range []string{"/b.csv", "/a.txt", "/dir/c.txt", "/whole.bin", "/nolen.txt", "/nover.txt", "/missing.txt", "/a.txt"} {
		args = append(args, "--url", s.URL+p)
	}
	c := start(t, args...)

	objs, e := c.listAll(2)
	if e != nil {
		t.Fatalf("list: %v", e)
	}
	var keys []string
	byKey := map[string]adapter.Object{}
	for _, o := range objs {
		keys = append(keys, o.Key)
		byKey[o.Key] = o
	}
	// a.txt twice: the second is a.txt~2, the same resource.
	if want := []string{"a.txt", "a.txt~2", "b.csv", "dir/c.txt", "whole.bin"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q\n%s", keys, want, c.Stderr())
	}
	for _, want := range []string{"nolen.txt", "nover.txt", "missing.txt"} {
		if !c.logged(want) {
			t.Errorf("stderr does not say why %s was skipped:\n%s", want, c.Stderr())
		}
	}
	a := byKey["a.txt"]
	if a.Size != 12 || a.Version != `"a1"` || !a.ModTime.Equal(modTime) || !strings.HasPrefix(a.ContentType, "text/plain") {
		t.Errorf("a.txt: %+v", a)
	}
	if o := byKey["dir/c.txt"]; o.Version != modTime.Format(http.TimeFormat) || o.Size != 10 {
		t.Errorf("dir/c.txt (versioned by Last-Modified): %+v", o)
	}
	if o := byKey["b.csv"]; o.Version != `W/"b1"` {
		t.Errorf("b.csv (weak ETag): %+v", o)
	}

	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "a.txt"}); res.Error != nil || *res.Object != a {
		t.Errorf("stat a.txt: %+v, want %+v", res, a)
	}
	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "nope"}); res.Error == nil || res.Error.Code != adapter.CodeNotFound {
		t.Errorf("stat nope: %+v", res)
	}

	for _, r := range []struct {
		key, version string
		off, n       int64
		want         string
	}{
		{"a.txt", `"a1"`, 7, 3, "wor"},
		{"a.txt", `"a1"`, 0, 12, "hello, world"},
		{"a.txt", `"a1"`, 7, 100, "world"},
		{"a.txt", `"a1"`, 12, 5, ""},
		{"a.txt", `"a1"`, 50, 5, ""},
		{"a.txt", `"a1"`, 3, 0, ""},
		{"b.csv", `W/"b1"`, 4, 3, "1,2"},
		{"dir/c.txt", modTime.Format(http.TimeFormat), 2, 3, "234"},
		{"whole.bin", `"w1"`, 3, 4, "defg"},
		{"whole.bin", `"w1"`, 8, 10, "ij"},
	} {
		got, code := c.read(r.key, r.version, r.off, r.n)
		if code != "" || string(got) != r.want {
			t.Errorf("read %s@%d+%d: %q %s, want %q", r.key, r.off, r.n, got, code, r.want)
		}
	}

	// Changed behind the adapter: every kind of version notices.
	s.set("/a.txt", file{body: "HELLO, world", etag: `"a2"`})
	s.set("/b.csv", file{body: "x,y\n3,4\n", etag: `W/"b2"`})
	s.set("/dir/c.txt", file{body: "9876543210", mod: modTime.Add(time.Hour)})
	s.set("/whole.bin", file{body: "ABCDEFGHIJ", etag: `"w2"`, noRange: true})
	for key, version := range map[string]string{"a.txt": `"a1"`, "b.csv": `W/"b1"`, "dir/c.txt": modTime.Format(http.TimeFormat), "whole.bin": `"w1"`} {
		if got, code := c.read(key, version, 0, 3); code != adapter.CodeChanged {
			t.Errorf("read of changed %s: %q %q, want %s", key, got, code, adapter.CodeChanged)
		}
	}
	if got, code := c.read("a.txt", `"a2"`, 0, 5); code != "" || string(got) != "HELLO" {
		t.Errorf("read of the new version: %q %s", got, code)
	}

	// Deleted: a pinned read has changed; failing: unavailable.
	s.set("/a.txt", file{status: http.StatusNotFound})
	if _, code := c.read("a.txt", `"a2"`, 0, 5); code != adapter.CodeChanged {
		t.Errorf("read of a deleted resource: %q", code)
	}
	s.set("/b.csv", file{status: http.StatusServiceUnavailable})
	if _, code := c.read("b.csv", `W/"b2"`, 0, 5); code != adapter.CodeUnavailable {
		t.Errorf("read of a failing resource: %q", code)
	}
	if _, e := c.listAll(2); e == nil || e.Code != adapter.CodeUnavailable {
		t.Errorf("list with a failing resource: %+v", e)
	}
}

// TestServerDown: a server that is gone is unavailable, not empty.
func TestServerDown(t *testing.T) {
	s := newSite(t, map[string]file{"/a.txt": {body: "hello", etag: `"a1"`}})
	c := start(t, "--url", s.URL+"/a.txt", "--timeout", "2s")
	if objs, e := c.listAll(10); e != nil || len(objs) != 1 {
		t.Fatalf("list: %v %v", objs, e)
	}
	s.Close()
	if _, e := c.listAll(10); e == nil || e.Code != adapter.CodeUnavailable {
		t.Errorf("list of a server that is down: %+v", e)
	}
	if _, code := c.read("a.txt", `"a1"`, 0, 5); code != adapter.CodeUnavailable {
		t.Errorf("read of a server that is down: %q", code)
	}
	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "a.txt"}); res.Error == nil || res.Error.Code != adapter.CodeUnavailable {
		t.Errorf("stat of a server that is down: %+v", res)
	}
}

// TestIndex: --index shows the files an index page links to below its
// directory, and nothing else.
func TestIndex(t *testing.T) {
	page := `<html><body><h1>Index of /pub/</h1>
<a href="?C=N;O=D">Name</a> <a href="../">Parent</a> <a href="sub/">sub/</a>
<a href="a.txt">a.txt</a> <A HREF='sub/b%20c.txt'>b c</A> <a href="a.txt#top">again</a>
<a href="/pub/d.txt">absolute path</a> <a href="/elsewhere.txt">outside</a>
<a href="http://other.example/pub/x.txt">another host</a> <a href="../up.txt">up</a>
<a href="sub/../e.txt">dot-dot</a> <a href="bad%01name">control</a> <a href="x//y">empty segment</a>
<a href="mailto:someone@example.com">mail</a> <a name="anchor">no href</a>
<a href="nover.txt">unpinnable</a>
</body></html>`
	s := newSite(t, map[string]file{
		"/pub/a.txt":       {body: "aaa", etag: `"a"`},
		"/pub/sub/b c.txt": {body: "bbbb", etag: `"b"`},
		"/pub/d.txt":       {body: "d", etag: `"d"`},
		"/pub/e.txt":       {body: "ee", etag: `"e"`},
		"/pub/nover.txt":   {body: "?"},
		"/elsewhere.txt":   {body: "no", etag: `"x"`},
		"/up.txt":          {body: "no", etag: `"x"`},
	})
	s.set("/pub/", file{body: page, etag: `"index"`})
	c := start(t, "--index", s.URL+"/pub/")
	objs, e := c.listAll(2)
	if e != nil {
		t.Fatalf("list: %v\n%s", e, c.Stderr())
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	if want := []string{"a.txt", "d.txt", "e.txt", "sub/b c.txt"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q\n%s", keys, want, c.Stderr())
	}
	if got, code := c.read("sub/b c.txt", `"b"`, 1, 2); code != "" || string(got) != "bb" {
		t.Errorf("read: %q %s", got, code)
	}
	// A link that went away: the key is no more, a pinned read changed.
	s.set("/pub/", file{body: `<a href="d.txt">d</a>`, etag: `"index2"`})
	s.set("/pub/a.txt", file{status: http.StatusNotFound})
	if got, code := c.read("a.txt", `"a"`, 0, 3); code != adapter.CodeChanged {
		t.Errorf("read of an unlinked, deleted file: %q %q", got, code)
	}
	if objs, e := c.listAll(10); e != nil || len(objs) != 1 || objs[0].Key != "d.txt" {
		t.Errorf("list after the index changed: %+v %v", objs, e)
	}
	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "e.txt"}); res.Error == nil || res.Error.Code != adapter.CodeNotFound {
		t.Errorf("stat of an unlinked file: %+v", res)
	}
}

// TestBadRange: a 206 for other bytes than asked, or a whole answer that
// does not name its version, is unavailable, never the wrong bytes.
func TestBadRange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v"`)
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", "10")
			return
		}
		w.Header().Set("Content-Range", "bytes 0-3/10")
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, "0123")
	}))
	t.Cleanup(srv.Close)
	// Whole, without an ETag: it may have ignored If-Match as well.
	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		if r.Method == http.MethodHead {
			w.Header().Set("ETag", `"v"`)
			return
		}
		io.WriteString(w, "0123456789")
	}))
	t.Cleanup(whole.Close)
	c := start(t, "--url", srv.URL+"/f", "--url", whole.URL+"/g")
	if got, code := c.read("f", `"v"`, 4, 4); code != adapter.CodeUnavailable {
		t.Errorf("read of a wrong range: %q %q", got, code)
	}
	if got, code := c.read("g", `"v"`, 4, 4); code != adapter.CodeUnavailable {
		t.Errorf("read answered whole without an ETag: %q %q", got, code)
	}
}

// TestRedirect: a redirect within the host is followed, one to another
// host is refused (the resource is not shown).
func TestRedirect(t *testing.T) {
	other := newSite(t, map[string]file{"/x": {body: "elsewhere", etag: `"x"`}})
	s := newSite(t, map[string]file{"/real": {body: "here", etag: `"r"`}})
	mux := http.NewServeMux()
	mux.Handle("/moved", http.RedirectHandler("/real", http.StatusFound))
	mux.Handle("/away", http.RedirectHandler(other.URL+"/x", http.StatusFound))
	mux.Handle("/", s.Config.Handler)
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	c := start(t, "--url", front.URL+"/moved", "--url", front.URL+"/away")
	objs, e := c.listAll(10)
	if e != nil || len(objs) != 1 || objs[0].Key != "moved" || objs[0].Size != 4 {
		t.Fatalf("list: %+v %v\n%s", objs, e, c.Stderr())
	}
	if !c.logged("redirect refused") {
		t.Errorf("stderr does not say the redirect was refused:\n%s", c.Stderr())
	}
	if got, code := c.read("moved", `"r"`, 0, 4); code != "" || string(got) != "here" {
		t.Errorf("read through a redirect: %q %s", got, code)
	}
}

func TestURLKeys(t *testing.T) {
	rs, err := urlResources([]string{"http://h/a//b/", "https://h/x/../c?q=1", "http://h", "http://h/", "http://other/a/b", "http://h/sp%20ace"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.key)
	}
	if want := []string{"a/b", "c", "index", "index~2", "a/b~2", "sp ace"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	for _, bad := range []string{"ftp://h/a", "/relative", "http://h/a%00b"} {
		if _, err := urlResources([]string{bad}); err == nil {
			t.Errorf("--url %q accepted", bad)
		}
	}
}
