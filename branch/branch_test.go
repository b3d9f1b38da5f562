package branch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/manifest"
)

func newService(t testing.TB) *branch.Service {
	t.Helper()
	chunks, db, _ := castest.Open(t)
	return branch.New(db, chunks, nil)
}

func put(t testing.TB, s *branch.Service, repo, br, key, etag string) *manifest.Entry {
	t.Helper()
	e, err := s.Put(context.Background(), repo, br, key, &manifest.Entry{Size: 1, ETag: etag}, branch.Condition{})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return e
}

func keys(t testing.TB, s *branch.Service, repo, br string) []string {
	t.Helper()
	res, err := s.List(context.Background(), repo, br, branch.ListOptions{MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Key)
	}
	return out
}

func TestForkIsolationAndCommit(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "data", "main", "a", "1")
	put(t, s, "data", "main", "b/c", "2")
	if _, err := s.Commit(ctx, "data", "main", branch.CommitOptions{Message: "first"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "data", "main", "staged", "3")
	if _, err := s.CreateBranch(ctx, "data", "exp/run-1", "main"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(t, s, "data", "exp/run-1")); got != "[a b/c]" {
		t.Fatalf("fork sees %s, want committed keys only", got)
	}
	put(t, s, "data", "exp/run-1", "new", "4")
	if _, err := s.Delete(ctx, "data", "exp/run-1", "a", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(t, s, "data", "exp/run-1")); got != "[b/c new]" {
		t.Fatalf("fork: %s", got)
	}
	if got := fmt.Sprint(keys(t, s, "data", "main")); got != "[a b/c staged]" {
		t.Fatalf("main changed by fork writes: %s", got)
	}
	var changes []string
	err := s.Changes(ctx, "data", "exp/run-1", "", func(c branch.Change) error {
		changes = append(changes, string(c.Kind)+" "+c.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(changes); got != "[D a A new]" {
		t.Fatalf("changes: %s", got)
	}
	if _, err := s.Commit(ctx, "data", "exp/run-1", branch.CommitOptions{Message: "run"}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(t, s, "data", "exp/run-1")); got != "[b/c new]" {
		t.Fatalf("after commit: %s", got)
	}
	var diff []string
	err = s.Diff(ctx, "data", "main", "exp/run-1", "", nil, func(c branch.Change) error {
		diff = append(diff, string(c.Kind)+" "+c.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(diff); got != "[D a A new]" {
		t.Fatalf("diff: %s", got)
	}
}

func TestProtectedRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "prot", branch.CreateRepoOptions{Protected: true}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "prot", "main", "k", &manifest.Entry{}, branch.Condition{})
	if !errors.Is(err, branch.ErrProtected) {
		t.Fatalf("put on protected: %v", err)
	}
	if _, err := s.Commit(ctx, "prot", "main", branch.CommitOptions{AllowEmpty: true}); !errors.Is(err, branch.ErrProtected) {
		t.Fatalf("commit on protected: %v", err)
	}
}

func TestVersions(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "ver", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, s, "ver", "main", "k", "1")
	c1, err := s.Commit(ctx, "ver", "main", branch.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := put(t, s, "ver", "main", "k", "2")
	v3 := put(t, s, "ver", "main", "k", "3")
	for _, want := range []*manifest.Entry{v1, v2, v3} {
		e, dm, err := s.GetVersion(ctx, "ver", "main", "k", want.VersionID)
		if err != nil || dm || e.ETag != want.ETag {
			t.Fatalf("version %s: %v %v %+v", want.VersionID, err, dm, e)
		}
	}
	e, _, err := s.GetVersion(ctx, "ver", "main", "k", c1.String())
	if err != nil || e.ETag != "1" {
		t.Fatalf("as of commit: %v %+v", err, e)
	}
	res, err := s.ListVersions(ctx, "ver", "main", branch.VersionListOptions{MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) != 3 || !res.Versions[0].IsLatest || res.Versions[0].VersionID != v3.VersionID || res.Versions[1].IsLatest {
		t.Fatalf("versions: %+v", res.Versions)
	}
	// Older, never-committed version: forgotten. Older committed: refused.
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", v2.VersionID, branch.Condition{}); err != nil {
		t.Fatalf("delete staged old version: %v", err)
	}
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", v1.VersionID, branch.Condition{}); !errors.Is(err, branch.ErrImmutable) {
		t.Fatalf("delete committed old version: %v", err)
	}
	// The staged current version: forgotten, the committed one is
	// current again (S3: the previous version becomes current).
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", v3.VersionID, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, "ver", "main", "k"); err != nil || e.VersionID != v1.VersionID {
		t.Fatalf("after deleting the staged current version: %v %+v, want %s", err, e, v1.VersionID)
	}
	// A staged delete marker: deleting it undeletes the key.
	del, err := s.Delete(ctx, "ver", "main", "k", branch.Condition{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", del.VersionID, branch.Condition{}); err != nil {
		t.Fatalf("delete staged marker: %v", err)
	}
	if e, err := s.Get(ctx, "ver", "main", "k"); err != nil || e.VersionID != v1.VersionID {
		t.Fatalf("after deleting the marker: %v %+v", err, e)
	}
	// The committed current version: removed as by a DELETE; once that
	// marker is committed it is history too.
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", v1.VersionID, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "ver", "main", "k"); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Fatalf("committed current version deleted but key still there: %v", err)
	}
	if _, err := s.Commit(ctx, "ver", "main", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = s.ListVersions(ctx, "ver", "main", branch.VersionListOptions{MaxKeys: 100})
	if err != nil || len(res.Versions) != 2 || !res.Versions[0].DeleteMarker {
		t.Fatalf("versions after commit: %v %+v", err, res)
	}
	if _, err := s.DeleteVersion(ctx, "ver", "main", "k", res.Versions[0].VersionID, branch.Condition{}); !errors.Is(err, branch.ErrImmutable) {
		t.Fatalf("delete committed marker: %v", err)
	}
	// A new key's only staged version: nothing is left, not even a marker.
	only := put(t, s, "ver", "main", "new", "x")
	if _, err := s.DeleteVersion(ctx, "ver", "main", "new", only.VersionID, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	res, err = s.ListVersions(ctx, "ver", "main", branch.VersionListOptions{Prefix: "new", MaxKeys: 100})
	if err != nil || len(res.Versions) != 0 {
		t.Fatalf("versions of a forgotten new key: %v %+v", err, res)
	}
	if _, err := s.Get(ctx, "ver", "main", "new"); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Fatalf("forgotten new key still there: %v", err)
	}
	if err := s.DeleteRepo(ctx, "ver"); err != nil {
		t.Fatalf("delete emptied repo: %v", err)
	}
}

// TestDiffSeeksFilterRanges: a filtered diff visits only its ranges'
// keys, so changes outside them (a lease's hidden keys) are skipped by
// seeking, never looked at one by one.
func TestDiffSeeksFilterRanges(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	if _, err := s.CreateRepo(ctx, "seek", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	from, err := s.Commit(ctx, "seek", "main", branch.CommitOptions{AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	var entries []branch.ImportEntry
	for i := 0; i < 3000; i++ {
		entries = append(entries, branch.ImportEntry{Key: fmt.Sprintf("hidden/%05d", i), Entry: &manifest.Entry{Size: 1, ETag: "h"}})
	}
	for _, k := range []string{"vis/a", "vis/b", "zzz"} {
		entries = append(entries, branch.ImportEntry{Key: k, Entry: &manifest.Entry{Size: 1, ETag: "v"}})
	}
	if err := branch.StageBulk(ctx, s, "seek", "main", entries); err != nil {
		t.Fatal(err)
	}
	to, err := s.Commit(ctx, "seek", "main", branch.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var asked, got []string
	f := &branch.Filter{Ranges: []branch.KeyRange{{Start: "vis/", End: "vis0"}},
		Match: func(k string) bool { asked = append(asked, k); return true }}
	err = s.Diff(ctx, "seek", from.String(), to.String(), "", f, func(c branch.Change) error {
		got = append(got, c.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[vis/a vis/b]" || len(asked) != 2 {
		t.Fatalf("diff gave %v after asking about %d keys (want 2: the hidden ones are never visited)", got, len(asked))
	}
	// Resuming after a cursor inside the range.
	got = nil
	if err := s.Diff(ctx, "seek", from.String(), to.String(), "vis/a", f, func(c branch.Change) error {
		got = append(got, c.Key)
		return nil
	}); err != nil || fmt.Sprint(got) != "[vis/b]" {
		t.Fatalf("after vis/a: %v %v", got, err)
	}
}
