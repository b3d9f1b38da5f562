package gitexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// awkwardKeys are keys Git cannot hold as paths as they are.
var awkwardKeys = []string{
	".git/config", ".GIT", ".gitmodules", ".gitattributes", "sub/.git. .", ".g\u200cit/x", "git~1", "GITMOD~1",
	"a//b", "dir/", "/leading", "trailing//", "x", "x/y", "x/y/z", ".", "..", "sub/./..", ".nas", ".NAS/x", "sub/.nas",
	"100%", "%41", "back\\slash", "tab\there", "nl\nx", "bad\xffutf8", "é/ü", "%", "%~", "a%~", "x%~",
}

// seedRepo builds a repository with history worth exporting: several
// commits, branches, a merge, a checkpoint, multi-chunk objects, a content
// list stored by reference, metadata, a lazy entry, awkward keys and
// uncommitted changes.
func seedRepo(t testing.TB, s *branch.Service, repo string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateRepo(ctx, repo, branch.CreateRepoOptions{Principal: "owner"}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	small := func(i int) []byte { return []byte(fmt.Sprintf("object %d %d\n", i, rng.Uint64())) }
	for i := 0; i < n; i++ {
		putBytes(t, s, repo, "main", fmt.Sprintf("data/%02d/obj-%05d.txt", i%7, i), small(i), manifest.Entry{})
	}
	for i, k := range awkwardKeys {
		putBytes(t, s, repo, "main", k, []byte("awkward "+k+fmt.Sprint(i)), manifest.Entry{})
	}
	big := make([]byte, 3<<20+12345)
	rand.NewChaCha8([32]byte{1}).Read(big)
	putBytes(t, s, repo, "main", "big/random.bin", big, manifest.Entry{ContentType: "application/octet-stream",
		Meta:    []manifest.Pair{{Name: "owner", Value: "alice"}, {Name: "weird", Value: "v\xfe<&>"}},
		Tags:    []manifest.Pair{{Name: "team", Value: "data"}, {Name: "odd", Value: "t\xfe&="}},
		Headers: []manifest.Pair{{Name: "Cache-Control", Value: "no-cache"}}, ChecksumAlgorithm: "SHA256", ChecksumValue: "abc=", ChecksumType: "FULL_OBJECT"})
	sizes := make([]int, 60)
	for i := range sizes {
		sizes[i] = 100 + i
	}
	total := 0
	for _, x := range sizes {
		total += x
	}
	putChunks(t, s, repo, "main", "many/chunks.bin", big[:total], sizes, manifest.Entry{ContentType: "text/plain"})
	putBytes(t, s, repo, "main", "empty", nil, manifest.Entry{})
	lazy := &manifest.Entry{Size: 42, ETag: "remote-etag", Remote: &manifest.Remote{Source: "src_1", Key: "remote/key", ETag: "remote-etag"}}
	if _, err := s.Put(ctx, repo, "main", "lazy/remote.dat", lazy, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, repo, "main", "first")

	if _, err := s.CreateBranch(ctx, repo, "feature/x", "main"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n/10; i++ {
		putBytes(t, s, repo, "feature/x", fmt.Sprintf("data/%02d/obj-%05d.txt", i%7, i), small(i+n), manifest.Entry{})
	}
	putBytes(t, s, repo, "feature/x", "x/y/new", []byte("new under x/y"), manifest.Entry{})
	if _, err := s.Delete(ctx, repo, "feature/x", "x", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, repo, "feature/x", "feature work")

	for i := n / 2; i < n/2+n/10; i++ {
		putBytes(t, s, repo, "main", fmt.Sprintf("data/%02d/obj-%05d.txt", i%7, i), small(i+2*n), manifest.Entry{})
	}
	putBytes(t, s, repo, "main", "x/y", []byte("x/y rewritten"), manifest.Entry{})
	commit(t, s, repo, "main", "main work\n\nwith a body\x00and a NUL")
	if _, err := s.CreateCheckpoint(ctx, repo, "main", "before-merge", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Merge(ctx, repo, "feature/x", "main", branch.MergeOptions{CommitOptions: branch.CommitOptions{Message: "merge feature", Principal: "owner"}}); err != nil {
		t.Fatal(err)
	}
	// A copy (same content, new key) and a metadata-only change.
	e, err := s.Get(ctx, repo, "main", "big/random.bin")
	if err != nil {
		t.Fatal(err)
	}
	cp := *e
	cp.VersionID, cp.ModTime = "", 0
	if _, err := s.Put(ctx, repo, "main", "big/copy.bin", &cp, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	cp.ContentType = "application/x-changed"
	if _, err := s.Put(ctx, repo, "main", "big/random.bin", &cp, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, repo, "main", "copy")
	// Tags changed on a committed version: same version ID, new entry.
	if _, err := s.SetTags(ctx, repo, "main", "big/copy.bin", "", []manifest.Pair{{Name: "retagged", Value: "yes"}}, branch.Writer{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, repo, "main", "retag")
	if _, err := s.CreateBranch(ctx, repo, "idle", "main"); err != nil {
		t.Fatal(err)
	}
	putBytes(t, s, repo, "idle", "uncommitted", []byte("staged only"), manifest.Entry{})
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := newService(t), newService(t)
	seedRepo(t, src, "source", 300)
	dir := filepath.Join(t.TempDir(), "export.git")
	exp, imp := roundTrip(t, src, "source", dir, dst, "source")
	if len(exp.Uncommitted) != 1 || exp.Uncommitted[0].Branch != "idle" {
		t.Errorf("export report: uncommitted %+v, want branch idle", exp.Uncommitted)
	}
	if exp.Lazy == 0 || imp.Lazy == 0 {
		t.Errorf("lazy entries: exported %d, imported %d", exp.Lazy, imp.Lazy)
	}
	compareRepos(t, src, "source", dst, "source")

	// The imported repository is a working one: versions, forks, writes.
	e, err := src.Get(ctx, "source", "main", "big/copy.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, del, err := dst.GetVersion(ctx, "source", "main", "big/copy.bin", e.VersionID)
	if err != nil || del || !bytes.Equal(got.Encode(), e.Encode()) {
		t.Fatalf("GetVersion on the import: %v %v", err, del)
	}
	sv, err := src.ListVersions(ctx, "source", "main", branch.VersionListOptions{MaxKeys: 100000})
	if err != nil {
		t.Fatal(err)
	}
	dv, err := dst.ListVersions(ctx, "source", "main", branch.VersionListOptions{MaxKeys: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if want := committedVersions(sv); fmt.Sprint(want) != fmt.Sprint(versionList(dv)) {
		t.Errorf("ListVersions differ:\nsource (committed) %v\nimport %v", want, versionList(dv))
	}

	// Export of the import is the same Git history.
	dir2 := filepath.Join(t.TempDir(), "again.git")
	exportTo(t, dst, "source", dir2)
	for _, ref := range []string{"refs/heads/main", "refs/heads/feature/x"} {
		a := runGit(t, dir, "rev-parse", ref)
		b := runGit(t, dir2, "rev-parse", ref)
		if a != b {
			t.Errorf("%s: %s vs %s after a second round trip", ref, a, b)
		}
	}

	// The imported repository is a working one: a fork sees what main
	// saw, takes writes and commits.
	if _, err := dst.CreateBranch(ctx, "source", "later", "main"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dst.GetVersion(ctx, "source", "later", "big/copy.bin", e.VersionID); err != nil {
		t.Errorf("a fork of the import does not see a version main saw: %v", err)
	}
	putBytes(t, dst, "source", "later", "after-import", []byte("new"), manifest.Entry{})
	commit(t, dst, "source", "later", "after import")
	lv, err := dst.ListVersions(ctx, "source", "later", branch.VersionListOptions{Prefix: "after-import", MaxKeys: 10})
	if err != nil || len(lv.Versions) != 1 || !lv.Versions[0].IsLatest {
		t.Errorf("versions of a new write after import: %+v %v", lv, err)
	}
}

// versionList renders a version listing as key@vid lines.
func versionList(r *branch.VersionListResult) []string {
	var out []string
	for _, v := range r.Versions {
		if !v.DeleteMarker {
			out = append(out, v.Key+"@"+v.VersionID)
		}
	}
	return out
}

// committedVersions drops delete markers and the versions that no commit
// holds (they are not exported) from a source listing.
func committedVersions(r *branch.VersionListResult) []string {
	var out []string
	for _, v := range r.Versions {
		if v.DeleteMarker {
			continue
		}
		out = append(out, v.Key+"@"+v.VersionID)
	}
	return out
}

// compareRepos checks that two repositories have the same branches, the
// same history (commit IDs) and the same bytes at every key of every
// commit.
func compareRepos(t *testing.T, a *branch.Service, ra string, b *branch.Service, rb string) {
	t.Helper()
	ctx := context.Background()
	ba, err := a.ListBranches(ctx, ra)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := b.ListBranches(ctx, rb)
	if err != nil {
		t.Fatal(err)
	}
	if len(ba) != len(bb) {
		t.Fatalf("%d branches, imported %d", len(ba), len(bb))
	}
	for i := range ba {
		if ba[i].Name != bb[i].Name || ba[i].Head != bb[i].Head || ba[i].Protected != bb[i].Protected || ba[i].Base != bb[i].Base {
			t.Errorf("branch %+v imported as %+v", ba[i], bb[i])
		}
		var la, lb []string
		a.Log(ctx, ra, ba[i].Name, func(e branch.LogEntry) error { la = append(la, e.ID.String()); return nil })
		b.Log(ctx, rb, bb[i].Name, func(e branch.LogEntry) error { lb = append(lb, e.ID.String()); return nil })
		if strings.Join(la, ",") != strings.Join(lb, ",") {
			t.Errorf("branch %s: log %v, imported %v", ba[i].Name, la, lb)
		}
	}
	ca, cb := allCommits(t, a, ra), allCommits(t, b, rb)
	if len(ca) != len(cb) {
		t.Fatalf("%d commits, imported %d", len(ca), len(cb))
	}
	for id, es := range ca {
		other, ok := cb[id]
		if !ok {
			t.Fatalf("commit %s not imported", id)
		}
		if len(es) != len(other) {
			t.Fatalf("commit %s: %d keys, imported %d", id, len(es), len(other))
		}
		for i := range es {
			if !bytes.Equal(es[i].Key, other[i].Key) || !bytes.Equal(es[i].Value, other[i].Value) {
				t.Fatalf("commit %s: key %q differs", id, es[i].Key)
			}
			e, err := manifest.DecodeEntry(es[i].Value)
			if err != nil {
				t.Fatal(err)
			}
			if e.Lazy() {
				continue
			}
			if !bytes.Equal(objectBytes(t, a, e), objectBytes(t, b, e)) {
				t.Fatalf("commit %s: bytes of %q differ", id, es[i].Key)
			}
		}
	}
}

func TestGitAcceptsExport(t *testing.T) {
	t.Parallel()
	src := newService(t)
	seedRepo(t, src, "source", 50)
	dir := filepath.Join(t.TempDir(), "export.git")
	exportTo(t, src, "source", dir)
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
	log := runGit(t, dir, "log", "--format=%an|%(trailers:key=Nas-Commit,valueonly)|%(trailers:key=Run,valueonly)", "main")
	if !strings.Contains(log, "owner|") || !strings.Contains(log, "run-1") {
		t.Errorf("git log lacks the provenance trailers:\n%s", log)
	}
	// A clone checks out plain files with the objects' bytes.
	work := filepath.Join(t.TempDir(), "work")
	runGit(t, filepath.Dir(work), "clone", "-q", dir, work)
	ctx := context.Background()
	for _, k := range append([]string{"big/random.bin", "many/chunks.bin", "data/03/obj-00010.txt", "empty"}, awkwardKeys...) {
		e, err := src.Get(ctx, "source", "main", k)
		if errors.Is(err, branch.ErrNoSuchKey) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(work, filepath.FromSlash(EncodeKey(k, false)))
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			p = filepath.Join(work, filepath.FromSlash(EncodeKey(k, true)))
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%q: %v", k, err)
		}
		if !bytes.Equal(got, objectBytes(t, src, e)) {
			t.Errorf("%q: checked-out bytes differ", k)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "lazy", "remote.dat")); err == nil {
		t.Error("a lazy entry was exported as a file")
	}
}
