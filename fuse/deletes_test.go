package fuse_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/client"
)

// deleteGate is a proxy in front of the gateway that holds every
// DeleteObjects call until released, so a test sees the mount between an
// unlink and the gateway hearing of it.
type deleteGate struct {
	mu   sync.Mutex
	held chan struct{} // nil: pass
	seen int           // DeleteObjects calls that reached the proxy
}

func (g *deleteGate) hold() {
	g.mu.Lock()
	g.held = make(chan struct{})
	g.mu.Unlock()
}

func (g *deleteGate) release() {
	g.mu.Lock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.mu.Unlock()
}

// client is the owner through the gate.
func (g *deleteGate) client(t *testing.T, e *env) *client.Client {
	c := e.ownerVia(t, func(r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Query().Has("delete") {
			g.mu.Lock()
			g.seen++
			held := g.held
			g.mu.Unlock()
			if held != nil {
				<-held
			}
		}
	})
	t.Cleanup(g.release) // before the proxy closes, which waits for held calls
	return c
}

// TestWritebackDeletes: with write-back, unlink returns before the gateway
// deletes the file, and until it does the name is gone from the mount's
// lookups and listings (after their TTL too); the deletes go in
// DeleteObjects batches, fsync of the root waits for them, a file made
// again at an unlinked name is not deleted by the late delete, and rmdir
// after rm of every file finds the directory empty.
func TestWritebackDeletes(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	g := &deleteGate{}
	mnt, _ := e.mount(t, mountOpts{c: g.client(t, e), writeback: true})
	t.Cleanup(g.release) // before the unmount, which sends what is held
	dir := filepath.Join(mnt, "d")
	must(t, os.Mkdir(dir, 0o755))
	for _, n := range []string{"a", "b", "c", "keep"} {
		writeFile(t, filepath.Join(dir, n), []byte("old "+n))
	}
	syncRoot(t, mnt)

	g.hold()
	for _, n := range []string{"a", "b"} {
		must(t, os.Remove(filepath.Join(dir, n)))
	}
	time.Sleep(300 * time.Millisecond) // past the mount's 200 ms TTL: names come from the gateway again
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("stat of an unlinked file while its delete is held: %v", err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"c", "keep"}) {
		t.Fatalf("listing while the deletes are held: %v", got)
	}
	if _, err := e.get(e.owner, "dev", "d/a"); err != nil {
		t.Fatalf("the gateway lost d/a before the delete was sent: %v", err)
	}
	g.release()
	syncRoot(t, mnt)
	for _, k := range []string{"d/a", "d/b"} {
		if _, err := e.get(e.owner, "dev", k); client.Code(err) != "NoSuchKey" {
			t.Fatalf("%s after fsync of the root: %v", k, err)
		}
	}

	// Unlinked and made again before the delete went: the new file stays.
	g.hold()
	must(t, os.Remove(filepath.Join(dir, "c")))
	go func() { time.Sleep(200 * time.Millisecond); g.release() }() // the create waits for the delete
	writeFile(t, filepath.Join(dir, "c"), []byte("new c"))
	syncRoot(t, mnt)
	if got, err := e.get(e.owner, "dev", "d/c"); err != nil || !bytes.Equal(got, []byte("new c")) {
		t.Fatalf("d/c made again after an unlink: %q, %v", got, err)
	}

	// rm -r: the files' deletes are sent before rmdir looks.
	for _, n := range []string{"c", "keep"} {
		must(t, os.Remove(filepath.Join(dir, n)))
	}
	must(t, os.Remove(dir))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("d after rmdir: %v", err)
	}
	g.mu.Lock()
	seen := g.seen
	g.mu.Unlock()
	if seen == 0 {
		t.Fatal("no DeleteObjects call reached the gateway: the unlinks were not batched")
	}
}

// TestWritebackDeleteRefused: a lease that may not delete a file is told
// at unlink, not later.
func TestWritebackDeleteRefused(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.put(t, "dev", "ro/x", []byte("x"))
	lc, _ := e.lease(t, map[string]any{"branch": "dev", "paths": []string{"**"}, "actions": []string{"list", "read", "write"}})
	mnt, _ := e.mount(t, mountOpts{c: lc, writeback: true})
	wantErrno(t, os.Remove(filepath.Join(mnt, "ro", "x")), syscall.EACCES)
	if _, err := e.get(e.owner, "dev", "ro/x"); err != nil {
		t.Fatalf("ro/x after a refused unlink: %v", err)
	}
}

// syncRoot fsyncs the mount's root: everything reaches the gateway.
func syncRoot(t *testing.T, mnt string) {
	t.Helper()
	root, err := os.Open(mnt)
	must(t, err)
	defer root.Close()
	must(t, root.Sync())
}

// TestUnlinkAsksForEmptinessOnlyAtTheEnd: removing the files of a
// directory that exists only through its keys asks the gateway whether
// it emptied only when the mount's fresh listing names no other object
// (the gateway's answer skips every delete staged before it, so asking at
// each unlink made rm of n files cost n^2); the emptied directory still
// stays until rmdir.
func TestUnlinkAsksForEmptinessOnlyAtTheEnd(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	const n = 30
	for i := range n {
		e.put(t, "dev", fmt.Sprintf("imp/f%02d", i), []byte("x"))
	}
	var mu sync.Mutex
	asked := 0
	c := e.ownerVia(t, func(r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/object/list") {
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"limit":2}`)) {
			mu.Lock()
			asked++
			mu.Unlock()
		}
	})
	mnt, _ := e.mount(t, mountOpts{c: c})
	dir := filepath.Join(mnt, "imp")
	if got := names(t, dir); len(got) != n {
		t.Fatalf("listing: %d names", len(got))
	}
	for i := range n {
		must(t, os.Remove(filepath.Join(dir, fmt.Sprintf("f%02d", i))))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the emptied directory: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked == 0 || asked > 3 {
		t.Fatalf("the gateway was asked %d times whether imp/ emptied during %d unlinks; want once or a few (the TTL)", asked, n)
	}
}
