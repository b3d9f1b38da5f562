package fuse_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
)

// TestAdapterSourceOnTheMount: the files an adapter shows (the shipped
// HTTP adapter over an index page) read through the mount, whole and by
// range; while the web server is down a file not yet local is EIO, and
// reads of it work again once the server is back.
func TestAdapterSourceOnTheMount(t *testing.T) {
	adapters := t.TempDir()
	prog := nastest.Build(t, "cmd/nas-adapter-http", adapters)
	e := newEnv(t, nastest.Options{Sources: source.Options{Adapters: adapters, AdapterTimeout: 5 * time.Second}})
	csv := bytes.Repeat([]byte("id,name\n1,alpha\n"), 50000)
	files := map[string][]byte{"/pub/a.csv": csv, "/pub/notes/b.txt": []byte("bravo\n")}
	var up atomic.Bool
	up.Store(true)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/pub/" {
			w.Write([]byte(`<html><a href="a.csv">a</a> <a href="notes/b.txt">b</a> <a href="../">up</a></html>`))
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", `"`+strings.ReplaceAll(r.URL.Path, "/", "-")+`"`)
		http.ServeContent(w, r, "", time.Unix(1700000000, 0), bytes.NewReader(b))
	}))
	defer web.Close()
	call(t, e.owner, "source/add", map[string]any{"repo": e.repo, "prefix": "web/", "url": "exec:" + prog,
		"args": []string{"--index", web.URL + "/pub/"}, "wait": true}, nil)
	dir, _ := e.mount(t, mountOpts{branch: "main"})
	f, err := os.Open(filepath.Join(dir, "web/a.csv"))
	must(t, err)
	defer f.Close()
	buf := make([]byte, 16)
	if _, err := f.ReadAt(buf, 16*1000); err != nil || !bytes.Equal(buf, csv[:16]) {
		t.Fatalf("pread: %q %v", buf, err)
	}
	if got := readFile(t, filepath.Join(dir, "web/a.csv")); !bytes.Equal(got, csv) {
		t.Fatalf("a.csv through the mount: %d bytes, want %d", len(got), len(csv))
	}
	up.Store(false)
	_, err = os.ReadFile(filepath.Join(dir, "web/notes/b.txt"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("a file not yet local with its server down: %v, want EIO", err)
	}
	up.Store(true)
	if got := readFile(t, filepath.Join(dir, "web/notes/b.txt")); string(got) != "bravo\n" {
		t.Fatalf("b.txt once the server is back: %q", got)
	}
}
