package keyring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCurrentDestroy(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, k, err := r.Current("acme")
	if err != nil || len(k) != KeySize {
		t.Fatal(id, err)
	}
	id2, k2, _ := r.Current("acme")
	if id2 != id || !bytes.Equal(k, k2) {
		t.Fatal("a second Current made another key")
	}
	r2, _ := Open(dir) // another process: the file, not the cache
	if got, err := r2.Key("acme", id); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("reopened: %v", err)
	}
	gone, err := r.Destroy("acme")
	if err != nil || len(gone) != 1 || gone[0] != "acme/"+id {
		t.Fatalf("destroy: %v %v", gone, err)
	}
	for _, ring := range []*Ring{r, r2} {
		if _, err := ring.Key("acme", id); !errors.Is(err, ErrDestroyed) {
			t.Fatalf("a destroyed key: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "acme@"+id+".key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the key file stays: %v", err)
	}
	id3, k3, _ := r.Current("acme")
	if id3 == id || bytes.Equal(k3, k) {
		t.Fatal("the domain reuses its destroyed key")
	}
	if _, err := r.Key("other", id); !errors.Is(err, ErrNoKey) {
		t.Fatalf("a key never held: %v", err)
	}
	for _, bad := range []string{"", "../x", "A", "a/b/c", "a/../x", "../a/x", "a/", "/a", "a@b", ".a"} {
		if _, _, err := r.Current(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("domain %q: %v", bad, err)
		}
	}
}

// TestScoped keeps one domain name of two repositories apart: destroying
// one repository's leaves the other's.
func TestScoped(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ida, ka, err := r.Current(Scoped("repo-a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	idb, kb, err := r.Current(Scoped("repo-b", "x"))
	if err != nil || bytes.Equal(ka, kb) {
		t.Fatalf("two repositories share a key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "repo-a", "x@"+ida+".key")); err != nil {
		t.Fatal(err)
	}
	if gone, err := r.Destroy(Scoped("repo-a", "x")); err != nil || len(gone) != 1 {
		t.Fatalf("destroy: %v %v", gone, err)
	}
	if _, err := r.Key(Scoped("repo-a", "x"), ida); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("repo-a's key: %v", err)
	}
	if got, err := r.Key(Scoped("repo-b", "x"), idb); err != nil || !bytes.Equal(got, kb) {
		t.Fatalf("repo-b's key after repo-a's forget: %v", err)
	}
	if Unscoped(Scoped("repo-b", "x")) != "x" || Unscoped("x") != "x" {
		t.Fatal("Unscoped")
	}
}
