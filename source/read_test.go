package source_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/agentnas/nas/source"
)

// putGenerated stores a generated object of n bytes in the remote's
// backend directly (the HTTP path would only add time).
func (rm *remote) putGenerated(t testing.TB, bucket, key string, seed uint64, n int64) {
	t.Helper()
	_, err := rm.mem.PutObject(bucket, key, map[string]string{}, &genReader{seed: seed, n: n}, n, nil)
	must(t, err)
}

func TestRangedReadsOfALargeObjectFetchOnlyTheirBlocks(t *testing.T) {
	t.Parallel()
	const size = 192 << 20
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.putGenerated(t, "remote", "big.bin", 9, size)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "", "s3://remote", rm.URL, nil)

	cases := []struct {
		name       string
		off, n     int64
		fetchedMax int64 // remote body bytes this read may add
		gets       int64
	}{
		{"inside one block", 100<<20 + 12345, 1 << 20, source.BlockSize, 1},
		{"same block again", 100<<20 + 99, 4096, 0, 0},
		{"across a block boundary", 16<<20 - 100, 200, 2 * source.BlockSize, 1},
		{"last bytes", size - 1000, 1000, source.BlockSize, 1},
		{"first byte", 0, 1, source.BlockSize, 1},
	}
	for _, c := range cases {
		g0, s0 := rm.gets.Load(), rm.sent.Load()
		got, err := get(t, gw.S3, "data", "big.bin", fmt.Sprintf("bytes=%d-%d", c.off, c.off+c.n-1))
		must(t, err)
		if !bytes.Equal(got, genRange(9, c.off, c.n)) {
			t.Fatalf("%s: wrong bytes (%d, equal prefix %d)", c.name, len(got), commonPrefix(got, genRange(9, c.off, c.n)))
		}
		if d := rm.gets.Load() - g0; d != c.gets {
			t.Errorf("%s: %d remote GETs, want %d", c.name, d, c.gets)
		}
		if d := rm.sent.Load() - s0; d > c.fetchedMax {
			t.Errorf("%s: the remote sent %d bytes, at most %d expected", c.name, d, c.fetchedMax)
		}
	}
	if total := rm.sent.Load(); total > 5*source.BlockSize {
		t.Fatalf("fetched %d bytes of a %d-byte object for five small ranges", total, size)
	}
	rm.getsMu.Lock()
	t.Logf("remote ranges: %q", rm.ranges)
	rm.getsMu.Unlock()
	rep, err := gw.G.Branches.Check(context.Background())
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
}

func TestWholeReadOfAMultiBlockObjectIsOneVerifiedFetch(t *testing.T) {
	t.Parallel()
	const size = 2*source.BlockSize + 12345
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.putGenerated(t, "remote", "obj", 4, size)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "in/", "s3://remote", rm.URL, nil)
	want := genRange(4, 0, size)
	mustGet(t, gw.S3, "data", "in/obj", want)
	if g := rm.gets.Load(); g != 1 {
		t.Fatalf("%d remote GETs, want 1: %q", g, rm.ranges)
	}
	if r := rm.ranges[0]; r != "" {
		t.Fatalf("whole read sent Range %q; want a plain GET (whole-object checks)", r)
	}
	got, err := get(t, gw.S3, "data", "in/obj", fmt.Sprintf("bytes=%d-", source.BlockSize-10))
	must(t, err)
	if !bytes.Equal(got, want[source.BlockSize-10:]) {
		t.Fatal("ranged re-read differs")
	}
	if g := rm.gets.Load(); g != 1 {
		t.Fatalf("re-read went to the remote")
	}
}
