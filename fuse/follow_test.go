package fuse_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentnas/nas/client"
)

// isTouched reports whether r is the mount asking what changed.
func isTouched(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/object/touched") }

// eventually retries check until it returns "" or 5 s have passed.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 5 s", what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sizeOf is the size stat reports for p, or the error.
func sizeOf(p string) string {
	st, err := os.Stat(p)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(st.Size())
}

// TestStatsServedByTheKernelWhileFollowing: once the mount follows the
// gateway's journal, a stat long after the TTL costs no gateway call (the
// kernel keeps the entry), where a mount without it asks again.
func TestStatsServedByTheKernelWhileFollowing(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	for i := range 20 {
		e.put(t, "dev", fmt.Sprintf("d/f%02d", i), []byte("x"))
	}
	var calls atomic.Int64
	c := e.ownerVia(t, func(r *http.Request) {
		if !isTouched(r) {
			calls.Add(1)
		}
	})
	mnt, _ := e.mount(t, mountOpts{c: c})
	time.Sleep(300 * time.Millisecond) // following by now
	statAll := func() {
		for i := range 20 {
			if got := sizeOf(filepath.Join(mnt, fmt.Sprintf("d/f%02d", i))); got != "1" {
				t.Fatalf("f%02d: %s", i, got)
			}
		}
	}
	statAll()
	time.Sleep(600 * time.Millisecond) // three TTLs
	calls.Store(0)
	statAll()
	if n := calls.Load(); n != 0 {
		t.Fatalf("stats three TTLs later cost %d gateway calls; want none while following", n)
	}
}

// TestOthersChangesShowWhileFollowing: what another client changes shows
// through a mount that keeps entries long, as soon as the journal names
// it: an overwrite's size and bytes, a delete, a new name in a listing, a
// new directory.
func TestOthersChangesShowWhileFollowing(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.put(t, "dev", "d/a", []byte("1"))
	e.put(t, "dev", "d/b", []byte("2"))
	mnt, _ := e.mount(t, mountOpts{})
	time.Sleep(300 * time.Millisecond)
	at := func(p string) string { return filepath.Join(mnt, p) }
	if got := sizeOf(at("d/a")); got != "1" {
		t.Fatalf("a: %s", got)
	}
	if got := readFile(t, at("d/a")); string(got) != "1" {
		t.Fatalf("a reads %q", got)
	}
	if got := names(t, at("d")); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("d lists %v", got)
	}
	_ = sizeOf(at("d/new"))   // an absence the kernel may keep for the TTL
	_ = sizeOf(at("d/sub/x")) // and one in a directory not there yet
	time.Sleep(300 * time.Millisecond)

	e.put(t, "dev", "d/a", []byte("five!"))
	if _, err := e.owner.Delete(t.Context(), client.Object{Repo: e.repo, Branch: "dev", Key: "d/b"}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "dev", "d/new", []byte("nn"))
	e.put(t, "dev", "d/sub/x", []byte("xyz"))
	eventually(t, "the overwrite's size", func() string {
		if got := sizeOf(at("d/a")); got != "5" {
			return got
		}
		return ""
	})
	if got := readFile(t, at("d/a")); string(got) != "five!" {
		t.Fatalf("a reads %q after the overwrite", got)
	}
	eventually(t, "the delete", func() string {
		if _, err := os.Stat(at("d/b")); !os.IsNotExist(err) {
			return fmt.Sprint("b: ", err)
		}
		return ""
	})
	eventually(t, "the listing", func() string {
		if got := names(t, at("d")); !slices.Equal(got, []string{"a", "new", "sub"}) {
			return fmt.Sprint(got)
		}
		return ""
	})
	if got := sizeOf(at("d/sub/x")); got != "3" {
		t.Fatalf("the new directory's file: %s", got)
	}
}

// TestFollowingFailsBackToTheTTL: when the journal cannot be asked, the
// mount stops trusting what the kernel keeps and another client's change
// shows after the TTL, as without it.
func TestFollowingFailsBackToTheTTL(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.put(t, "dev", "f", []byte("1"))
	var broken atomic.Bool
	c := e.ownerVia(t, func(r *http.Request) {
		if broken.Load() && isTouched(r) {
			r.URL.Path += "-refused" // the signature no longer matches
		}
	})
	mnt, _ := e.mount(t, mountOpts{c: c})
	time.Sleep(300 * time.Millisecond)
	if got := sizeOf(filepath.Join(mnt, "f")); got != "1" {
		t.Fatalf("f: %s", got)
	}
	broken.Store(true)
	time.Sleep(100 * time.Millisecond) // a call refused, at least
	e.put(t, "dev", "f", []byte("four"))
	eventually(t, "the change while the journal is refused", func() string {
		if got := sizeOf(filepath.Join(mnt, "f")); got != "4" {
			return got
		}
		return ""
	})
}

// TestLeaseWithoutListIsNotFollowed: a mount whose lease may not list
// never asks the journal (the gateway would record a refusal each time);
// one that may, does.
func TestLeaseWithoutListIsNotFollowed(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "shared/a.txt", []byte("a"))
	e.commit(t, "main")
	for _, c := range []struct {
		actions []string
		follows bool
	}{{[]string{"read"}, false}, {[]string{"list", "read"}, true}} {
		lc, l := e.lease(t, map[string]any{"fork_from": "main", "ttl": "1h", "paths": []string{"shared/**"}, "actions": c.actions})
		var asked atomic.Int64
		u, err := url.Parse(e.srv.Endpoint)
		must(t, err)
		rp := httputil.NewSingleHostReverseProxy(u)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isTouched(r) {
				asked.Add(1)
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
		pc := client.New(client.Config{Endpoint: proxy.URL, Attempts: 2, Backoff: 20 * time.Millisecond, Credentials: lc.Credentials()})
		mnt, _ := e.mount(t, mountOpts{c: pc, branch: l["branch"].(string)})
		if got := readFile(t, filepath.Join(mnt, "shared/a.txt")); string(got) != "a" {
			t.Fatalf("read %q", got)
		}
		time.Sleep(400 * time.Millisecond) // four polls, if it follows
		if n := asked.Load(); (n > 0) != c.follows {
			t.Fatalf("a lease with %v asked the journal %d times", c.actions, n)
		}
	}
}
