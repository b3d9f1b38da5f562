package cas_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// object stores chunks of the given sizes, in order, as one committed
// upload (inline and segment chunks mixed), and returns their refs and the
// object's bytes.
func object(t *testing.T, s *cas.Store, db kv.DB, sizes []int) ([]chunk.Ref, []byte) {
	t.Helper()
	ctx := context.Background()
	u := s.NewUpload()
	defer u.Close()
	var refs []chunk.Ref
	var data []byte
	for i, n := range sizes {
		b := randBytes(uint64(1000+i), n)
		r, err := u.Put(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
		data = append(data, b...)
	}
	if err := u.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, u.Record); err != nil {
		t.Fatal(err)
	}
	return refs, data
}

// mixedSizes is an object of segment chunks (one of them ChunkMax) with
// inline ones between them.
var mixedSizes = []int{300 << 10, 10 << 10, 2 << 20, 1<<20 + 7, cas.InlineMax, cas.ChunkMax, 1, 700 << 10}

func TestReadRefsRanges(t *testing.T) {
	s, db := open(t)
	refs, data := object(t, s, db, mixedSizes)
	var starts []int64 // chunk boundaries
	var at int64
	for _, r := range refs {
		starts = append(starts, at)
		at += int64(r.Size)
	}
	total := int64(len(data))
	for _, tc := range []struct {
		name   string
		off, n int64
	}{
		{"whole", 0, total},
		{"empty", 0, 0},
		{"empty mid-object", starts[2] + 5, 0},
		{"inside one segment chunk", starts[2] + 100, 4096},
		{"inside one inline chunk", starts[1] + 1, 100},
		{"one whole chunk", starts[3], int64(refs[3].Size)},
		{"one whole inline chunk", starts[4], int64(refs[4].Size)},
		{"across one boundary", starts[3] - 10, 20},
		{"across several chunks", starts[0] + 1, starts[6] - 1},
		{"from a boundary to the end", starts[5], total - starts[5]},
		{"last byte", total - 1, 1},
		{"all but the ends", 1, total - 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := s.ReadRefs(context.Background(), &buf, refs, tc.off, tc.n); err != nil {
				t.Fatal(err)
			}
			if want := data[tc.off : tc.off+tc.n]; !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("got %d bytes, want %d (equal prefix: %t)", buf.Len(), len(want), bytes.HasPrefix(want, buf.Bytes()))
			}
		})
	}
}

// segmentFile returns the one segment file under the store's directory.
func segmentFile(t *testing.T, root string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(root, "chunks", "*", "*.seg"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("want one segment, got %v (%v)", segs, err)
	}
	return segs[0]
}

func openAt(t *testing.T) (*cas.Store, kv.DB, string) {
	t.Helper()
	return castest.Open(t)
}

// TestReadRefsCorruptChunk flips a byte of a segment chunk in the middle
// of an object: the read fails with ErrCorrupt having written exactly the
// chunks before it, none of the corrupt one's bytes.
func TestReadRefsCorruptChunk(t *testing.T) {
	s, db, dir := openAt(t)
	refs, data := object(t, s, db, mixedSizes)
	// Segment chunks lie in the segment in Put order: refs[2] starts right
	// after refs[0].
	seg := segmentFile(t, dir)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[mixedSizes[0]+12345] ^= 0x40
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Read(ctx, &bytes.Buffer{}, refs[2].Hash, 0, int64(refs[2].Size)); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("test setup: chunk 2 not corrupt: %v", err)
	}
	before := int64(refs[0].Size) + int64(refs[1].Size)
	for _, tc := range []struct {
		name   string
		off, n int64
		wrote  int64 // bytes written before the error
	}{
		{"whole object", 0, int64(len(data)), before},
		{"from chunk 1", int64(refs[0].Size) + 3, int64(len(data)) - int64(refs[0].Size) - 3, int64(refs[1].Size) - 3},
		{"corrupt chunk alone", before, int64(refs[2].Size), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := s.ReadRefs(ctx, &buf, refs, tc.off, tc.n)
			if !errors.Is(err, cas.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if !bytes.Equal(buf.Bytes(), data[tc.off:tc.off+tc.wrote]) {
				t.Fatalf("wrote %d bytes before the error, want the %d before the corrupt chunk", buf.Len(), tc.wrote)
			}
		})
	}
	// A range inside the corrupt chunk is not verified (as with Read).
	var buf bytes.Buffer
	if err := s.ReadRefs(ctx, &buf, refs, before+1, 10); err != nil {
		t.Fatal(err)
	}
}

func TestReadRefsMissingChunk(t *testing.T) {
	s, db := open(t)
	refs, data := object(t, s, db, mixedSizes[:4])
	refs = append(refs[:2:2], append([]chunk.Ref{{Hash: chunk.Sum([]byte("absent")), Size: 1 << 20}}, refs[2:]...)...)
	var buf bytes.Buffer
	err := s.ReadRefs(context.Background(), &buf, refs, 0, int64(len(data))+1<<20)
	if !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	if n := mixedSizes[0] + mixedSizes[1]; !bytes.Equal(buf.Bytes(), data[:n]) {
		t.Fatalf("wrote %d bytes, want the %d before the missing chunk", buf.Len(), n)
	}
}

// failWriter takes ok writes, then fails as a closed connection does; on
// its first write it may call hook.
type failWriter struct {
	ok     int
	writes int
	hook   func()
}

var errGone = errors.New("client went away")

func (w *failWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.hook != nil && w.writes == 1 {
		w.hook()
	}
	if w.writes > w.ok {
		return 0, errGone
	}
	return len(p), nil
}

// TestReadRefsStopsEarly: when the client goes away (the writer fails) or
// ctx is cancelled mid-object, ReadRefs returns that error and leaves no
// goroutine behind.
func TestReadRefsStopsEarly(t *testing.T) {
	s, db := open(t)
	refs, data := object(t, s, db, mixedSizes)
	base := runtime.NumGoroutine()
	for i := range 20 {
		w := &failWriter{ok: i % 3}
		if err := s.ReadRefs(context.Background(), w, refs, 0, int64(len(data))); !errors.Is(err, errGone) {
			t.Fatalf("writer failing after %d writes: got %v", w.ok, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		w = &failWriter{ok: len(refs), hook: cancel}
		if err := s.ReadRefs(ctx, w, refs, 0, int64(len(data))); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: got %v after %d writes", err, w.writes)
		}
		if w.writes == len(refs) {
			t.Fatal("cancelled read went on to the end")
		}
	}
	// ReadRefs waits for its loader, so nothing should be left; allow the
	// runtime a moment for unrelated goroutines (Badger's) to settle.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
