package fuse_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/client"
)

// opCounter is a proxy in front of the gateway that counts the control
// calls it passes, by operation.
type opCounter struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *opCounter) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// client is the owner through the counter.
func (c *opCounter) client(t *testing.T, e *env) *client.Client {
	c.ops = map[string]int{}
	return e.ownerVia(t, func(r *http.Request) {
		c.mu.Lock()
		c.ops[r.URL.Path]++
		c.mu.Unlock()
	})
}

const statPath = "/_nas/v1/object/stat"

// TestDurableCloseKeepsChunkMap: a small file closed on a mount with
// durable close is read back, after the mount's TTL, from the chunk cache
// without asking the gateway for its chunk map (the PUT answered it); a
// file too large for the answer still asks. Both read back exactly.
func TestDurableCloseKeepsChunkMap(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	var oc opCounter
	dir, _ := e.mount(t, mountOpts{c: oc.client(t, e)})
	small, large := pattern(3, 4096), pattern(4, 300<<10)
	writeFile(t, filepath.Join(dir, "small.txt"), small)
	writeFile(t, filepath.Join(dir, "large.bin"), large)
	time.Sleep(300 * time.Millisecond) // past the mount's TTL
	before := oc.count(statPath)
	if got := readFile(t, filepath.Join(dir, "small.txt")); !bytes.Equal(got, small) {
		t.Fatalf("small file read back %d bytes", len(got))
	}
	if n := oc.count(statPath) - before; n != 0 {
		t.Errorf("reading back a small file asked for its chunk map %d times", n)
	}
	if got := readFile(t, filepath.Join(dir, "large.bin")); !bytes.Equal(got, large) {
		t.Fatalf("large file read back %d bytes", len(got))
	}
	if oc.count(statPath) == before {
		t.Error("a file PUT without a chunk map was read without asking for one")
	}
}

// TestPutChunkMap: a PUT that asks answers its chunk map, which covers
// exactly the bytes sent; one that does not ask, and a sealed object's,
// answer none.
func TestPutChunkMap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	put := func(key string, body []byte, ask bool) client.Info {
		t.Helper()
		inf, err := e.owner.Put(ctx, client.Object{Repo: e.repo, Branch: "dev", Key: key}, bytes.NewReader(body), int64(len(body)), client.PutOptions{ChunkMap: ask})
		must(t, err)
		return inf
	}
	e.fork(t, "dev", "main")
	body := pattern(5, 4000)
	inf := put("one.txt", body, true)
	if len(inf.Chunks) != 1 || inf.Chunks[0].Hash != chunk.Sum(body).String() || inf.Chunks[0].Size != 4000 {
		t.Fatalf("chunk map of a 4,000-byte object: %+v", inf.Chunks)
	}
	big := pattern(6, 256<<10)
	var total int
	for _, c := range put("big.bin", big, true).Chunks {
		total += int(c.Size)
	}
	if total != len(big) {
		t.Fatalf("chunk map of a 256 KiB object covers %d bytes", total)
	}
	if c := put("quiet.txt", body, false).Chunks; c != nil {
		t.Fatalf("a PUT that did not ask answered %v", c)
	}
	call(t, e.owner, "label/set", map[string]any{"repo": e.repo, "glob": "vault/**", "retention": "sensitive", "domain": "vault"}, nil)
	if c := put("vault/secret.txt", body, true).Chunks; c != nil {
		t.Fatalf("a sealed object's PUT answered its chunk map %v", c)
	}
}

// TestKeepCacheSeesNewVersions: the owner's mount lets the kernel keep a
// file's pages across opens only while the file is at the version the
// kernel cached: a version written by another client (same size, so the
// attributes alone cannot tell) reads back new after the TTL, as does
// the mount's own rewrite.
func TestKeepCacheSeesNewVersions(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	dir, _ := e.mount(t, mountOpts{})
	p := filepath.Join(dir, "same-size.txt")
	v1, v2, v3 := pattern(7, 8192), pattern(8, 8192), pattern(9, 8192)
	writeFile(t, p, v1)
	for range 2 {
		if got := readFile(t, p); !bytes.Equal(got, v1) {
			t.Fatal("the mount's own write did not read back")
		}
	}
	// The same size and mtime: the kernel cannot tell by the attributes.
	fi, err := os.Stat(p)
	must(t, err)
	mt := fi.ModTime()
	_, err = e.owner.Put(context.Background(), client.Object{Repo: e.repo, Branch: "dev", Key: "same-size.txt"}, bytes.NewReader(v2), int64(len(v2)),
		client.PutOptions{Meta: map[string]string{"mtime": fmt.Sprintf("%d.%09d", mt.Unix(), mt.Nanosecond())}})
	must(t, err)
	time.Sleep(300 * time.Millisecond) // past the mount's TTL
	if fi, err := os.Stat(p); err != nil || !fi.ModTime().Equal(mt) {
		t.Fatalf("the new version's mtime: %v, %v; want %v", fi.ModTime(), err, mt)
	}
	if got := readFile(t, p); !bytes.Equal(got, v2) {
		t.Fatal("an open after another client's write read the kernel's old pages")
	}
	writeFile(t, p, v3)
	if got := readFile(t, p); !bytes.Equal(got, v3) {
		t.Fatal("the mount's rewrite did not read back")
	}
	if got, err := e.get(e.owner, "dev", "same-size.txt"); err != nil || !bytes.Equal(got, v3) {
		t.Fatalf("the gateway has another version: %v", err)
	}
}
