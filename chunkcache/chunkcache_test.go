package chunkcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/chunk"
)

// testChunk returns n deterministic bytes for seed i and their hash.
func testChunk(i, n int) ([]byte, chunk.Hash) {
	b := bytes.Repeat([]byte(fmt.Sprintf("chunk %d;", i)), n/8+1)[:n]
	return b, chunk.Sum(b)
}

func open(t *testing.T, dir string, limit int64) *Cache {
	t.Helper()
	c, err := Open(dir, limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// files returns the regular files under dir, relative, with their sizes.
func files(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func total(m map[string]int64) int64 {
	var n int64
	for _, s := range m {
		n += s
	}
	return n
}

// waitSweep waits for the background sweeps Puts started to bring the
// cache to at most upTo bytes (as it counts them) and finish.
func waitSweep(t *testing.T, c *Cache, upTo int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.size.Load() > upTo || c.sweeping.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("no sweep: size %d, limit %d, sweeping %v", c.size.Load(), c.limit, c.sweeping.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPutRead(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	data, h := testChunk(1, 1000)
	if c.Has(h) {
		t.Fatal("an empty cache has a chunk")
	}
	if _, err := c.Open(h); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing chunk: %v", err)
	}
	if _, err := c.ReadAt(h, make([]byte, 1), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadAt of a missing chunk: %v", err)
	}
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	if !c.Has(h) {
		t.Fatal("Has after Put")
	}
	f, err := c.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Open read %d bytes, %v", len(got), err)
	}
	for _, tc := range []struct {
		off, n int
		err    error
	}{
		{0, 1000, nil},
		{0, 10, nil},
		{990, 10, nil},
		{500, 300, nil},
		{995, 10, io.EOF}, // a short read says so
		{1000, 1, io.EOF},
	} {
		p := make([]byte, tc.n)
		n, err := c.ReadAt(h, p, int64(tc.off))
		want := data[tc.off:min(tc.off+tc.n, len(data))]
		if err != tc.err || n != len(want) || !bytes.Equal(p[:n], want) {
			t.Errorf("ReadAt(%d, %d) = %d, %v; want %d, %v", tc.off, tc.n, n, err, len(want), tc.err)
		}
	}
	// The documented layout: DIR/ab/abcdef…, nothing else (no temporary
	// file left behind); 0600 files in 0700 directories.
	s := h.String()
	if fs := files(t, dir); len(fs) != 1 || fs[filepath.Join(s[:2], s)] != 1000 {
		t.Fatalf("files: %v", fs)
	}
	for _, p := range []string{filepath.Join(dir, s[:2]), filepath.Join(dir, s[:2], s)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: others can read or change the cache", p, fi.Mode().Perm())
		}
	}
	// Putting it again is a no-op; an empty chunk is a chunk too.
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	empty := chunk.Sum(nil)
	if err := c.Put(empty, nil); err != nil || !c.Has(empty) {
		t.Fatalf("the empty chunk: %v", err)
	}
	if n, err := c.ReadAt(empty, make([]byte, 1), 0); n != 0 || err != io.EOF {
		t.Fatalf("reading the empty chunk: %d %v", n, err)
	}
}

// TestPutMismatch: the cache holds only data that hashes to its name; a
// refused Put leaves nothing behind.
func TestPutMismatch(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	data, h := testChunk(1, 4096)
	flipped := bytes.Clone(data)
	flipped[100] ^= 1
	other, _ := testChunk(2, 4096)
	for name, b := range map[string][]byte{
		"one bit flipped": flipped,
		"another chunk":   other,
		"truncated":       data[:4095],
		"extended":        append(bytes.Clone(data), 0),
		"empty":           nil,
	} {
		if err := c.Put(h, b); !errors.Is(err, ErrMismatch) {
			t.Errorf("Put of %s: %v", name, err)
		}
	}
	if c.Has(h) {
		t.Fatal("a refused Put is in the cache")
	}
	if fs := files(t, dir); len(fs) != 0 {
		t.Fatalf("a refused Put left files: %v", fs)
	}
	if c.size.Load() != 0 {
		t.Fatalf("a refused Put counted %d bytes", c.size.Load())
	}
	if err := c.Put(h, data); err != nil || !c.Has(h) {
		t.Fatalf("the right data after refusals: %v", err)
	}
}

// TestDamagedFile: a cached chunk changed on disk (cut short, or a byte
// flipped in place) is not served: the first open in a process hashes it,
// removes it and reports it missing, which tells a reader to fetch it
// (package fuse does); a Put then stores it again.
func TestDamagedFile(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"truncated": func(p string) error { return os.Truncate(p, 600) },
		"flipped": func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[500] ^= 1
			return os.WriteFile(p, b, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := open(t, dir, 0)
			data, h := testChunk(1, 1000)
			if err := c.Put(h, data); err != nil {
				t.Fatal(err)
			}
			if err := damage(c.path(h)); err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 500)
			n, err := c.ReadAt(h, p, 400)
			if n != 0 || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("reading a damaged chunk: %d bytes, %v", n, err)
			}
			if c.Has(h) {
				t.Fatal("the damaged copy is still in the cache")
			}
			if err := c.Put(h, data); err != nil {
				t.Fatal(err)
			}
			if n, err := c.ReadAt(h, p, 400); n != 500 || err != nil || !bytes.Equal(p, data[400:900]) {
				t.Fatalf("after a new Put: %d %v", n, err)
			}
		})
	}
}

// TestVerifiedOncePerProcess: once a process has hashed a cached chunk it
// trusts that file until it reopens the cache; a new process (a new
// Cache) hashes it again and refuses a copy damaged meanwhile.
func TestVerifiedOncePerProcess(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	data, h := testChunk(2, 1000)
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	if _, err := c.ReadAt(h, p, 0); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.path(h))
	b[900] ^= 1
	if err := os.WriteFile(c.path(h), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadAt(h, p, 0); err != nil {
		t.Fatalf("a chunk this process verified: %v", err)
	}
	c2 := open(t, dir, 0)
	if _, err := c2.ReadAt(h, p, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a new process read a damaged chunk: %v", err)
	}
}

// TestSweepLRU: past the limit, the least recently used chunks go first,
// down to 90% of the limit, and a use counts as recent.
func TestSweepLRU(t *testing.T) {
	const size, n = 1024, 10
	dir := t.TempDir()
	c := open(t, dir, n*size)
	var hs []chunk.Hash
	base := time.Now().Add(-time.Hour)
	for i := range n {
		data, h := testChunk(i, size)
		if err := c.Put(h, data); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		// Chunk i was used i seconds after the hour-old base.
		if err := os.Chtimes(c.path(h), base.Add(time.Duration(i)*time.Second), base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got := total(files(t, dir)); got != n*size {
		t.Fatalf("at the limit: %d bytes", got)
	}
	if c.sweeping.Load() {
		t.Fatal("a sweep at the limit, not past it")
	}
	// Reading chunk 0 makes it the most recently used.
	if _, err := c.ReadAt(hs[0], make([]byte, 1), 0); err != nil {
		t.Fatal(err)
	}
	data, h := testChunk(n, size)
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	hs = append(hs, h)
	waitSweep(t, c, c.limit*9/10)
	// 11 KiB down to at most 9 KiB: chunks 1 and 2, the oldest, are gone.
	var kept []int
	for i, h := range hs {
		if c.Has(h) {
			kept = append(kept, i)
		}
	}
	if fmt.Sprint(kept) != "[0 3 4 5 6 7 8 9 10]" {
		t.Fatalf("kept chunks %v", kept)
	}
	if got := total(files(t, dir)); got != 9*size || c.size.Load() != got {
		t.Fatalf("after the sweep: %d bytes on disk, %d counted", got, c.size.Load())
	}
}

// TestTouchRate: a use refreshes a chunk's place at most once a minute,
// so reads do not turn into a metadata write each.
func TestTouchRate(t *testing.T) {
	c := open(t, t.TempDir(), 0)
	data, h := testChunk(1, 10)
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	mtime := func() time.Time {
		fi, err := os.Stat(c.path(h))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	os.Chtimes(c.path(h), old, old)
	if _, err := c.ReadAt(h, make([]byte, 1), 0); err != nil {
		t.Fatal(err)
	}
	if time.Since(mtime()) > time.Minute {
		t.Fatalf("a read did not refresh the chunk: %v", mtime())
	}
	os.Chtimes(c.path(h), old, old)
	if _, err := c.ReadAt(h, make([]byte, 1), 0); err != nil {
		t.Fatal(err)
	}
	if !mtime().Equal(old) {
		t.Fatalf("a second read within the minute refreshed the chunk: %v", mtime())
	}
}

// TestStaysUnderLimit: many Puts into a small cache leave it at most at
// its limit once the sweeps are done, with what it counts matching the
// disk.
func TestStaysUnderLimit(t *testing.T) {
	const size, limit = 1024, 8 * 1024
	dir := t.TempDir()
	c := open(t, dir, limit)
	for i := range 200 {
		data, h := testChunk(i, size)
		if err := c.Put(h, data); err != nil {
			t.Fatal(err)
		}
	}
	waitSweep(t, c, limit)
	got := total(files(t, dir))
	if got > limit {
		t.Fatalf("%d bytes in a cache limited to %d (it counts %d)", got, limit, c.size.Load())
	}
	if c.size.Load() < got {
		t.Fatalf("the cache counts %d bytes, the disk holds %d: it would let the disk grow past its limit", c.size.Load(), got)
	}
}

// TestConcurrent: Puts and reads of the same and different chunks, with
// sweeps evicting under them, never serve wrong or partial bytes; a chunk
// is either read whole or not there.
func TestConcurrent(t *testing.T) {
	const size, chunks, workers = 2048, 24, 8
	dir := t.TempDir()
	c := open(t, dir, 12*size)
	type entry struct {
		data []byte
		h    chunk.Hash
	}
	var es []entry
	for i := range chunks {
		d, h := testChunk(i, size)
		es = append(es, entry{d, h})
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			p := make([]byte, size)
			for i := range 150 {
				e := es[(i*(w+1)+w)%chunks]
				if err := c.Put(e.h, e.data); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				clear(p)
				n, err := c.ReadAt(e.h, p, 0)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					// evicted since the Put
				case err != nil && err != io.EOF:
					t.Errorf("ReadAt: %v", err)
					return
				case n != size || !bytes.Equal(p, e.data):
					t.Errorf("ReadAt served %d wrong bytes of %s", n, e.h)
					return
				}
				if e := es[(i+w)%chunks]; c.Has(e.h) {
					if n, err := c.ReadAt(e.h, p[:100], 100); err == nil && (n != 100 || !bytes.Equal(p[:100], e.data[100:200])) {
						t.Errorf("ReadAt at 100 served wrong bytes of %s", e.h)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	waitSweep(t, c, c.limit)
	for name, size := range files(t, dir) {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("a temporary file was left: %s", name)
			continue
		}
		h, err := chunk.ParseHash(filepath.Base(name))
		if err != nil {
			t.Errorf("a file that is not a chunk: %s", name)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || chunk.Sum(b) != h || int64(len(b)) != size {
			t.Errorf("chunk %s does not hash to its name: %v", name, err)
		}
	}
}

// TestReopen: a cache opened again on the same directory keeps its chunks
// and counts their bytes, so its limit holds across restarts.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	var hs []chunk.Hash
	for i := range 5 {
		data, h := testChunk(i, 100+i)
		if err := c.Put(h, data); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	c2 := open(t, dir, 1<<20)
	for i, h := range hs {
		p := make([]byte, 100+i)
		data, _ := testChunk(i, 100+i)
		if n, err := c2.ReadAt(h, p, 0); err != nil || n != len(p) || !bytes.Equal(p, data) {
			t.Fatalf("chunk %d after reopening: %d %v", i, n, err)
		}
	}
	if got := c2.size.Load(); got != 100+101+102+103+104 {
		t.Fatalf("the reopened cache counts %d bytes", got)
	}
	// A reopened cache with a smaller limit sweeps on its next Put.
	old := time.Now().Add(-time.Hour)
	for _, h := range hs {
		os.Chtimes(c.path(h), old, old)
	}
	c3 := open(t, dir, 400)
	data, h := testChunk(9, 100)
	if err := c3.Put(h, data); err != nil {
		t.Fatal(err)
	}
	waitSweep(t, c3, c3.limit*9/10)
	if got := total(files(t, dir)); got > 360 {
		t.Fatalf("%d bytes after sweeping to 90%% of 400", got)
	}
	if !c3.Has(h) {
		t.Fatal("the sweep removed the newest chunk")
	}
}

func TestOpenCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	c := open(t, dir, 0)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("cache directory: %v %v", fi, err)
	}
	data, h := testChunk(1, 10)
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	// A file where the directory should be is an error, not a panic.
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file, 0, nil); err == nil {
		t.Fatal("Open on a file succeeded")
	}
}

// TestSweepTemporaryFiles: a sweep leaves a Put's temporary file alone
// (removing it would fail the Put's rename), even when it is older than
// every chunk, but removes one a crash left.
func TestSweepTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 500)
	data, h := testChunk(1, 300)
	if err := c.Put(h, data); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "ab")
	os.MkdirAll(sub, 0o700)
	writing, stale := filepath.Join(sub, tmpPrefix+"writing"), filepath.Join(sub, tmpPrefix+"stale")
	for p, age := range map[string]time.Duration{writing: 5 * time.Minute, stale: 2 * time.Hour} {
		if err := os.WriteFile(p, make([]byte, 600), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, time.Now().Add(-age), time.Now().Add(-age))
	}
	c.size.Store(1500)
	c.sweep()
	if _, err := os.Stat(writing); err != nil {
		t.Fatalf("the sweep removed a Put's temporary file: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the sweep kept a crash's temporary file: %v", err)
	}
	if got, disk := c.size.Load(), total(files(t, dir)); got != disk {
		t.Fatalf("after the sweep the cache counts %d bytes, the disk holds %d", got, disk)
	}
}
