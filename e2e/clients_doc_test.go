package e2e_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
)

// TestMinioBranchAsDocumented: docs/clients.md's minio-go recipe works:
// writes through the alias bucket, reads and listings with a signed
// x-nas-branch set through the options' Set.
func TestMinioBranchAsDocumented(t *testing.T) {
	srv := nastest.Start(t)
	ctx := context.Background()
	c := client(t, srv)
	createBucket(t, c, "data")
	put(t, c, "data", "a.txt", []byte("main"))
	commit(t, srv, "data", "base")
	if _, err := srv.Gateway.Branches.CreateBranch(ctx, "data", "exp/run-1", "main"); err != nil {
		t.Fatal(err)
	}
	mc := newMinio(t, srv)
	body := []byte("on the branch")
	if _, err := mc.PutObject(ctx, "data_exp_run-1", "a.txt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := minio.GetObjectOptions{}
	opts.Set("x-nas-branch", "exp/run-1")
	obj, err := mc.GetObject(ctx, "data", "a.txt", opts)
	must(t, err)
	got, err := io.ReadAll(obj)
	must(t, err)
	if !bytes.Equal(got, body) {
		t.Fatalf("GET with x-nas-branch: %q", got)
	}
	sopts := minio.StatObjectOptions{}
	sopts.Set("x-nas-branch", "exp/run-1")
	if st, err := mc.StatObject(ctx, "data", "a.txt", sopts); err != nil || st.Size != int64(len(body)) {
		t.Fatalf("HEAD with x-nas-branch: %+v %v", st, err)
	}
	lopts := minio.ListObjectsOptions{Recursive: true}
	lopts.Set("x-nas-branch", "exp/run-1")
	n := 0
	for o := range mc.ListObjects(ctx, "data", lopts) {
		must(t, o.Err)
		if o.Key != "a.txt" || o.Size != int64(len(body)) {
			t.Fatalf("listing the branch: %+v", o)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("listed %d objects", n)
	}
	if main, _ := get(t, c, "data", "a.txt"); string(main) != "main" {
		t.Fatalf("main changed: %q", main)
	}
}
