package cas_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/kv"
)

// openFloor opens a store under a new directory with the free-space floor
// minFree.
func openFloor(t *testing.T, minFree int64) (*cas.Store, kv.DB) {
	t.Helper()
	s, db, _ := castest.OpenWith(t, cas.Options{MinFree: minFree})
	return s, db
}

// TestStorageFloorRefusesWrites: with a floor above any disk's free
// space, a large upload fails as it opens its segment and a small one
// (inline chunks only) when it records, both with ErrStorageFull, and
// neither leaves a chunk or a segment behind. With the floor off the same
// writes pass.
func TestStorageFloorRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s, db := openFloor(t, math.MaxInt64)

	u := s.NewUpload()
	_, _, err := u.Ingest(ctx, bytes.NewReader(randBytes(1, 3<<20)))
	if !errors.Is(err, cas.ErrStorageFull) || !cas.IsStorageFull(err) {
		t.Fatalf("large upload under the floor: %v, want ErrStorageFull", err)
	}
	u.Close()

	small := randBytes(2, 1000)
	u = s.NewUpload()
	refs, _, err := u.Ingest(ctx, bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, u.Record)
	if !errors.Is(err, cas.ErrStorageFull) {
		t.Fatalf("small upload's Record under the floor: %v, want ErrStorageFull", err)
	}
	u.Close()
	wantNothingKept(t, s, refs, "refused uploads")

	off, offDB := openFloor(t, -1)
	for _, data := range [][]byte{randBytes(3, 3<<20), small} {
		refs, _ := ingest(t, off, offDB, data)
		if got := readAll(t, off, refs); !bytes.Equal(got, data) {
			t.Fatal("read back differs with the floor off")
		}
	}
}

// TestStorageFloorDefault: the default floor (MinFree 0, the smaller of
// 1 GiB and 5% of the disk) lets writes through on a test machine's disk
// that has room.
func TestStorageFloorDefault(t *testing.T) {
	s, db := openFloor(t, 0)
	data := randBytes(4, 2<<20)
	refs, _ := ingest(t, s, db, data)
	if got := readAll(t, s, refs); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
}

// TestStorageFloorWatchesFreeDirs: the floor guards each of FreeDirs
// (the gateway's metadata directory) as well as the store's own: a
// directory whose file system reports nothing free (/proc) refuses an
// upload that the store's disk has room for, and the error names it.
func TestStorageFloorWatchesFreeDirs(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc here")
	}
	s, _, _ := castest.OpenWith(t, cas.Options{MinFree: 1, FreeDirs: []string{"/proc"}})
	u := s.NewUpload()
	defer u.Close()
	_, _, err := u.Ingest(context.Background(), bytes.NewReader(randBytes(5, 3<<20)))
	if !errors.Is(err, cas.ErrStorageFull) || !strings.Contains(err.Error(), "/proc") {
		t.Fatalf("upload with /proc watched: %v, want ErrStorageFull naming /proc", err)
	}
}

// TestIsStorageFull: the disk's own refusals count as storage full
// through any wrapping; other errors do not.
func TestIsStorageFull(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "x.seg", Err: syscall.ENOSPC}
	for _, err := range []error{cas.ErrStorageFull, enospc, fmt.Errorf("segment: %w", enospc)} {
		if !cas.IsStorageFull(err) {
			t.Errorf("%v: not storage full", err)
		}
	}
	for _, err := range []error{nil, cas.ErrCorrupt, &os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}} {
		if cas.IsStorageFull(err) {
			t.Errorf("%v: storage full", err)
		}
	}
}
