package branch_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/manifest"
)

// TestForgetHistoryLeavesNoByte: a key forgotten with its history is gone
// from every commit, checkpoint, deleted branch and version, and after a
// collection no file under the data directory holds a byte of any of its
// versions; everything else reads as before.
func TestForgetHistoryLeavesNoByte(t *testing.T) {
	ctx := context.Background()
	chunks, db, dir := castest.Open(t)
	s := branch.New(db, chunks, nil)
	if _, err := s.CreateRepo(ctx, "crm", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := randData(40, 2<<20)
	doomed := [][]byte{randData(41, 300<<10), randData(42, 1<<20), randData(43, 400<<10)}
	putData(t, s, "crm", "main", "keep.bin", keep)
	putData(t, s, "crm", "main", "crm/acme.bin", doomed[0])
	old := commit(t, s, "main")
	if _, err := s.CreateCheckpoint(ctx, "crm", "main", "before", ""); err != nil {
		t.Fatal(err)
	}
	putData(t, s, "crm", "main", "crm/acme.bin", doomed[1])
	commit(t, s, "main")
	if _, err := s.CreateBranch(ctx, "crm", "exp", "main"); err != nil {
		t.Fatal(err)
	}
	putData(t, s, "crm", "exp", "crm/acme.bin", doomed[2])
	commit(t, s, "exp")
	if err := s.DeleteBranch(ctx, "crm", "exp"); err != nil {
		t.Fatal(err)
	}
	for _, d := range doomed {
		if castest.FindOnDisk(t, dir, d[1000:1064]) == "" {
			t.Fatal("the probe does not find what is there: the test would prove nothing")
		}
	}

	if _, _, err := s.ForgetKeys(ctx, "crm", "main", []string{"crm/acme.bin"}, branch.CommitOptions{Message: "forget"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.ForgetHistory(ctx, "crm", func(k string) bool { return k == "crm/acme.bin" }, branch.RewriteOptions{ID: "fgt_test"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Keys, []string{"crm/acme.bin"}) || st.Changed < 3 || st.Versions != 3 || st.Repointed < 3 {
		t.Fatalf("rewrite stats %+v", st)
	}
	if _, err := s.Collect(ctx, branch.GCOptions{Retention: 100 * 365 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i, d := range doomed {
		if p := castest.FindOnDisk(t, dir, d[1000:1064]); p != "" {
			t.Errorf("version %d of the forgotten key is still in %s", i+1, p)
		}
	}
	checkForgotten(t, s, old)
	e, err := s.Get(ctx, "crm", "main", "keep.bin")
	if err != nil || !bytes.Equal(readData(t, s, e), keep) {
		t.Fatalf("keep.bin after the rewrite: %v", err)
	}
	fsck(t, s)
}

// checkForgotten checks that no view of crm still names crm/acme.bin: the
// checkpoint, the restored deleted branch, the versions, the old commit.
func checkForgotten(t *testing.T, s *branch.Service, old manifest.CommitID) {
	t.Helper()
	ctx := context.Background()
	cps, err := s.ListCheckpoints(ctx, "crm", "main")
	if err != nil || len(cps) != 1 {
		t.Fatalf("checkpoints %v %v", cps, err)
	}
	if _, err := s.GetAt(ctx, "crm", cps[0].Commit, "crm/acme.bin"); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Fatalf("the checkpoint still holds the key: %v", err)
	}
	if _, err := s.GetAt(ctx, "crm", cps[0].Commit, "keep.bin"); err != nil {
		t.Fatalf("the checkpoint lost keep.bin: %v", err)
	}
	if _, err := s.GetAt(ctx, "crm", old, "keep.bin"); err == nil {
		t.Fatal("the old commit still resolves after the collection")
	}
	if _, err := s.RestoreBranch(ctx, "crm", "exp", ""); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, "crm", "exp"); !slices.Equal(got, []string{"keep.bin"}) {
		t.Fatalf("the restored deleted branch holds %v", got)
	}
	vs, err := s.ListVersions(ctx, "crm", "main", branch.VersionListOptions{Prefix: "crm/"})
	if err != nil || len(vs.Versions) != 0 {
		t.Fatalf("versions left: %+v %v", vs, err)
	}
}

func commit(t *testing.T, s *branch.Service, br string) manifest.CommitID {
	t.Helper()
	id, err := s.Commit(context.Background(), "crm", br, branch.CommitOptions{Message: "c"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
