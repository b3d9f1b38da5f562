package gitexport

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// rewrite rewrites the whole history of the Git repository at dir as a
// person with git would: blob changes the content of the file at path,
// msg the commit messages; refs move to the rewritten commits.
func rewrite(t *testing.T, dir, path string, blob func(path string, b []byte) []byte, msg func(string) string) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := repo.Storer
	store := func(o plumbing.EncodedObject) plumbing.Hash {
		h, err := st.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	trees := map[string]plumbing.Hash{}
	var rewriteTree func(h plumbing.Hash, prefix string) plumbing.Hash
	rewriteTree = func(h plumbing.Hash, prefix string) plumbing.Hash {
		if out, ok := trees[h.String()+prefix]; ok {
			return out
		}
		tr, err := object.GetTree(st, h)
		if err != nil {
			t.Fatal(err)
		}
		entries := append([]object.TreeEntry(nil), tr.Entries...)
		for i, e := range entries {
			p := prefix + e.Name
			if e.Mode == filemode.Dir {
				entries[i].Hash = rewriteTree(e.Hash, p+"/")
				continue
			}
			if p != path {
				continue
			}
			b, err := readBlob(st, e.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if nb := blob(p, b); !bytes.Equal(nb, b) {
				o := st.NewEncodedObject()
				o.SetType(plumbing.BlobObject)
				w, _ := o.Writer()
				w.Write(nb)
				w.Close()
				entries[i].Hash = store(o)
			}
		}
		o := st.NewEncodedObject()
		if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
			t.Fatal(err)
		}
		out := store(o)
		trees[h.String()+prefix] = out
		return out
	}
	commits := map[plumbing.Hash]plumbing.Hash{}
	var rewriteCommit func(h plumbing.Hash) plumbing.Hash
	rewriteCommit = func(h plumbing.Hash) plumbing.Hash {
		if out, ok := commits[h]; ok {
			return out
		}
		c, err := object.GetCommit(st, h)
		if err != nil {
			t.Fatal(err)
		}
		nc := &object.Commit{Author: c.Author, Committer: c.Committer, Message: msg(c.Message), TreeHash: rewriteTree(c.TreeHash, "")}
		for _, p := range c.ParentHashes {
			nc.ParentHashes = append(nc.ParentHashes, rewriteCommit(p))
		}
		o := st.NewEncodedObject()
		if err := nc.Encode(o); err != nil {
			t.Fatal(err)
		}
		out := store(o)
		commits[h] = out
		return out
	}
	refs, err := repo.References()
	if err != nil {
		t.Fatal(err)
	}
	var all []*plumbing.Reference
	refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			all = append(all, r)
		}
		return nil
	})
	for _, r := range all {
		if err := st.SetReference(plumbing.NewHashReference(r.Name(), rewriteCommit(r.Hash()))); err != nil {
			t.Fatal(err)
		}
	}
	_ = storer.ErrStop
}

func TestTamperedExportIsRefused(t *testing.T) {
	t.Parallel()
	src := newService(t)
	seedRepo(t, src, "source", 40)
	clean := filepath.Join(t.TempDir(), "clean.git")
	exportTo(t, src, "source", clean)
	same := func(b []byte) []byte { return b }
	keep := func(s string) string { return s }
	cases := []struct {
		name string
		path string
		blob func(string, []byte) []byte
		msg  func(string) string
		want string
	}{
		{"one blob byte", "big/random.bin", func(p string, b []byte) []byte {
			if p == "big/random.bin" {
				b = bytes.Clone(b)
				b[len(b)/2] ^= 1
			}
			return b
		}, keep, "do not hash"},
		{"one metadata line", ".nas/objects/big/%entries.jsonl", func(p string, b []byte) []byte {
			if p == ".nas/objects/big/%entries.jsonl" {
				return bytes.Replace(b, []byte(`"content_type":"application/octet-stream"`), []byte(`"content_type":"text/plain"`), 1)
			}
			return b
		}, keep, "metadata line"},
		{"a commit message", "", same2(same), func(m string) string {
			return strings.Replace(m, "first", "the first", 1)
		}, "Git commit"},
		{"a message in commit.json", ".nas/commit.json", func(p string, b []byte) []byte {
			if p == ".nas/commit.json" {
				return bytes.Replace(b, []byte(`"message": "first"`), []byte(`"message": "FIRST"`), 1)
			}
			return b
		}, keep, "hash to"},
		{"the version writer", ".nas/objects/big/%entries.jsonl", func(p string, b []byte) []byte {
			if p == ".nas/objects/big/%entries.jsonl" {
				return bytes.Replace(b, []byte(`"writer":"`), []byte(`"writer":"x`), 1)
			}
			return b
		}, keep, "branch id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tampered.git")
			runGit(t, filepath.Dir(dir), "clone", "-q", "--mirror", clean, dir)
			rewrite(t, dir, tc.path, tc.blob, tc.msg)
			dst := newService(t)
			err := importFrom(dst, dir, "copy")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import of an export with %s changed: %v (want %q)", tc.name, err, tc.want)
			}
			if !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrFormat) {
				t.Errorf("error is neither ErrMismatch nor ErrFormat: %v", err)
			}
			if repos, _ := dst.ListRepos(context.Background()); len(repos) != 0 {
				t.Errorf("a refused import left repositories: %v", repos)
			}
		})
	}
	// The untouched mirror imports; a second import of it is refused.
	dst := newService(t)
	if err := importFrom(dst, clean, "copy"); err != nil {
		t.Fatal(err)
	}
	if err := importFrom(dst, clean, "copy"); !errors.Is(err, branch.ErrRepoExists) {
		t.Errorf("import over an existing repository: %v", err)
	}
}

func same2(f func([]byte) []byte) func(string, []byte) []byte {
	return func(_ string, b []byte) []byte { return f(b) }
}

// TestLoadRefusesBadStreams feeds Load streams the gateway must refuse:
// truncated, a chunk that does not match, and a commit whose tree was
// not rebuilt; none leaves a repository.
func TestLoadRefusesBadStreams(t *testing.T) {
	src := newService(t)
	seedRepo(t, src, "source", 20)
	var full bytes.Buffer
	if _, err := Dump(context.Background(), src, "source", &full); err != nil {
		t.Fatal(err)
	}
	b := full.Bytes()
	for name, stream := range map[string][]byte{
		"truncated":     b[:len(b)/2],
		"no end":        b[:len(b)-20],
		"flipped bytes": flipped(b, len(b)/3),
		"empty":         nil,
		"not a dump":    []byte("PACK0000"),
	} {
		t.Run(name, func(t *testing.T) {
			dst := newService(t)
			if _, err := Load(context.Background(), dst, "copy", bytes.NewReader(stream)); err == nil {
				t.Fatal("a bad stream was loaded")
			}
			if repos, _ := dst.ListRepos(context.Background()); len(repos) != 0 {
				t.Errorf("left repositories: %v", repos)
			}
		})
	}
}

func flipped(b []byte, at int) []byte {
	c := bytes.Clone(b)
	for i := at; i < at+64 && i < len(c); i++ {
		c[i] ^= 0x55
	}
	return c
}
