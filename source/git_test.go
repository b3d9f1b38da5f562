package source_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/agentnas/nas/source"
	"github.com/agentnas/nas/source/sourcetest"
)

// gitFile is one entry of a test repository's tree.
type gitFile struct {
	mode filemode.FileMode
	data []byte        // a blob's bytes
	hash plumbing.Hash // a submodule's commit
}

// gitRepo is a bare repository whose branch main the test rewrites: each
// commit holds exactly files.
type gitRepo struct {
	dir   string
	r     *git.Repository
	files map[string]gitFile
	head  plumbing.Hash
}

func newGitRepo(t testing.TB, objs map[string][]byte) *gitRepo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, true)
	must(t, err)
	g := &gitRepo{dir: dir, r: r, files: map[string]gitFile{}}
	for k, v := range objs {
		g.files[k] = gitFile{mode: filemode.Regular, data: v}
	}
	g.commit(t, "first")
	return g
}

// commit writes the files as a new commit on main.
func (g *gitRepo) commit(t testing.TB, msg string) plumbing.Hash {
	t.Helper()
	st := g.r.Storer
	tree := g.tree(t, st, "")
	when := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(len(g.head.String())) * time.Second)
	c := &object.Commit{Author: object.Signature{Name: "t", Email: "t@example.org", When: when}, Committer: object.Signature{Name: "t", Email: "t@example.org", When: when},
		Message: msg, TreeHash: tree}
	if !g.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{g.head}
	}
	o := st.NewEncodedObject()
	must(t, c.Encode(o))
	h, err := st.SetEncodedObject(o)
	must(t, err)
	must(t, st.SetReference(plumbing.NewHashReference("refs/heads/main", h)))
	must(t, st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")))
	g.head = h
	return h
}

// tree writes the tree of the files under dir ("" or ending in "/").
func (g *gitRepo) tree(t testing.TB, st storage.Storer, dir string) plumbing.Hash {
	t.Helper()
	var entries []object.TreeEntry
	subs := map[string]bool{}
	for k, f := range g.files {
		rest, ok := strings.CutPrefix(k, dir)
		if !ok {
			continue
		}
		if name, _, nested := strings.Cut(rest, "/"); nested {
			if !subs[name] {
				subs[name] = true
				entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: g.tree(t, st, dir+name+"/")})
			}
			continue
		}
		h := f.hash
		if f.mode != filemode.Submodule {
			o := st.NewEncodedObject()
			o.SetType(plumbing.BlobObject)
			w, err := o.Writer()
			must(t, err)
			_, err = w.Write(f.data)
			must(t, err)
			must(t, w.Close())
			h, err = st.SetEncodedObject(o)
			must(t, err)
		}
		entries = append(entries, object.TreeEntry{Name: rest, Mode: f.mode, Hash: h})
	}
	// Git's order: a folder's name sorts as if it ended in "/".
	slices.SortFunc(entries, func(a, b object.TreeEntry) int {
		an, bn := a.Name, b.Name
		if a.Mode == filemode.Dir {
			an += "/"
		}
		if b.Mode == filemode.Dir {
			bn += "/"
		}
		return strings.Compare(an, bn)
	})
	o := st.NewEncodedObject()
	must(t, (&object.Tree{Entries: entries}).Encode(o))
	h, err := st.SetEncodedObject(o)
	must(t, err)
	return h
}

func TestGitConformance(t *testing.T) {
	t.Parallel()
	sourcetest.TestSource(t, func(t *testing.T, objs map[string][]byte) sourcetest.Fixture {
		g := newGitRepo(t, objs)
		s, err := source.OpenGit(context.Background(), g.dir, "main")
		must(t, err)
		return sourcetest.Fixture{Source: s, Replace: func(t *testing.T, key string, data []byte) {
			g.files[key] = gitFile{mode: filemode.Regular, data: data}
			g.commit(t, "replace "+key)
		}}
	})
}

// TestGitKinds: links, submodules and LFS pointers are listed as what
// they are; a bad location or revision is refused at attach.
func TestGitKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGitRepo(t, map[string][]byte{"README.md": []byte("# hi\n")})
	lfs := "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	sub := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	g.files["bin/run.sh"] = gitFile{mode: filemode.Executable, data: []byte("#!/bin/sh\n")}
	g.files["link"] = gitFile{mode: filemode.Symlink, data: []byte("../../etc/passwd")}
	g.files["vendor/lib"] = gitFile{mode: filemode.Submodule, hash: sub}
	g.files["model.bin"] = gitFile{mode: filemode.Regular, data: []byte(lfs)}
	g.commit(t, "kinds")
	s, err := source.OpenGit(ctx, g.dir, "HEAD")
	must(t, err)
	want := map[string]string{"README.md": "# hi\n", "bin/run.sh": "#!/bin/sh\n", "link": "../../etc/passwd",
		"model.bin": lfs, "vendor/lib": "Subproject commit " + sub.String() + "\n"}
	var keys []string
	must(t, s.List(ctx, "", func(o source.Object) error {
		keys = append(keys, o.Key)
		rc, err := s.ReadRange(ctx, o.Pin(), 0, o.Size)
		if err != nil {
			return err
		}
		defer rc.Close()
		b := make([]byte, o.Size+1)
		n, _ := rc.Read(b)
		for n < int(o.Size) {
			m, err := rc.Read(b[n:])
			n += m
			if err != nil {
				break
			}
		}
		if string(b[:n]) != want[o.Key] {
			t.Errorf("%s reads %q, want %q", o.Key, b[:n], want[o.Key])
		}
		return nil
	}))
	if strings.Join(keys, ",") != "README.md,bin/run.sh,link,model.bin,vendor/lib" {
		t.Fatalf("listed %q", keys)
	}
	for _, bad := range []string{"git:relative@main", "git:" + g.dir + "@", "git:" + g.dir + "@-x"} {
		if _, err := source.ParseLocation(bad); err == nil {
			t.Errorf("ParseLocation(%q) accepted", bad)
		}
	}
	if _, err := source.OpenGit(ctx, g.dir, "no-such-branch"); err == nil {
		t.Fatal("a revision that does not resolve opened")
	}
	if _, err := source.OpenGit(ctx, t.TempDir(), "HEAD"); err == nil {
		t.Fatal("a folder that is no repository opened")
	}
}

// TestGitAttach attaches a branch of a Git repository through the real
// gateway: reads and ranges materialise blobs, the branch moving leaves
// pinned reads exact, a refresh shows the move as a diff, and a
// repository gone answers 503 and comes back when it does.
func TestGitAttach(t *testing.T) {
	t.Parallel()
	g := newGitRepo(t, map[string][]byte{"a.txt": []byte("alpha\n"), "docs/b.md": []byte("bravo, version 1\n"), "old.txt": []byte("old\n")})
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	info := gw.attach(t, "data", "src/", "git:"+g.dir+"@main", "", nil)
	id := info["id"].(string)
	if info["url"] != "git:"+g.dir+"@main" || info["listed"] != 3.0 || info["versioned"] != true {
		t.Fatalf("attach: %v", info)
	}
	mustGet(t, gw.S3, "data", "src/a.txt", []byte("alpha\n"))
	if b, err := get(t, gw.S3, "data", "src/docs/b.md", "bytes=7-13"); err != nil || string(b) != "version" {
		t.Fatalf("range: %q %v", b, err)
	}

	g.files["docs/b.md"] = gitFile{mode: filemode.Regular, data: []byte("bravo, version 2\n")}
	g.files["new.txt"] = gitFile{mode: filemode.Regular, data: []byte("new\n")}
	delete(g.files, "old.txt")
	g.commit(t, "move")
	// Pinned to blobs: the branch moved, the attached tree did not.
	mustGet(t, gw.S3, "data", "src/docs/b.md", []byte("bravo, version 1\n"))
	mustGet(t, gw.S3, "data", "src/old.txt", []byte("old\n"))

	head := gw.owner(t, "branch/get", map[string]any{"repo": "data", "name": "main"})["branch"].(map[string]any)["head"].(string)
	info = gw.refresh(t, id)
	got := gw.diff(t, "data", head, info["commit"].(string))
	if strings.Join(got, ",") != "A src/new.txt,D src/old.txt,M src/docs/b.md" {
		t.Fatalf("diff after refresh: %q", got)
	}
	mustGet(t, gw.S3, "data", "src/docs/b.md", []byte("bravo, version 2\n"))

	// A lease sees only its paths of the attached tree.
	gw.owner(t, "role/put", map[string]any{"name": "agent", "repo": "data",
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read"}}}})
	l := gw.owner(t, "lease/create", map[string]any{"repo": "data", "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"src/docs/**"}, "actions": []string{"list", "read"}})["lease"].(map[string]any)
	cl := s3Client(gw.URL, aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string),
		SessionToken: l["session_token"].(string)})
	if keys := listKeys(t, cl, "data", ""); len(keys) != 1 || keys["src/docs/b.md"] == "" {
		t.Fatalf("the lease lists %v", keys)
	}
	_, err := get(t, cl, "data", "src/new.txt", "")
	wantCode(t, err, http.StatusNotFound, "NoSuchKey")

	// The repository goes away: a blob not yet local cannot be read.
	moved := g.dir + ".away"
	must(t, os.Rename(g.dir, moved))
	_, err = get(t, gw.S3, "data", "src/new.txt", "")
	if _, st := errCode(err); st != http.StatusServiceUnavailable {
		t.Fatalf("GET with the repository gone: %v, want 503", err)
	}
	mustGet(t, gw.S3, "data", "src/a.txt", []byte("alpha\n")) // local already
	must(t, os.Rename(moved, g.dir))
	mustGet(t, gw.S3, "data", "src/new.txt", []byte("new\n"))
}

// TestGitLyingObject: a repository whose object file holds other bytes
// than its ID says is caught by the whole-object check (ErrCorrupt),
// never served as the pinned file.
func TestGitLyingObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGitRepo(t, map[string][]byte{"f": []byte("truth")})
	s, err := source.OpenGit(ctx, g.dir, "main")
	must(t, err)
	o, err := s.Stat(ctx, "f")
	must(t, err)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 5\x00lies!"))
	must(t, zw.Close())
	p := filepath.Join(g.dir, "objects", o.ETag[:2], o.ETag[2:])
	must(t, os.Chmod(p, 0o600))
	must(t, os.WriteFile(p, z.Bytes(), 0o600))
	rc, err := s.ReadRange(ctx, o.Pin(), 0, o.Size)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, source.ErrCorrupt) {
		t.Fatalf("a lying object: %v, want ErrCorrupt", err)
	}
}

// TestGitURLAttach attaches a remote repository by URL (file://, through
// git's own transport): the gateway mirrors it, a refresh fetches and
// follows the branch, and reads come from the mirror, so they go on
// while the remote is gone.
func TestGitURLAttach(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	g := newGitRepo(t, map[string][]byte{"a.txt": []byte("alpha, version 1\n"), "b.txt": []byte("bravo\n")})
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	url := "git:file://" + g.dir + "@main"
	info := gw.attach(t, "data", "src/", url, "", nil)
	if info["url"] != url || info["listed"] != 2.0 {
		t.Fatalf("attach: %v", info)
	}
	mustGet(t, gw.S3, "data", "src/a.txt", []byte("alpha, version 1\n"))
	g.files["a.txt"] = gitFile{mode: filemode.Regular, data: []byte("alpha, version 2\n")}
	g.commit(t, "second")
	head := gw.owner(t, "branch/get", map[string]any{"repo": "data", "name": "main"})["branch"].(map[string]any)["head"].(string)
	info = gw.refresh(t, info["id"].(string))
	if got := gw.diff(t, "data", head, info["commit"].(string)); strings.Join(got, ",") != "M src/a.txt" {
		t.Fatalf("diff after refresh: %q", got)
	}
	must(t, os.RemoveAll(g.dir)) // the remote is gone: the mirror serves
	mustGet(t, gw.S3, "data", "src/a.txt", []byte("alpha, version 2\n"))
	mustGet(t, gw.S3, "data", "src/b.txt", []byte("bravo\n"))
	for _, bad := range []string{"git:https://user:pw@example.org/r.git@main", "git:http://example.org/r.git", "git:https:///r.git"} {
		if _, err := source.ParseLocation(bad); err == nil {
			t.Errorf("ParseLocation(%q) accepted", bad)
		}
	}
}
