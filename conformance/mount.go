package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The mount parts of L0.5 and L1.3, through the operating system only:
// whatever mounts the lease (Target.Mount), the runner reads, writes and
// lists plain paths and checks the errno of the specification's table.

// mounted is a lease's branch mounted by Target.Mount.
type mounted struct {
	dir     string
	unmount func()
}

// mountLease mounts the lease l (as lease/create answered it).
func (r *run) mountLease(ctx context.Context, l apiv1.Lease) (*mounted, error) {
	lj, err := jsonLease(l, r.owner.endpoint)
	if err != nil {
		return nil, err
	}
	dir, unmount, err := r.t.Mount(ctx, lj)
	if err != nil {
		return nil, fmt.Errorf("mount: %w", err)
	}
	return &mounted{dir: dir, unmount: unmount}, nil
}

func (m *mounted) path(key string) string { return filepath.Join(m.dir, filepath.FromSlash(key)) }

// tree is every file under the mount (keys, without the control
// directory .nas) with its bytes.
func (m *mounted) tree() (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.dir, p)
		if rel == ".nas" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return out, err
}

// s3Tree is every object the principal lists in bucket, with its bytes.
func (p *principal) s3Tree(ctx context.Context, bucket string) (map[string]string, error) {
	out := map[string]string{}
	pg := s3.NewListObjectsV2Paginator(p.s3(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			b, err := p.get(ctx, bucket, aws.ToString(o.Key))
			if err != nil {
				return nil, err
			}
			out[aws.ToString(o.Key)] = b
		}
	}
	return out, nil
}

func keysOf(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkMountView is the mount half of L0.5: a run's lease shows the same
// tree through S3 and through the mount, changes made through one are
// seen through the other, and what the lease hides is absent from both.
func checkMountView(ctx context.Context, r *run) (bool, string) {
	lc, l, err := r.runLease(ctx)
	if err != nil {
		return false, err.Error()
	}
	m, err := r.mountLease(ctx, l)
	if err != nil {
		return false, err.Error()
	}
	defer m.unmount()
	viaS3, err := lc.s3Tree(ctx, r.repo)
	if err != nil {
		return false, "S3 listing with the lease: " + err.Error()
	}
	viaMount, err := m.tree()
	if err != nil {
		return false, "the mount's tree: " + err.Error()
	}
	if len(viaS3) == 0 || !slices.Equal(keysOf(viaS3), keysOf(viaMount)) {
		return false, fmt.Sprintf("S3 lists %v, the mount %v", keysOf(viaS3), keysOf(viaMount))
	}
	for k, v := range viaS3 {
		if viaMount[k] != v {
			return false, fmt.Sprintf("%s: %q through S3, %q through the mount", k, v, viaMount[k])
		}
	}
	// What the lease hides is absent from both.
	if _, err := lc.get(ctx, r.repo, "finance/salaries.txt"); code(err) != "NoSuchKey" {
		return false, "a hidden key over S3 answered " + code(err)
	}
	if _, err := os.Stat(m.path("finance/salaries.txt")); !errors.Is(err, syscall.ENOENT) {
		return false, fmt.Sprintf("a hidden key through the mount: %v, want ENOENT", err)
	}
	if _, err := os.Stat(m.path("finance")); !errors.Is(err, syscall.ENOENT) {
		return false, fmt.Sprintf("a directory holding only hidden keys through the mount: %v, want ENOENT", err)
	}
	// Both ways: a file written through the mount is read over S3, one
	// put over S3 is read through the mount.
	if err := os.WriteFile(m.path("shared/launch/from-mount.md"), []byte("written through the mount"), 0o644); err != nil {
		return false, "write through the mount: " + err.Error()
	}
	if got, err := lc.get(ctx, r.repo, "shared/launch/from-mount.md"); err != nil || got != "written through the mount" {
		return false, fmt.Sprintf("the mount's write over S3: %q %v", got, err)
	}
	if err := lc.put(ctx, r.repo, "shared/launch/from-s3.md", "put over S3"); err != nil {
		return false, err.Error()
	}
	// A mount may trust what it listed for a short while (its name and
	// attribute TTL): wait a bounded time for the new name.
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err = os.ReadFile(m.path("shared/launch/from-s3.md"))
		if err == nil || !errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !bytes.Equal(got, []byte("put over S3")) {
		return false, fmt.Sprintf("the S3 put through the mount (after 10 s at most): %q %v", got, err)
	}
	return true, fmt.Sprintf("the same tree (%d files) through S3 and the FUSE mount, changes seen both ways, hidden paths absent from both", len(viaS3))
}

// endedMount is a lease mounted to watch it end: a file read (so the
// mount knows it) and one open for writing from before the end.
type endedMount struct {
	*mounted
	w *os.File
}

// close closes the file and unmounts.
func (m *endedMount) close() {
	m.w.Close()
	m.unmount()
}

// mountToEnd mounts the lease, reads the seeded notes and opens them for
// writing, so what happens after the lease ends can be checked.
func (r *run) mountToEnd(ctx context.Context, l apiv1.Lease) (*endedMount, error) {
	m, err := r.mountLease(ctx, l)
	if err != nil {
		return nil, err
	}
	notes := m.path("shared/launch/notes.md")
	if _, err := os.ReadFile(notes); err != nil {
		m.unmount()
		return nil, fmt.Errorf("read through the mount before the lease ended: %w", err)
	}
	w, err := os.OpenFile(notes, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		m.unmount()
		return nil, fmt.Errorf("open for writing before the lease ended: %w", err)
	}
	return &endedMount{mounted: m, w: w}, nil
}

// check says whether the mount switched as L1.3 asks once the lease
// ended: the next operation fails with ESTALE, after which a write is
// refused with EROFS (the mount is read-only).
func (m *endedMount) check(what string) error {
	if _, err := os.ReadFile(m.path("shared/launch/notes.md")); !errors.Is(err, syscall.ESTALE) {
		return fmt.Errorf("after %s, a read through the mount: %v, want ESTALE", what, err)
	}
	if _, err := m.w.Write([]byte("after the lease ended")); !errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("after %s, a write through the mount: %v, want EROFS", what, err)
	}
	return nil
}
