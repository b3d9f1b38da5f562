package source_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/source"
)

// folder builds a folder with nested files and symbolic links, some of
// which lead outside it, next to a secret file outside.
func folder(t *testing.T) (root, secret string) {
	base := t.TempDir()
	root = filepath.Join(base, "shared")
	secret = filepath.Join(base, "secret.txt")
	must(t, os.WriteFile(secret, []byte("outside the folder"), 0o600))
	files := map[string]string{
		"a.txt":          "a",
		"a-b.txt":        "a-b",
		"a/x.txt":        "a/x",
		"sub/deep/f.bin": strings.Repeat("f", 70000),
		"z.txt":          "z",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(body), 0o600))
	}
	must(t, os.Symlink("a.txt", filepath.Join(root, "link-in")))
	must(t, os.Symlink(secret, filepath.Join(root, "link-out")))
	must(t, os.Symlink("../secret.txt", filepath.Join(root, "dotdot")))
	must(t, os.Symlink("sub", filepath.Join(root, "link-dir")))
	return root, secret
}

func TestDirSourceStaysInside(t *testing.T) {
	t.Parallel()
	root, secret := folder(t)
	d, err := source.OpenDir(root)
	must(t, err)
	defer d.Close()
	ctx := context.Background()
	var keys []string
	must(t, d.List(ctx, "", func(o source.Object) error { keys = append(keys, o.Key); return nil }))
	want := []string{"a-b.txt", "a.txt", "a/x.txt", "link-in", "sub/deep/f.bin", "z.txt"}
	if !slices.Equal(keys, want) {
		t.Fatalf("listed %q, want %q", keys, want)
	}
	var after []string
	must(t, d.List(ctx, "a/x.txt", func(o source.Object) error { after = append(after, o.Key); return nil }))
	if !slices.Equal(after, want[3:]) {
		t.Fatalf("listed after a/x.txt: %q", after)
	}
	for _, k := range []string{"../secret.txt", "link-out", "dotdot", "/etc/passwd", secret, "a/../../secret.txt", ""} {
		if _, err := d.Stat(ctx, k); err == nil {
			t.Errorf("Stat(%q) succeeded", k)
		}
		rc, err := d.ReadRange(ctx, source.Pin{Key: k, Size: 18, ETag: "x"}, 0, 18)
		if err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("ReadRange(%q) read %q", k, b)
		} else if !errors.Is(err, source.ErrChanged) {
			t.Errorf("ReadRange(%q): %v, want an escape (ErrChanged)", k, err)
		}
	}
	if _, err := source.OpenDir("relative"); !errors.Is(err, source.ErrInvalid) {
		t.Fatalf("relative folder: %v", err)
	}

	// Through the gateway: attached, read, drifted, escaped.
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "docs")
	info := gw.attach(t, "docs", "shared/", "dir:"+root, "", nil)
	if info["added"] != 6.0 {
		t.Fatalf("attach: %v", info)
	}
	mustGet(t, gw.S3, "docs", "shared/a/x.txt", []byte("a/x"))
	mustGet(t, gw.S3, "docs", "shared/link-in", []byte("a"))
	mustGet(t, gw.S3, "docs", "shared/sub/deep/f.bin", []byte(strings.Repeat("f", 70000)))
	for _, k := range []string{"shared/link-out", "shared/dotdot", "shared/link-dir/deep/f.bin"} {
		_, err := get(t, gw.S3, "docs", k, "")
		wantCode(t, err, http.StatusNotFound, "NoSuchKey")
	}
	// A file changed in place reads as drifted; one swapped for a link to
	// the secret reads as drifted too, and never as the secret.
	later := time.Now().Add(time.Minute)
	must(t, os.WriteFile(filepath.Join(root, "z.txt"), []byte("Z"), 0o600))
	must(t, os.Chtimes(filepath.Join(root, "z.txt"), later, later))
	_, err = get(t, gw.S3, "docs", "shared/z.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	must(t, os.Remove(filepath.Join(root, "a-b.txt")))
	must(t, os.Symlink(secret, filepath.Join(root, "a-b.txt")))
	_, err = get(t, gw.S3, "docs", "shared/a-b.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	// The folder was only read.
	b, err := os.ReadFile(secret)
	must(t, err)
	if string(b) != "outside the folder" {
		t.Fatal("secret changed")
	}
	info = gw.refresh(t, info["id"].(string))
	if info["changed"] != 1.0 || info["removed"] != 1.0 {
		t.Fatalf("refresh: %v", info)
	}
	mustGet(t, gw.S3, "docs", "shared/z.txt", []byte("Z"))
}

// TestDirSourceRefusesHardLinks: a hard link inside the folder to a file
// outside it is another name for the outside file, which os.Root cannot
// tell; files with more than one link are neither listed nor read, and a
// file hard-linked after it was attached stops reading, through the
// gateway too.
func TestDirSourceRefusesHardLinks(t *testing.T) {
	t.Parallel()
	root, secret := folder(t)
	must(t, os.Link(secret, filepath.Join(root, "hard-out")))
	d, err := source.OpenDir(root)
	must(t, err)
	defer d.Close()
	ctx := context.Background()
	must(t, d.List(ctx, "", func(o source.Object) error {
		if o.Key == "hard-out" {
			t.Fatal("a hard link to a file outside the folder was listed")
		}
		return nil
	}))
	if _, err := d.Stat(ctx, "hard-out"); !errors.Is(err, source.ErrEscape) {
		t.Fatalf("Stat of a hard link: %v, want ErrEscape", err)
	}

	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "docs")
	gw.attach(t, "docs", "shared/", "dir:"+root, "", nil)
	_, err = get(t, gw.S3, "docs", "shared/hard-out", "")
	wantCode(t, err, http.StatusNotFound, "NoSuchKey")
	// Attached with one link, then linked from outside: no longer read.
	must(t, os.Link(filepath.Join(root, "a.txt"), filepath.Join(t.TempDir(), "other-name")))
	_, err = get(t, gw.S3, "docs", "shared/a.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
}
