package kv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pagerValues is how many values the pager tests write, of pagerValueSize
// bytes: 48 MiB, several memtables' worth, so most of it is in tables.
const (
	pagerValues    = 3072
	pagerValueSize = 16 << 10
)

// pagerValue is value i of the pager tests (random, so no two blocks
// are alike).
func pagerValue(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	b := make([]byte, pagerValueSize)
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// openPaged opens a store in a temporary directory with the smallest
// sizing and the given mapped budget, and fills it.
func openPaged(t *testing.T, mapped int64) (*Badger, string) {
	t.Helper()
	sz, err := BadgerSizingFor(MinBadgerMemory)
	if err != nil {
		t.Fatal(err)
	}
	sz.MappedResident = mapped
	dir := t.TempDir()
	db, err := OpenBadger(dir, BadgerOptions{Sizing: sz})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := 0; i < pagerValues; i += 32 {
		err := db.Update(ctx, func(tx Txn) error {
			for j := i; j < i+32; j++ {
				if err := tx.Set(fmt.Appendf(nil, "k%05d", j), pagerValue(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	readAll(t, db)
	return db, dir
}

// readAll reads every value back and checks it.
func readAll(t *testing.T, db *Badger) {
	t.Helper()
	err := db.View(context.Background(), func(r Reader) error {
		for i := range pagerValues {
			v, err := r.Get(fmt.Appendf(nil, "k%05d", i))
			if err != nil {
				return err
			}
			if !bytes.Equal(v, pagerValue(i)) {
				return fmt.Errorf("value %d differs", i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// residentUnder sums the resident pages of this process's mappings of
// files under dir (/proc/self/smaps).
func residentUnder(t *testing.T, dir string) int64 {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case !strings.HasSuffix(f[0], ":"): // a mapping's first line
			_, _, _, in = mappingUnder(line, dir)
		case in && f[0] == "Rss:":
			sum += statusKiB([]byte(line), "Rss:") << 10
		}
	}
	return sum
}

// TestPageOutLeavesTheResidentSet: paging out the store's mappings takes
// its table pages out of the resident set, and every value reads back
// the same afterwards.
func TestPageOutLeavesTheResidentSet(t *testing.T) {
	if !canPageOut() {
		t.Skip("the kernel does not know MADV_PAGEOUT")
	}
	db, dir := openPaged(t, -1)
	before := residentUnder(t, dir)
	if before < 16<<20 {
		t.Fatalf("the store's mappings hold %d KiB resident after writing and reading 48 MiB; the test needs more than 16 MiB to mean anything", before>>10)
	}
	abs, _ := filepath.EvalSymlinks(dir)
	n, err := pageOut(abs, map[string]int64{})
	if err != nil || n == 0 {
		t.Fatalf("pageOut advised %d mappings: %v", n, err)
	}
	after := residentUnder(t, dir)
	t.Logf("resident pages of the store's mappings: %d KiB before paging out, %d KiB after", before>>10, after>>10)
	if after > before/4 {
		t.Fatalf("resident after paging out: %d KiB of %d", after>>10, before>>10)
	}
	readAll(t, db)
}

// TestPagerKeepsTheBudget: the store's own pager pages its mappings out
// once they have grown past the budget.
func TestPagerKeepsTheBudget(t *testing.T) {
	if !canPageOut() {
		t.Skip("the kernel does not know MADV_PAGEOUT")
	}
	defer func(d time.Duration) { pagerTick = d }(pagerTick)
	pagerTick = 20 * time.Millisecond
	const budget = 4 << 20
	db, dir := openPaged(t, budget)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := residentUnder(t, dir)
		if r <= 2*budget {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store's mappings still hold %d KiB resident, budget %d KiB", r>>10, budget>>10)
		}
		time.Sleep(20 * time.Millisecond)
	}
	readAll(t, db)
}

func TestMappingUnder(t *testing.T) {
	for _, tc := range []struct {
		line  string
		ok    bool
		start uintptr
	}{
		{"7f0a1c000000-7f0a1c200000 r--s 00000000 fd:01 1234                       /d/kv/000001.sst", true, 0x7f0a1c000000},
		{"7f0a1c000000-7f0a1c200000 rw-s 00000000 fd:01 1234  /d/kv/00001.mem (deleted)", true, 0x7f0a1c000000},
		{"7f0a1c000000-7f0a1c200000 r--s 00000000 fd:01 1234  /d/kv2/000001.sst", false, 0},
		{"7f0a1c000000-7f0a1c200000 r--s 00000000 fd:01 1234  /d/kv", false, 0},
		{"7ffd5e7f2000-7ffd5e813000 rw-p 00000000 00:00 0                          [stack]", false, 0},
		{"7ffd5e7f2000-7ffd5e813000 rw-p 00000000 00:00 0 ", false, 0},
		{"zz-7ffd5e813000 rw-p 00000000 00:00 0  /d/kv/x", false, 0},
		{"7ffd5e813000-7ffd5e7f2000 rw-p 00000000 00:00 0  /d/kv/x", false, 0},
		{"", false, 0},
	} {
		start, _, _, ok := mappingUnder(tc.line, "/d/kv")
		if ok != tc.ok || start != tc.start {
			t.Errorf("%q: %x %v, want %x %v", tc.line, start, ok, tc.start, tc.ok)
		}
	}
}

// TestIndexStart: the footer read finds each table's index where Badger
// says it is: its index size before the checksum and the two lengths.
func TestIndexStart(t *testing.T) {
	db, dir := openPaged(t, -1)
	infos := db.db.Tables()
	if len(infos) == 0 {
		t.Fatal("no tables after 48 MiB")
	}
	for _, ti := range infos {
		path := filepath.Join(dir, fmt.Sprintf("%06d.sst", ti.ID))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		at := indexStart(path)
		if tail := fi.Size() - at - int64(ti.IndexSz); at <= 0 || tail < 8 || tail > 64 {
			t.Errorf("table %d: index at %d of %d bytes, index %d bytes: %d bytes of footer", ti.ID, at, fi.Size(), ti.IndexSz, tail)
		}
	}
	if at := indexStart(filepath.Join(dir, "MANIFEST")); at < 0 {
		t.Errorf("a file that is not a table: %d", at)
	}
	if at := indexStart(filepath.Join(dir, "absent.sst")); at != 0 {
		t.Errorf("an absent table: %d, want 0", at)
	}
}
