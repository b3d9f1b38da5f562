package gitexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// newService opens a branch service on a real Badger and chunk directory.
func newService(t testing.TB) *branch.Service {
	t.Helper()
	chunks, db, _ := castest.Open(t)
	return branch.New(db, chunks, nil)
}

// putBytes stores data as the object key on a branch, chunked by the
// store's own chunker, with e's metadata.
func putBytes(t testing.TB, s *branch.Service, repo, br, key string, data []byte, e manifest.Entry) *manifest.Entry {
	t.Helper()
	ctx := context.Background()
	u := s.Chunks().NewUpload()
	defer u.Close()
	refs, n, err := u.Ingest(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return putRefs(t, s, u, repo, br, key, refs, n, e)
}

// putChunks stores data cut at the given sizes (the store accepts any
// boundaries; export must keep them).
func putChunks(t testing.TB, s *branch.Service, repo, br, key string, data []byte, sizes []int, e manifest.Entry) *manifest.Entry {
	t.Helper()
	ctx := context.Background()
	u := s.Chunks().NewUpload()
	defer u.Close()
	var refs []chunk.Ref
	off := 0
	for _, n := range sizes {
		r, err := u.Put(ctx, data[off:off+n])
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
		off += n
	}
	return putRefs(t, s, u, repo, br, key, refs, int64(off), e)
}

func putRefs(t testing.TB, s *branch.Service, u *cas.Upload, repo, br, key string, refs []chunk.Ref, n int64, e manifest.Entry) *manifest.Entry {
	t.Helper()
	ctx := context.Background()
	if err := u.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	e.Size = n
	if e.ETag == "" {
		e.ETag = fmt.Sprintf("%032x", rand.Uint64())
	}
	h, list := e.SetContent(&manifest.Content{Chunks: refs})
	out, err := s.Put(ctx, repo, br, key, &e, branch.Condition{}, u, branch.ContentRecord{Hash: h, Data: list})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return out
}

func commit(t testing.TB, s *branch.Service, repo, br, msg string) manifest.CommitID {
	t.Helper()
	id, err := s.Commit(context.Background(), repo, br, branch.CommitOptions{Message: msg, Principal: "owner", Run: "run-1",
		Lease: "lease-1", OnBehalfOf: "alice", Extra: []manifest.Pair{{Name: "tool", Value: "test"}}})
	if err != nil {
		t.Fatalf("commit %s: %v", br, err)
	}
	return id
}

// roundTrip exports repo of src to a Git repository at dir and imports it
// as name into dst.
func roundTrip(t testing.TB, src *branch.Service, repo, dir string, dst *branch.Service, name string) (*apiv1.Report, *apiv1.Report) {
	t.Helper()
	ctx := context.Background()
	exp := exportTo(t, src, repo, dir)
	pr, pw := io.Pipe()
	go func() {
		_, err := ReadGit(ctx, dir, pw)
		pw.CloseWithError(err)
	}()
	imp, err := Load(ctx, dst, name, pr)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return exp, imp
}

func exportTo(t testing.TB, src *branch.Service, repo, dir string) *apiv1.Report {
	t.Helper()
	ctx := context.Background()
	pr, pw := io.Pipe()
	go func() {
		_, err := Dump(ctx, src, repo, pw)
		pw.CloseWithError(err)
	}()
	rep, err := WriteGit(ctx, pr, dir)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return rep
}

// importFrom imports the Git repository at dir as name.
func importFrom(dst *branch.Service, dir, name string) error {
	ctx := context.Background()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		_, err := ReadGit(ctx, dir, pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	_, err := Load(ctx, dst, name, pr)
	pr.CloseWithError(errors.New("import ended"))
	if rerr := <-errc; rerr != nil && err != nil && !errors.Is(err, rerr) {
		return errors.Join(rerr, err)
	} else if rerr != nil && err == nil {
		return rerr
	}
	return err
}

// runGit runs git in dir and returns its output.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// allCommits returns every commit reachable from the branches of repo,
// with the entries of its tree.
func allCommits(t testing.TB, s *branch.Service, repo string) map[manifest.CommitID][]tree.Entry {
	t.Helper()
	ctx := context.Background()
	h, st, err := s.OpenHistory(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out := map[manifest.CommitID][]tree.Entry{}
	var queue []manifest.CommitID
	for _, b := range st.Branches {
		queue = append(queue, b.Head)
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if _, ok := out[id]; ok {
			continue
		}
		c, err := h.Commit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var es []tree.Entry
		it := h.Tree().NewIterator(c.Tree, nil, nil)
		for ok := it.Seek(ctx, nil); ok; ok = it.Next(ctx) {
			es = append(es, tree.Entry{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[id] = es
		queue = append(queue, c.Parents...)
	}
	return out
}

// objectBytes reads an entry's bytes from a service's chunk store.
func objectBytes(t testing.TB, s *branch.Service, e *manifest.Entry) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := s.Manifest().Content(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range c.Chunks {
		if err := s.Chunks().Read(ctx, &b, r.Hash, 0, int64(r.Size)); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}
