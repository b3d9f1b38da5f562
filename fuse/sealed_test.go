package fuse_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentnas/nas/cas/castest"
)

// TestSealedOnTheMount: a sensitive file reads through the mount, whole
// and at any offset, without its plaintext entering the chunk cache; a
// file written through the mount under a sensitive rule is sealed.
func TestSealedOnTheMount(t *testing.T) {
	e := newEnv(t)
	call(t, e.owner, "label/set", map[string]any{"repo": e.repo, "glob": "vault/**", "retention": "sensitive", "domain": "vault"}, nil)
	r := rand.New(rand.NewPCG(11, 12))
	doc := make([]byte, 300<<10)
	for i := range doc {
		doc[i] = byte(r.Uint32())
	}
	e.put(t, "main", "vault/doc.bin", doc)
	e.commit(t, "main")
	cache := t.TempDir()
	dir, _ := e.mount(t, mountOpts{branch: "main", cacheDir: cache})
	p := filepath.Join(dir, "vault/doc.bin")
	if got := readFile(t, p); !bytes.Equal(got, doc) {
		t.Fatalf("the sealed file through the mount: %d bytes, want %d", len(got), len(doc))
	}
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	for _, off := range []int64{0, 65530, 131072, int64(len(doc)) - 7} {
		buf := make([]byte, 100)
		n, err := f.ReadAt(buf, off)
		if err != nil && err != io.EOF || !bytes.Equal(buf[:n], doc[off:min(off+100, int64(len(doc)))]) {
			t.Fatalf("pread at %d: %v", off, err)
		}
	}
	written := bytes.Repeat([]byte("written through the mount, sealed at the gateway. "), 3000)
	writeFile(t, filepath.Join(dir, "vault/new.txt"), written)
	if got, err := e.get(e.owner, "main", "vault/new.txt"); err != nil || !bytes.Equal(got, written) {
		t.Fatalf("the file written through the mount: %v", err)
	}
	var st struct {
		Object struct {
			Sealed bool `json:"sealed"`
		} `json:"object"`
	}
	call(t, e.owner, "object/stat", map[string]any{"repo": e.repo, "branch": "main", "key": "vault/new.txt"}, &st)
	if !st.Object.Sealed {
		t.Fatal("a file written through the mount under a sensitive rule is not sealed")
	}
	for _, probe := range [][]byte{doc[70000:70064], written[70000:70064]} {
		for _, d := range []string{cache, e.srv.DataDir} {
			if where := castest.FindOnDisk(t, d, probe); where != "" {
				t.Errorf("plaintext of a sealed file in %s", where)
			}
		}
	}
}
