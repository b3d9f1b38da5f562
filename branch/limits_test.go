package branch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

func putSize(s *branch.Service, repo, br, key string, size int64) error {
	_, err := s.Put(context.Background(), repo, br, key, &manifest.Entry{Size: size, ETag: fmt.Sprint(size)}, branch.Condition{})
	return err
}

func wantUsage(t *testing.T, s *branch.Service, repo, br string, bytes, objects int64) {
	t.Helper()
	u, err := s.Usage(context.Background(), repo, br)
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes != bytes || u.Objects != objects {
		t.Fatalf("usage %+v, want %d bytes %d objects", u, bytes, objects)
	}
}

func int64p(v int64) *int64 { return &v }

func TestQuotas(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "main", "seed", 40))
	if _, err := s.Commit(ctx, "data", "main", branch.CommitOptions{Message: "seed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranchWith(ctx, "data", "run", "main", branch.Limits{QuotaBytes: 100, QuotaObjects: 3}); err != nil {
		t.Fatal(err)
	}
	// What the fork inherits counts.
	wantUsage(t, s, "data", "run", 40, 1)
	must(t, putSize(s, "data", "run", "a", 50))
	if err := putSize(s, "data", "run", "b", 11); !errors.Is(err, branch.ErrQuotaExceeded) {
		t.Fatalf("put over the byte quota: %v", err)
	}
	must(t, putSize(s, "data", "run", "b", 10)) // exactly at the quota
	wantUsage(t, s, "data", "run", 100, 3)
	if err := putSize(s, "data", "run", "c", 0); !errors.Is(err, branch.ErrQuotaExceeded) {
		t.Fatalf("put over the object quota: %v", err)
	}
	// Shrinking writes always pass: overwrite smaller, delete, rename over.
	must(t, putSize(s, "data", "run", "a", 20))
	wantUsage(t, s, "data", "run", 70, 3)
	if _, err := s.Rename(ctx, "data", "run", "b", "seed", false, branch.Writer{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, "data", "run", 30, 2)
	if _, err := s.Delete(ctx, "data", "run", "a", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, "data", "run", 10, 1)
	// Refused writes leave nothing behind.
	if err := putSize(s, "data", "run", "big", 91); !errors.Is(err, branch.ErrQuotaExceeded) {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "data", "run", "big"); !errors.Is(err, branch.ErrNotFound) {
		t.Fatalf("a refused put is visible: %v", err)
	}
	wantUsage(t, s, "data", "run", 10, 1)
	// Commits do not change usage; a merge into the branch is recounted.
	if _, err := s.Commit(ctx, "data", "run", branch.CommitOptions{Message: "work"}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, "data", "run", 10, 1)

	// Lowering the quota below usage: only shrinking writes pass.
	if _, err := s.SetLimits(ctx, "data", "run", branch.LimitsUpdate{QuotaBytes: int64p(5)}); err != nil {
		t.Fatal(err)
	}
	if err := putSize(s, "data", "run", "x", 1); !errors.Is(err, branch.ErrQuotaExceeded) {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "run", "seed", 4))
	// Removing the quota.
	if _, err := s.SetLimits(ctx, "data", "run", branch.LimitsUpdate{QuotaBytes: int64p(0), QuotaObjects: int64p(0)}); err != nil {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "run", "x", 1000))
	if _, err := s.SetLimits(ctx, "data", "run", branch.LimitsUpdate{QuotaBytes: int64p(-1)}); !errors.Is(err, branch.ErrInvalid) {
		t.Fatalf("negative quota: %v", err)
	}
}

// TestQuotaRace: writers racing to the limit together never pass it.
func TestQuotaRace(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranchWith(ctx, "data", "run", "main", branch.Limits{QuotaBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := putSize(s, "data", "run", fmt.Sprint("k", i), 100)
			if err != nil && !errors.Is(err, branch.ErrQuotaExceeded) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 10 {
		t.Fatalf("%d puts of 100 bytes passed a 1000-byte quota", ok)
	}
	wantUsage(t, s, "data", "run", 1000, 10)
}

// TestQuotaAfterRestart: usage is recounted from the branch itself.
func TestQuotaAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() (*branch.Service, func()) {
		db, err := kv.OpenBadger(filepath.Join(dir, "kv"), kv.BadgerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := cas.Open(filepath.Join(dir, "chunks"), db, cas.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return branch.New(db, chunks, nil), func() { chunks.Close(); db.Close() }
	}
	s, closeFn := open()
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranchWith(ctx, "data", "run", "main", branch.Limits{QuotaObjects: 2}); err != nil {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "run", "a", 1))
	must(t, putSize(s, "data", "run", "b", 1))
	closeFn()
	s, closeFn = open()
	defer closeFn()
	if err := putSize(s, "data", "run", "c", 1); !errors.Is(err, branch.ErrQuotaExceeded) {
		t.Fatalf("after a restart: %v", err)
	}
	b, err := s.GetBranch(ctx, "data", "run")
	if err != nil {
		t.Fatal(err)
	}
	if b.Limits.QuotaObjects != 2 {
		t.Fatalf("limits after restart: %+v", b.Limits)
	}
}

func TestBranchTTL(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{Protected: true}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second)
	if _, err := s.CreateBranchWith(ctx, "data", "old", "main", branch.Limits{ExpiresAt: past}); !errors.Is(err, branch.ErrInvalid) {
		t.Fatalf("expiry in the past: %v", err)
	}
	soon := time.Now().Add(300 * time.Millisecond)
	if _, err := s.SetLimits(ctx, "data", "main", branch.LimitsUpdate{ExpiresAt: &soon}); !errors.Is(err, branch.ErrInvalid) {
		t.Fatalf("a TTL on the default branch: %v", err)
	}
	if _, err := s.CreateBranchWith(ctx, "data", "run", "main", branch.Limits{ExpiresAt: soon}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "data", "keep", "main"); err != nil {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "run", "work", 3))
	if err := s.SetProtected(ctx, "data", "keep", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetLimits(ctx, "data", "keep", branch.LimitsUpdate{ExpiresAt: &soon}); !errors.Is(err, branch.ErrInvalid) {
		t.Fatalf("a TTL on a protected branch: %v", err)
	}
	if n, err := s.Expire(ctx, time.Now(), nil); err != nil || n != 0 {
		t.Fatalf("expire before the TTL: %d %v", n, err)
	}
	time.Sleep(time.Until(soon) + 10*time.Millisecond)

	// Expired: gone for reads, writes and forks before it is recycled.
	if _, err := s.Get(ctx, "data", "run", "work"); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Fatalf("read on an expired branch: %v", err)
	}
	if err := putSize(s, "data", "run", "more", 1); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Fatalf("write on an expired branch: %v", err)
	}
	if _, err := s.CreateBranch(ctx, "data", "child", "run"); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Fatalf("fork of an expired branch: %v", err)
	}
	var got []branch.ExpiredBranch
	n, err := s.Expire(ctx, time.Now(), func(e branch.ExpiredBranch) { got = append(got, e) })
	if err != nil || n != 1 || len(got) != 1 || got[0].Name != "run" || got[0].Repo != "data" {
		t.Fatalf("expire: %d %v %+v", n, err, got)
	}
	if _, err := s.GetBranch(ctx, "data", "run"); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Fatalf("recycled branch still there: %v", err)
	}
	// The name is free again, with nothing of the old branch.
	if _, err := s.CreateBranch(ctx, "data", "run", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "data", "run", "work"); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Fatalf("the new branch sees the expired one's work: %v", err)
	}
}

// TestExpiredNameReused: creating a branch over an expired one that was
// not recycled yet recycles it.
func TestExpiredNameReused(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(100 * time.Millisecond)
	if _, err := s.CreateBranchWith(ctx, "data", "run", "main", branch.Limits{ExpiresAt: soon}); err != nil {
		t.Fatal(err)
	}
	must(t, putSize(s, "data", "run", "work", 3))
	if _, err := s.CreateBranch(ctx, "data", "run", "main"); !errors.Is(err, branch.ErrBranchExists) {
		t.Fatalf("create over a live branch: %v", err)
	}
	time.Sleep(time.Until(soon) + 10*time.Millisecond)
	b, err := s.CreateBranch(ctx, "data", "run", "main")
	if err != nil {
		t.Fatal(err)
	}
	if !b.Limits.ExpiresAt.IsZero() {
		t.Fatalf("the new branch inherited the expiry: %+v", b.Limits)
	}
	if got := keys(t, s, "data", "run"); len(got) != 0 {
		t.Fatalf("the new branch sees %q", got)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
