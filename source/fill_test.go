package source

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/kv"
)

// oneSource is an Opener of a single source.
type oneSource struct{ s Source }

func (o oneSource) Source(context.Context, string) (Source, error) { return o.s, nil }

// TestFillConsultsTheLimiter: every byte fill fetches is paced (the
// job's limiter is asked for it), nothing of what is local is read
// again, and the side index then holds the whole entry.
func TestFillConsultsTheLimiter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	size := 2*BlockSize + 12345
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db, err := kv.OpenBadger("", kv.BadgerOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	chunks, err := cas.Open(t.TempDir(), db, cas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer chunks.Close()
	m := NewMaterializer(db, chunks, oneSource{src}, MaterializerOptions{})
	o, err := src.Stat(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	e := lazyEntry("src_t", o)

	// A read of the middle block makes it local; fill fetches the rest.
	r, err := m.Open(ctx, e, BlockSize+5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Copy(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	r.Close()
	rest := size - BlockSize
	w := &countingWaiter{}
	var n atomic.Int64
	got, err := m.fill(ctx, e, newPacer(ctx, w, 64<<10, &n))
	if err != nil || got != int64(rest) {
		t.Fatalf("fill: %d, %v; want %d (all but the block already local)", got, err, rest)
	}
	asked := 0
	for _, c := range w.calls {
		asked += c
	}
	if asked != rest || n.Load() != int64(rest) || m.Stats().FetchedBytes != int64(size) {
		t.Fatalf("the limiter was asked for %d bytes, %d were counted, %d stored; want %d paced, %d stored",
			asked, n.Load(), m.Stats().FetchedBytes, rest, size)
	}
	var local int64
	if err := db.View(ctx, func(rd kv.Reader) error { local, err = localBytes(rd, e); return err }); err != nil || local != int64(size) {
		t.Fatalf("side index holds %d bytes (%v), want %d", local, err, size)
	}
	w.calls = nil
	if got, err := m.fill(ctx, e, newPacer(ctx, w, 64<<10, &n)); got != 0 || err != nil || len(w.calls) != 0 {
		t.Fatalf("second fill: %d, %v, %d waits; want nothing fetched", got, err, len(w.calls))
	}
}
