package branch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
)

func importSeq(ies ...branch.ImportEntry) func(func(branch.ImportEntry, error) bool) {
	return func(yield func(branch.ImportEntry, error) bool) {
		for _, ie := range ies {
			if !yield(ie, nil) {
				return
			}
		}
	}
}

func lazy(src, key, etag string) *manifest.Entry {
	return &manifest.Entry{Size: 3, ETag: etag, Remote: &manifest.Remote{Source: src, Key: key, ETag: etag}}
}

// ImportWith: deletes, and the owner's explicit way onto a protected branch.
func TestImportWithDeletesAndProtection(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	if _, err := s.CreateRepo(ctx, "imp", branch.CreateRepoOptions{Protected: true}); err != nil {
		t.Fatal(err)
	}
	seq := importSeq(branch.ImportEntry{Key: "d/a", Entry: lazy("s", "a", "e1")}, branch.ImportEntry{Key: "d/b", Entry: lazy("s", "b", "e2")})
	if _, err := s.Import(ctx, "imp", "main", seq, branch.CommitOptions{}); !errors.Is(err, branch.ErrProtected) {
		t.Fatalf("plain import into a protected branch: %v", err)
	}
	base, err := s.ImportWith(ctx, "imp", "main", seq, branch.ImportOptions{AllowProtected: true, CommitOptions: branch.CommitOptions{Message: "attach"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, "imp", "main"); !slices.Equal(got, []string{"d/a", "d/b"}) {
		t.Fatalf("keys %q", got)
	}
	e, err := s.Get(ctx, "imp", "main", "d/a")
	if err != nil || !e.Lazy() || e.Remote.ETag != "e1" || e.VersionID == "" {
		t.Fatalf("imported entry: %+v, %v", e, err)
	}
	head, err := s.ImportWith(ctx, "imp", "main", importSeq(branch.ImportEntry{Key: "d/a", Delete: true},
		branch.ImportEntry{Key: "d/b", Entry: lazy("s", "b", "e3")}), branch.ImportOptions{AllowProtected: true})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	err = s.Diff(ctx, "imp", base.String(), head.String(), "", nil, func(c branch.Change) error {
		changes = append(changes, string(c.Kind)+" "+c.Key)
		return nil
	})
	if err != nil || strings.Join(changes, ",") != "D d/a,M d/b" {
		t.Fatalf("diff: %q, %v", changes, err)
	}
	// The delete is a version (a delete marker), as a DELETE would make.
	vs, err := s.ListVersions(ctx, "imp", "main", branch.VersionListOptions{Prefix: "d/a", MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	markers := 0
	for _, v := range vs.Versions {
		if v.DeleteMarker {
			markers++
		}
	}
	if markers != 1 {
		t.Fatalf("%d delete markers for d/a", markers)
	}
	rep, err := s.Check(ctx)
	if err != nil || !rep.OK() || rep.Lazy == 0 {
		t.Fatalf("fsck: %+v, %v", rep, err)
	}
}

// roots is a RootSource naming a fixed set of chunks.
type roots struct {
	mu sync.Mutex
	hs []chunk.Hash
}

func (r *roots) MarkRoots(_ context.Context, mark func(chunk.Hash)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hs {
		mark(h)
	}
	return nil
}

func TestExternalRootsKeepChunks(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	if _, err := s.CreateRepo(ctx, "ext", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randData(5, 300<<10)
	e := putData(t, s, "ext", "main", "k", data)
	c, err := s.Manifest().Content(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	rs := &roots{hs: []chunk.Hash{c.Chunks[0].Hash}}
	s.AddRoots(rs)
	if _, err := s.Delete(ctx, "ext", "main", "k", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	gc := branch.GCOptions{Retention: 1, UploadExpiry: 1}
	if _, err := s.Collect(ctx, gc); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Chunks().Has(ctx, c.Chunks[0].Hash); !ok || err != nil {
		t.Fatalf("a chunk named by a root source was swept: %v", err)
	}
	rep, err := s.Check(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("fsck: %+v, %v", rep, err)
	}
	// A root naming a chunk that is not there is a problem for fsck.
	rs.mu.Lock()
	rs.hs = append(rs.hs, chunk.Sum([]byte("never stored")))
	rs.mu.Unlock()
	rep, err = s.Check(ctx)
	if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "external root") {
		t.Fatalf("fsck with a dangling root: %+v, %v", rep.Problems, err)
	}
	// Without the root the chunk goes.
	rs.mu.Lock()
	rs.hs = nil
	rs.mu.Unlock()
	if _, err := s.Collect(ctx, gc); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Chunks().Has(ctx, c.Chunks[0].Hash); ok {
		t.Fatal("an unreferenced chunk survived")
	}
}
