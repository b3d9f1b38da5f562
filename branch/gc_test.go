package branch_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/manifest"
)

func randData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// putData stores data as key through the chunk store, as a PUT does.
func putData(t *testing.T, s *branch.Service, repo, br, key string, data []byte) *manifest.Entry {
	t.Helper()
	ctx := context.Background()
	up := s.Chunks().NewUpload()
	defer up.Close()
	refs, n, err := up.Ingest(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(data)
	e := &manifest.Entry{Size: n, ETag: hex.EncodeToString(sum[:])}
	ch, blob := e.SetContent(&manifest.Content{Chunks: refs})
	out, err := s.Put(ctx, repo, br, key, e, branch.Condition{}, up, branch.ContentRecord{Hash: ch, Data: blob})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readData(t *testing.T, s *branch.Service, e *manifest.Entry) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := s.Manifest().Content(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, r := range c.Chunks {
		if err := s.Chunks().Read(ctx, &buf, r.Hash, 0, int64(r.Size)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func chunkCount(t *testing.T, s *branch.Service) int {
	t.Helper()
	st, err := s.Chunks().Check(context.Background(), func(p cas.Problem) { t.Error(p) })
	if err != nil {
		t.Fatal(err)
	}
	return st.Chunks
}

func fsck(t *testing.T, s *branch.Service) {
	t.Helper()
	rep, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Error("fsck:", p)
	}
}

func TestGCReclaims(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "gcrepo", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := randData(1, 3<<20)
	putData(t, s, "gcrepo", "main", "keep", keep)
	putData(t, s, "gcrepo", "main", "doomed", randData(2, 2<<20))
	if _, err := s.Commit(ctx, "gcrepo", "main", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// A fork writes its own data; deleting the fork makes it garbage.
	if _, err := s.CreateBranch(ctx, "gcrepo", "tmp", "main"); err != nil {
		t.Fatal(err)
	}
	putData(t, s, "gcrepo", "tmp", "scratch", randData(3, 1<<20))
	// An aborted upload's parts are garbage too.
	up, err := s.CreateUpload(ctx, "gcrepo", "main", "mp", &manifest.Entry{})
	if err != nil {
		t.Fatal(err)
	}
	cu := s.Chunks().NewUpload()
	refs, n, _ := cu.Ingest(ctx, bytes.NewReader(randData(4, 1<<20)))
	cu.Sync(ctx)
	part := &manifest.Entry{Size: n, ETag: "p"}
	ch, blob := part.SetContent(&manifest.Content{Chunks: refs})
	if err := s.PutPart(ctx, "gcrepo", "mp", up.ID, 1, part, cu, branch.ContentRecord{Hash: ch, Data: blob}); err != nil {
		t.Fatal(err)
	}
	cu.Close()

	before := chunkCount(t, s)
	st, err := s.Collect(ctx, branch.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Chunks.Chunks != 0 {
		t.Fatalf("nothing is garbage yet, but %d chunks were swept", st.Chunks.Chunks)
	}
	if _, err := s.Delete(ctx, "gcrepo", "main", "doomed", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, "gcrepo", "main", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBranch(ctx, "gcrepo", "tmp"); err != nil {
		t.Fatal(err)
	}
	if err := s.AbortUpload(ctx, "gcrepo", "mp", up.ID); err != nil {
		t.Fatal(err)
	}
	// Within the retention window, history still holds "doomed" (and its
	// version record), so only the fork's and the upload's chunks go.
	st, err = s.Collect(ctx, branch.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mid := chunkCount(t, s)
	if mid >= before {
		t.Fatalf("deleting a branch and aborting an upload reclaimed nothing (%d -> %d chunks)", before, mid)
	}
	fsck(t, s)
	// Past the window, the old commit and version expire and "doomed" goes.
	st, err = s.Collect(ctx, branch.GCOptions{Retention: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	after := chunkCount(t, s)
	if after >= mid || st.ExpiredCommits == 0 || st.Versions == 0 {
		t.Fatalf("expiring history reclaimed nothing: %d -> %d chunks, stats %+v", mid, after, st)
	}
	e, err := s.Get(ctx, "gcrepo", "main", "keep")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readData(t, s, e), keep) {
		t.Fatal("live object damaged by gc")
	}
	fsck(t, s)
	// History shorter than the window: the log ends where commits expired.
	var n2 int
	if err := s.Log(ctx, "gcrepo", "main", func(branch.LogEntry) error { n2++; return nil }); err == nil && n2 == 0 {
		t.Fatal("head commit lost")
	}
}

// TestGCSparesInFlightPut: a PUT that deduplicates against chunks that are
// garbage when the collection starts must not lose them to the sweep.
func TestGCSparesInFlightPut(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "race", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randData(9, 5<<20)
	putData(t, s, "race", "main", "x", data)
	if _, err := s.Delete(ctx, "race", "main", "x", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, "race", "main", branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// The chunks are now referenced only by expired history.
	up := s.Chunks().NewUpload()
	refs, n, err := up.Ingest(ctx, bytes.NewReader(data)) // dedups: pins the old chunks
	if err != nil {
		t.Fatal(err)
	}
	if up.NewBytes() != 0 {
		t.Fatal("expected the upload to deduplicate")
	}
	if _, err := s.Collect(ctx, branch.GCOptions{Retention: time.Nanosecond, Now: func() time.Time { return time.Now().Add(time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	up.Sync(ctx)
	e := &manifest.Entry{Size: n, ETag: "y"}
	ch, blob := e.SetContent(&manifest.Content{Chunks: refs})
	stored, err := s.Put(ctx, "race", "main", "y", e, branch.Condition{}, up, branch.ContentRecord{Hash: ch, Data: blob})
	up.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := readData(t, s, stored); !bytes.Equal(got, data) {
		t.Fatal("in-flight PUT lost its deduplicated chunks to the sweep")
	}
	fsck(t, s)
}
