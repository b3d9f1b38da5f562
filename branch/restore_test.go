package branch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

func newRestoreService(t *testing.T) (*Service, kv.DB) {
	t.Helper()
	chunks, db, _ := castest.Open(t)
	return New(db, chunks, nil), db
}

// restoreOne restores a repository with one commit holding key "k".
func restoreOne(t *testing.T, s *Service, name string) (*Restore, manifest.CommitID) {
	t.Helper()
	ctx := context.Background()
	r, err := s.BeginRestore(ctx, name, RestoreOptions{Salt: []byte("0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(time.Now().UnixNano()) + uint64(time.Hour)
	vid := newVersionID(seq, 7)
	e := (&manifest.Entry{Size: 0, ETag: "e", VersionID: vid}).Encode()
	if err := r.Version(ctx, "k", vid, 42, e); err != nil {
		t.Fatal(err)
	}
	if err := r.Version(ctx, "k", vid, 42, e); err != nil {
		t.Fatalf("the same version twice: %v", err)
	}
	if err := r.Version(ctx, "k", vid, 43, e); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the same version with another writer: %v", err)
	}
	root, err := r.Tree().Apply(ctx, chunk.Hash{}, tree.SliceEdits([]tree.Edit{{Key: []byte("k"), Value: e}}))
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Commit(ctx, &manifest.Commit{Tree: root, Message: "m"}, &CommitInfo{Branch: 42, Seq: seq, Lineage: []LineageItem{{Branch: 42, MaxSeq: ^uint64(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Branch("main", id, manifest.CommitID{}, true, 1); err != nil {
		t.Fatal(err)
	}
	return r, id
}

func countKeys(t *testing.T, db kv.DB, prefix []byte) int {
	n := 0
	db.View(context.Background(), func(r kv.Reader) error {
		return r.Scan(kv.Prefix(prefix), func(_, _ []byte) error { n++; return nil })
	})
	return n
}

func TestRestorePublish(t *testing.T) {
	ctx := context.Background()
	s, _ := newRestoreService(t)
	r, id := restoreOne(t, s, "restored")
	if _, err := s.GetRepo(ctx, "restored"); !errors.Is(err, ErrNoSuchRepo) {
		t.Fatalf("visible before Publish: %v", err)
	}
	if _, err := r.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetBranch(ctx, "restored", "main")
	if err != nil || b.Head != id || !b.Protected {
		t.Fatalf("branch %+v %v", b, err)
	}
	e, _, err := s.GetVersion(ctx, "restored", "main", "k", newVersionIDForTest(t, s, "restored"))
	if err != nil || e.ETag != "e" {
		t.Fatalf("version of the restored entry: %v", err)
	}
	// A fork sees it; a new write sorts after it.
	if _, err := s.CreateBranch(ctx, "restored", "fork", "main"); err != nil {
		t.Fatal(err)
	}
	w, err := s.Put(ctx, "restored", "fork", "k", &manifest.Entry{ETag: "new"}, Condition{})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := s.ListVersions(ctx, "restored", "fork", VersionListOptions{MaxKeys: 10})
	if err != nil || len(vs.Versions) != 2 || vs.Versions[0].VersionID != w.VersionID || !vs.Versions[0].IsLatest {
		t.Fatalf("versions after a write on a fork: %+v %v", vs, err)
	}
	if _, err := s.BeginRestore(ctx, "restored", RestoreOptions{Salt: []byte("x")}); !errors.Is(err, ErrRepoExists) {
		t.Fatalf("restore over an existing repository: %v", err)
	}
}

// newVersionIDForTest returns the version ID of k on main.
func newVersionIDForTest(t *testing.T, s *Service, repo string) string {
	e, err := s.Get(context.Background(), repo, "main", "k")
	if err != nil {
		t.Fatal(err)
	}
	return e.VersionID
}

func TestRestoreAbortLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, db := newRestoreService(t)
	r, _ := restoreOne(t, s, "gone")
	id := r.rr.ID
	if err := r.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"V/", "K/", "C/", "B/", "CK/"} {
		if n := countKeys(t, db, u64([]byte(p), id)); n != 0 {
			t.Errorf("%s: %d keys left", p, n)
		}
	}
	if _, err := s.GetRepo(ctx, "gone"); !errors.Is(err, ErrNoSuchRepo) {
		t.Fatalf("an aborted restore is visible: %v", err)
	}
	// Garbage collection runs again after Abort.
	if _, err := s.Collect(ctx, GCOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRestorePublishRaceLosesCleanly(t *testing.T) {
	ctx := context.Background()
	s, db := newRestoreService(t)
	r, _ := restoreOne(t, s, "taken")
	// The name is taken while the restore runs (CreateRepo would wait for
	// the restore's hold on collection only if a collection waited too).
	done := make(chan error, 1)
	go func() { _, err := s.CreateRepo(ctx, "taken", CreateRepoOptions{}); done <- err }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx); !errors.Is(err, ErrRepoExists) {
		t.Fatalf("publish over a repository created meanwhile: %v", err)
	}
	if n := countKeys(t, db, u64([]byte("V/"), r.rr.ID)); n != 0 {
		t.Errorf("%d version records left", n)
	}
}

func TestPauseCollection(t *testing.T) {
	s, _ := newRestoreService(t)
	release := s.PauseCollection()
	done := make(chan struct{})
	go func() {
		s.Collect(context.Background(), GCOptions{})
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a collection ran while paused")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release()
	<-done
}
