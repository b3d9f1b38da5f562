package cas_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// Two gateways over one index and one segment directory: one collects
// (here), the other writes under a floor (there). Nothing is marked live,
// so only the floor and the spared segments keep what "there" writes.
type pair struct {
	here, there *cas.Store
	db          kv.DB
	dir         string
}

func openPair(t *testing.T) pair {
	t.Helper()
	here, db, dir := castest.Open(t)
	there, err := cas.Open(filepath.Join(dir, "chunks"), db, cas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { there.Close() })
	return pair{here: here, there: there, db: db, dir: dir}
}

// sweepAll runs a cycle on here that starts at start and finds nothing
// live.
func (p pair) sweepAll(t *testing.T, start int64, spare []uint64) cas.SweepStats {
	t.Helper()
	c := p.here.BeginCycleWith(cas.CycleOptions{Start: start, Spare: spare})
	defer c.End()
	st, err := c.Sweep(context.Background(), func(chunk.Hash) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ingestOpen(t *testing.T, s *cas.Store, data []byte) (*cas.Upload, []chunk.Ref) {
	t.Helper()
	u := s.NewUpload()
	t.Cleanup(u.Close)
	refs, _, err := u.Ingest(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return u, refs
}

func has(t *testing.T, s *cas.Store, refs []chunk.Ref) bool {
	t.Helper()
	for _, r := range refs {
		if ok, err := s.Has(context.Background(), r.Hash); err != nil || !ok {
			return false
		}
	}
	return true
}

// TestFloorStampsReusedChunks: a write under the floor that reuses
// garbage chunks commits them with the floor's time, so a sweep of a
// cycle starting at the floor spares them; garbage no write reused goes.
func TestFloorStampsReusedChunks(t *testing.T) {
	p := openPair(t)
	ctx := context.Background()
	data := randBytes(21, 2<<20)
	refs, _ := ingest(t, p.here, p.db, data)
	other, _ := ingest(t, p.here, p.db, randBytes(22, 1<<20))
	start := time.Now().UnixNano()
	if _, err := p.there.Floor(ctx, start); err != nil {
		t.Fatal(err)
	}
	u, again := ingestOpen(t, p.there, data)
	if err := p.db.Update(ctx, u.Record); err != nil {
		t.Fatal(err)
	}
	u.Close()
	st := p.sweepAll(t, start, nil)
	if !has(t, p.here, refs) || !bytes.Equal(readAll(t, p.here, again), data) {
		t.Fatalf("chunks a write reused under the floor were collected: %+v", st)
	}
	if has(t, p.here, other) {
		t.Fatal("garbage no write reused survived")
	}
}

// TestFloorStampsPinned: chunks an upload reused before the floor was
// set, and records only after the sweep, are stamped by Floor itself.
func TestFloorStampsPinned(t *testing.T) {
	p := openPair(t)
	ctx := context.Background()
	data := randBytes(23, 2<<20)
	ingest(t, p.here, p.db, data)
	u, refs := ingestOpen(t, p.there, data) // reuses every chunk, records nothing yet
	start := time.Now().UnixNano()
	if _, err := p.there.Floor(ctx, start); err != nil {
		t.Fatal(err)
	}
	p.sweepAll(t, start, nil)
	if err := p.db.Update(ctx, u.Record); err != nil {
		t.Fatalf("record after the sweep: %v", err)
	}
	if !bytes.Equal(readAll(t, p.here, refs), data) {
		t.Fatal("the pinned chunks were collected")
	}
}

// TestFloorRefusesCollectedReuse: a write that reused a chunk the sweep
// deleted meanwhile fails with ErrCollected (503 at the edges) and
// commits nothing; sent again, it stores the bytes anew.
func TestFloorRefusesCollectedReuse(t *testing.T) {
	p := openPair(t)
	ctx := context.Background()
	data := randBytes(24, 2<<20)
	ingest(t, p.here, p.db, data)
	start := time.Now().UnixNano()
	if _, err := p.there.Floor(ctx, start); err != nil {
		t.Fatal(err)
	}
	u, _ := ingestOpen(t, p.there, data) // pinned after the floor: stamped only by Record
	p.sweepAll(t, start, nil)
	err := p.db.Update(ctx, u.Record)
	if !errors.Is(err, cas.ErrCollected) || !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("record of a collected chunk: %v, want ErrCollected (unavailable)", err)
	}
	u.Close()
	u2, refs := ingestOpen(t, p.there, data)
	if err := p.db.Update(ctx, u2.Record); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, p.here, refs), data) {
		t.Fatal("the write sent again does not read back")
	}
}

// TestFloorWaitsForUnflooredRecords: Floor returns only once the uploads
// that recorded without it have closed.
func TestFloorWaitsForUnflooredRecords(t *testing.T) {
	p := openPair(t)
	ctx := context.Background()
	u, _ := ingestOpen(t, p.there, randBytes(25, 1<<20))
	if err := p.db.Update(ctx, u.Record); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.there.Floor(short, time.Now().UnixNano()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Floor with an upload recorded before it still open: %v, want it to wait", err)
	}
	p.there.ClearFloor()
	u.Close()
	if _, err := p.there.Floor(ctx, time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
}

// TestFloorSparesOpenSegments: a segment another gateway's upload had
// open when it took part is kept though no record names it and it is
// older than the cycle; the upload records it afterwards.
func TestFloorSparesOpenSegments(t *testing.T) {
	p := openPair(t)
	ctx := context.Background()
	data := randBytes(26, 3<<20)
	u, refs := ingestOpen(t, p.there, data)
	segs := listSegments(t, p.dir)
	if len(segs) != 1 {
		t.Fatalf("segments on disk: %v, want the upload's one", segs)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(segs[0], old, old); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixNano()
	open, err := p.there.Floor(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 {
		t.Fatalf("open segments: %v, want 1", open)
	}
	p.sweepAll(t, start, open)
	if err := p.db.Update(ctx, u.Record); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, p.here, refs), data) {
		t.Fatal("the open segment was removed")
	}
}

func listSegments(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".seg" {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
