package fuse_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestListingRacingAWrite: a listing the gateway answered before a file
// written through the mount reached it, and kept after, must not make the
// file look absent once the kernel asks again (CI saw ENOENT reading back
// a file just written while other writers listed the directory).
func TestListingRacingAWrite(t *testing.T) {
	requireFUSE(t)
	e := newEnv(t)
	e.fork(t, "dev", "main")
	var (
		mu       sync.Mutex
		hold     chan struct{} // non-nil: hold the next listing's answer
		answered = make(chan struct{}, 1)
	)
	c := e.ownerAround(t, nil, func(r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "object/list") {
			return
		}
		mu.Lock()
		h := hold
		hold = nil
		mu.Unlock()
		if h != nil {
			answered <- struct{}{}
			<-h
		}
	})
	mnt, _ := e.mount(t, mountOpts{c: c})
	dir := filepath.Join(mnt, "d")
	must(t, os.Mkdir(dir, 0o755))

	release := make(chan struct{})
	mu.Lock()
	hold = release
	mu.Unlock()
	listed := make(chan error, 1)
	go func() {
		_, err := os.ReadDir(dir)
		listed <- err
	}()
	<-answered // the gateway listed d, empty; its answer is held

	p := filepath.Join(dir, "x")
	body := pattern(7, 10<<10)
	writeFile(t, p, body)
	written := time.Now()
	time.Sleep(300 * time.Millisecond) // the kernel's entry for x expires
	close(release)
	must(t, <-listed)

	if time.Since(written) > time.Second {
		t.Skip("too slow to be inside the listing's TTL")
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("a file just written, after a listing older than it: %v", err)
	}
	if st.Size() != int64(len(body)) {
		t.Fatalf("size %d, want %d", st.Size(), len(body))
	}
	if got := readFile(t, p); !bytes.Equal(got, body) {
		t.Fatal("read back other bytes")
	}
}
