package branch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

func tagsOf(e *manifest.Entry) string { return fmt.Sprint(e.Tags) }

// getVersion reads key@vid on br and fails the test on error.
func getVersion(t *testing.T, s *branch.Service, br, key, vid string) *manifest.Entry {
	t.Helper()
	e, _, err := s.GetVersion(context.Background(), "data", br, key, vid)
	if err != nil {
		t.Fatalf("%s@%s on %s: %v", key, vid, br, err)
	}
	return e
}

func setTags(t *testing.T, s *branch.Service, br, key, vid string, tags ...manifest.Pair) *manifest.Entry {
	t.Helper()
	e, err := s.SetTags(context.Background(), "data", br, key, vid, tags, branch.Writer{})
	if err != nil {
		t.Fatalf("tag %s@%s on %s: %v", key, vid, br, err)
	}
	return e
}

func commitAll(t *testing.T, s *branch.Service, br string) string {
	t.Helper()
	id, err := s.Commit(context.Background(), "data", br, branch.CommitOptions{Message: "c"})
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// TestTagsKeepTheVersion: tagging the current version, staged or
// committed, keeps its version ID and content; a commit records the
// change, and the commit before it keeps the old tags.
func TestTagsKeepTheVersion(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, s, "data", "main", "k", "e1")
	got := setTags(t, s, "main", "k", "", manifest.Pair{Name: "a", Value: "1"})
	if got.VersionID != v1.VersionID || got.ETag != "e1" {
		t.Fatalf("tagging made %+v from %+v", got, v1)
	}
	if e := getVersion(t, s, "main", "k", v1.VersionID); tagsOf(e) != "[{a 1}]" {
		t.Fatalf("staged version reads with tags %v", e.Tags)
	}
	first := commitAll(t, s, "main")

	got = setTags(t, s, "main", "k", v1.VersionID, manifest.Pair{Name: "b", Value: "2"})
	if got.VersionID != v1.VersionID {
		t.Fatalf("committed version retagged as %s", got.VersionID)
	}
	if e, _ := s.Get(ctx, "data", "main", "k"); tagsOf(e) != "[{b 2}]" || e.VersionID != v1.VersionID {
		t.Fatalf("current after retag: %+v", e)
	}
	if e := getVersion(t, s, "main", "k", v1.VersionID); tagsOf(e) != "[{b 2}]" {
		t.Fatalf("version read after retag: %v", e.Tags)
	}
	second := commitAll(t, s, "main")
	if e := getVersion(t, s, "main", "k", first); tagsOf(e) != "[{a 1}]" {
		t.Fatalf("the first commit changed: %v", e.Tags)
	}
	var changes []branch.Change
	err := s.Diff(ctx, "data", first, second, "", nil, func(c branch.Change) error { changes = append(changes, c); return nil })
	if err != nil || len(changes) != 1 || changes[0].Kind != branch.Modified {
		t.Fatalf("diff of a retag: %+v, %v", changes, err)
	}
	res, err := s.ListVersions(ctx, "data", "main", branch.VersionListOptions{MaxKeys: 100})
	if err != nil || len(res.Versions) != 1 {
		t.Fatalf("versions after retags: %+v, %v", res, err)
	}
}

// TestTagsOfHistoryAreImmutable: an older committed version, or a commit,
// cannot be retagged; an older version overwritten before any commit can.
func TestTagsOfHistoryAreImmutable(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, s, "data", "main", "k", "e1")
	id := commitAll(t, s, "main")
	v2 := put(t, s, "data", "main", "k", "e2")
	put(t, s, "data", "main", "k", "e3")
	for _, vid := range []string{v1.VersionID, id} {
		if _, err := s.SetTags(ctx, "data", "main", "k", vid, nil, branch.Writer{}); !errors.Is(err, branch.ErrImmutable) {
			t.Errorf("retag %s: %v, want ErrImmutable", vid, err)
		}
	}
	setTags(t, s, "main", "k", v2.VersionID, manifest.Pair{Name: "x", Value: "y"})
	if e := getVersion(t, s, "main", "k", v2.VersionID); tagsOf(e) != "[{x y}]" || e.ETag != "e2" {
		t.Fatalf("uncommitted older version: %+v", e)
	}
	if _, err := s.Delete(ctx, "data", "main", "k", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTags(ctx, "data", "main", "k", "", nil, branch.Writer{}); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Fatalf("retag a deleted key: %v", err)
	}
}

// TestTagsStayOnTheirBranch: tagging a version a fork inherited changes
// the fork only; its source keeps the version as it was.
func TestTagsStayOnTheirBranch(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, s, "data", "main", "k", "e1")
	commitAll(t, s, "main")
	if _, err := s.CreateBranch(ctx, "data", "run", "main"); err != nil {
		t.Fatal(err)
	}
	setTags(t, s, "run", "k", v1.VersionID, manifest.Pair{Name: "seen", Value: "run"})
	if e := getVersion(t, s, "run", "k", v1.VersionID); tagsOf(e) != "[{seen run}]" {
		t.Fatalf("fork's version: %v", e.Tags)
	}
	commitAll(t, s, "run")
	if e := getVersion(t, s, "main", "k", v1.VersionID); len(e.Tags) != 0 {
		t.Fatalf("main sees the fork's tags: %v", e.Tags)
	}
	if e, _ := s.Get(ctx, "data", "main", "k"); len(e.Tags) != 0 {
		t.Fatalf("main's current sees the fork's tags: %v", e.Tags)
	}
	if e := getVersion(t, s, "run", "k", v1.VersionID); tagsOf(e) != "[{seen run}]" {
		t.Fatalf("fork's version after commit: %v", e.Tags)
	}
}

func TestRepoConfig(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RepoConfig(ctx, "data", "tagging"); !errors.Is(err, branch.ErrNoSuchConfig) || !errors.Is(err, branch.ErrNotFound) {
		t.Fatalf("missing document: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetRepoConfig(ctx, "data", "tagging", []byte("<Tagging/>")))
	must(s.SetRepoConfig(ctx, "data", "cors", []byte("c")))
	must(s.SetRepoConfig(ctx, "data", "tagging", []byte("<Tagging>2</Tagging>")))
	if b, err := s.RepoConfig(ctx, "data", "tagging"); err != nil || string(b) != "<Tagging>2</Tagging>" {
		t.Fatalf("document: %q, %v", b, err)
	}
	must(s.DeleteRepoConfig(ctx, "data", "tagging"))
	must(s.DeleteRepoConfig(ctx, "data", "tagging"))
	if _, err := s.RepoConfig(ctx, "data", "tagging"); !errors.Is(err, branch.ErrNoSuchConfig) {
		t.Fatalf("deleted document: %v", err)
	}
	if b, err := s.RepoConfig(ctx, "data", "cors"); err != nil || string(b) != "c" {
		t.Fatalf("other document: %q, %v", b, err)
	}
	for _, name := range []string{"", "Tagging", "9x", "a/b", "x\x00", "abcdefghijklmnopqrstuvwxyz0123456"} {
		if err := s.SetRepoConfig(ctx, "data", name, nil); !errors.Is(err, branch.ErrInvalid) {
			t.Errorf("name %q: %v, want ErrInvalid", name, err)
		}
	}
	if err := s.SetRepoConfig(ctx, "data", "big", make([]byte, branch.MaxRepoConfig+1)); !errors.Is(err, branch.ErrInvalid) {
		t.Errorf("oversized document: %v", err)
	}
	if err := s.SetRepoConfig(ctx, "nope", "tagging", nil); !errors.Is(err, branch.ErrNoSuchRepo) {
		t.Errorf("missing repository: %v", err)
	}
}
