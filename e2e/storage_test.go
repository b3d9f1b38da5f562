package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentnas/nas/nastest"
)

// wantFull checks that err is the S3 answer to a full disk.
func wantFull(t *testing.T, what string, err error) {
	t.Helper()
	if errCode(err) != "StorageFull" || errStatus(err) != http.StatusInsufficientStorage {
		t.Fatalf("%s on a full gateway: %v (status %d), want 507 StorageFull", what, err, errStatus(err))
	}
}

// countAttempts gives one call the SDK's default retryer (these tests'
// clients retry only lost answers) and counts its attempts, retries
// included: a middleware after the retry loop runs once per attempt.
func countAttempts(n *atomic.Int32) func(*s3.Options) {
	return func(o *s3.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 10 * time.Millisecond })
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("countAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}

// TestStorageFull restarts a gateway with a free-space floor above any
// disk's free space: every write of new bytes (a PUT small or large, a
// multipart part) is refused with 507 StorageFull, which the SDK does not
// retry, while reads, listings
// and deletes go on; restarted with the default floor, the objects
// written before are intact and writes pass again.
func TestStorageFull(t *testing.T) {
	ctx := context.Background()
	srv := nastest.Start(t, nastest.Options{Gateways: 1})
	c := client(t, srv)
	const b = "full"
	createBucket(t, c, b)
	kept := map[string][]byte{"small": randBytes("small", 3000), "large": randBytes("large", 5<<20+17), "gone": randBytes("gone", 10)}
	for k, v := range kept {
		put(t, c, b, k, v)
	}
	srv.Stop()

	full := nastest.Start(t, nastest.Options{Gateways: 1, DataDir: srv.DataDir, MinFree: math.MaxInt64})
	c = client(t, full)
	for _, n := range []int{100, 3 << 20} {
		var attempts atomic.Int32
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprint("new/", n)), Body: bytes.NewReader(randBytes("new", n))},
			countAttempts(&attempts))
		wantFull(t, fmt.Sprintf("PUT of %d bytes", n), err)
		if a := attempts.Load(); a != 1 {
			t.Fatalf("the SDK sent a PUT refused with StorageFull %d times, want once (not retried)", a)
		}
	}
	_, err := createMPU(t, c, b, "mpu").tryPart(1, randBytes("part", 5<<20))
	wantFull(t, "UploadPart", err)
	for k, v := range kept {
		got, _ := get(t, c, b, k)
		wantBytes(t, got, v)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("gone")}); err != nil {
		t.Fatalf("delete on a full gateway: %v", err)
	}
	delete(kept, "gone")
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if err != nil || len(out.Contents) != len(kept) {
		t.Fatalf("list on a full gateway: %v, %d keys, want %d", err, len(out.Contents), len(kept))
	}
	full.Stop()

	c = client(t, nastest.Start(t, nastest.Options{Gateways: 1, DataDir: srv.DataDir}))
	kept["after"] = randBytes("after", 2<<20)
	put(t, c, b, "after", kept["after"])
	for k, v := range kept {
		got, _ := get(t, c, b, k)
		wantBytes(t, got, v)
	}
}

// TestStorageFullOnARealDisk runs a gateway on a small tmpfs (as root;
// skipped otherwise) and fills it with 4 MiB objects: the PUT that would
// cross the 8 MiB floor is refused with StorageFull, every object
// acknowledged before reads back, and once space is freed on the disk
// writes pass again.
func TestStorageFullOnARealDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=160m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	srv := nastest.Start(t, nastest.Options{Gateways: 1, DataDir: filepath.Join(dir, "data"), MinFree: 8 << 20})
	c := client(t, srv)
	const b = "tmpfs"
	createBucket(t, c, b)
	filler := filepath.Join(dir, "filler")
	fill(t, filler, dir, 40<<20)

	ctx := context.Background()
	kept := map[string][]byte{}
	var refused error
	for i := 0; i < 20 && refused == nil; i++ {
		k := fmt.Sprint("o", i)
		v := randBytes(k, 4<<20)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: bytes.NewReader(v)})
		if err != nil {
			refused = err
			break
		}
		kept[k] = v
	}
	wantFull(t, "PUT on a filling disk", refused)
	if len(kept) < 3 {
		t.Fatalf("only %d objects fit before the floor", len(kept))
	}
	for k, v := range kept {
		got, _ := get(t, c, b, k)
		wantBytes(t, got, v)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	kept["after"] = randBytes("after", 4<<20)
	put(t, c, b, "after", kept["after"])
	got, _ := get(t, c, b, "after")
	wantBytes(t, got, kept["after"])
}

// fill writes a file at path until the file system of dir has about
// leave bytes free.
func fill(t *testing.T, path, dir string, leave int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	n := int64(st.Bavail)*int64(st.Bsize) - leave
	if n <= 0 {
		t.Fatalf("the tmpfs has under %d bytes free before filling", leave)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n > 0 {
		w, err := f.Write(buf[:min(int64(len(buf)), n)])
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Fatal(err)
		}
		n -= int64(w)
	}
}
