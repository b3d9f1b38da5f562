package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
)

// TestDB runs the contract of kv.DB against an engine: one set of subtests
// that every engine must pass (the restic style of backend tests). open
// must return a fresh, empty DB for the calling (sub)test; the suite closes
// it itself (checking Close's error), so open must not, though it may
// register cleanups that run after that (such as dropping a schema).
//
// An engine known to miss part of the contract says so through Gaps (its
// test wraps the DB); the suite then skips those subtests with the reason.
//
// The suite keeps to well under ten seconds per engine on two cores.
func TestDB(t *testing.T, open func(t *testing.T) kv.DB) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := open(t)
			t.Cleanup(func() {
				if err := db.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			skipGap(t, db, c.name)
			c.fn(t, db)
		})
	}
	t.Run("Close", func(t *testing.T) { testClose(t, open(t)) })
}

// Gaps is implemented by a DB whose engine is known not to meet parts of
// the contract: KnownGaps maps the names of TestDB's subtests (such as
// "NoPhantomInsert") to the reason, and TestDB skips them with it. It is
// for test wrappers, so that every gap is declared, with its reason, next
// to the engine's test.
type Gaps interface {
	KnownGaps() map[string]string
}

func skipGap(t *testing.T, db kv.DB, name string) {
	if g, ok := db.(Gaps); ok {
		if why, ok := g.KnownGaps()[name]; ok {
			t.Skipf("known gap of this engine: %s", why)
		}
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, db kv.DB)
}

var cases = []testCase{
	{"GetMissing", testGetMissing},
	{"SetGetDelete", testSetGetDelete},
	{"ValuesAreCopies", testValuesAreCopies},
	{"BinaryKeysAndValues", testBinary},
	{"LongKeysAndValues", testLong},
	{"ScanOrderIsBytewise", testScanOrder},
	{"ScanRanges", testScanRanges},
	{"ScanStopAndErrors", testScanStop},
	{"ScanCallbackMayRead", testScanNestedGet},
	{"ScanManyKeys", testScanMany},
	{"TxnReadsOwnWrites", testReadOwnWrites},
	{"ViewIsSnapshot", testViewSnapshot},
	{"UpdateIsAtomic", testUpdateAtomic},
	{"CountersUnderContention", testCounter},
	{"NoWriteSkew", testWriteSkew},
	{"NoWriteSkewOverRange", testWriteSkewRange},
	{"NoPhantomInsert", testPhantom},
	{"Batch", testBatch},
	{"BatchCancel", testBatchCancel},
	{"BatchMany", testBatchMany},
	{"CancelledContext", testCancelled},
}

var bg = context.Background()

// set commits key=value in an Update.
func set(t *testing.T, db kv.DB, key, value string) {
	t.Helper()
	if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set([]byte(key), []byte(value)) }); err != nil {
		t.Fatalf("Update set %q: %v", key, err)
	}
}

// get reads key in a View; ok is false when it is missing.
func get(t *testing.T, db kv.DB, key string) (value string, ok bool) {
	t.Helper()
	err := db.View(bg, func(r kv.Reader) error {
		v, err := r.Get([]byte(key))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		value, ok = string(v), true
		return nil
	})
	if err != nil {
		t.Fatalf("View get %q: %v", key, err)
	}
	return value, ok
}

// scan collects the keys (and values) of r.
func scan(r kv.Reader, rg kv.Range) (keys, values []string, err error) {
	err = r.Scan(rg, func(k, v []byte) error {
		keys = append(keys, string(k))
		values = append(values, string(v))
		return nil
	})
	return keys, values, err
}

// scanView collects the keys of rg in a View.
func scanView(t *testing.T, db kv.DB, rg kv.Range) []string {
	t.Helper()
	var keys []string
	err := db.View(bg, func(r kv.Reader) error {
		var err error
		keys, _, err = scan(r, rg)
		return err
	})
	if err != nil {
		t.Fatalf("View scan: %v", err)
	}
	return keys
}

// fill commits every key with the value "v:"+key.
func fill(t *testing.T, db kv.DB, keys ...string) {
	t.Helper()
	err := db.Update(bg, func(txn kv.Txn) error {
		for _, k := range keys {
			if err := txn.Set([]byte(k), []byte("v:"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
}

func testGetMissing(t *testing.T, db kv.DB) {
	err := db.View(bg, func(r kv.Reader) error {
		_, err := r.Get([]byte("missing"))
		return err
	})
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("View Get of a missing key: %v, want ErrNotFound", err)
	}
	err = db.Update(bg, func(txn kv.Txn) error {
		_, err := txn.Get([]byte("missing"))
		return err
	})
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Txn Get of a missing key: %v, want ErrNotFound", err)
	}
}

func testSetGetDelete(t *testing.T, db kv.DB) {
	set(t, db, "a", "1")
	if v, ok := get(t, db, "a"); !ok || v != "1" {
		t.Fatalf("after Set: %q %v", v, ok)
	}
	set(t, db, "a", "2")
	if v, _ := get(t, db, "a"); v != "2" {
		t.Fatalf("after overwrite: %q", v)
	}
	del := func(k string) {
		if err := db.Update(bg, func(txn kv.Txn) error { return txn.Delete([]byte(k)) }); err != nil {
			t.Fatalf("Delete %q: %v", k, err)
		}
	}
	del("a")
	if _, ok := get(t, db, "a"); ok {
		t.Fatal("a deleted key is still there")
	}
	del("never-there") // deleting a missing key is not an error
}

func testValuesAreCopies(t *testing.T, db kv.DB) {
	key, val := []byte("key"), []byte("value")
	err := db.Update(bg, func(txn kv.Txn) error {
		if err := txn.Set(key, val); err != nil {
			return err
		}
		// The Txn keeps its own copies: reusing the buffers changes nothing.
		key[0], val[0] = 'X', 'X'
		v, err := txn.Get([]byte("key"))
		if err != nil {
			return fmt.Errorf("kv Get in the Txn after reusing Set's buffers: %w", err)
		}
		if string(v) != "value" {
			return fmt.Errorf("kv Get in the Txn after reusing Set's buffers: %q", v)
		}
		v[0] = 'Y'
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b := db.Batch(bg)
	bk, bv := []byte("batch"), []byte("value")
	if err := b.Set(bk, bv); err != nil {
		t.Fatal(err)
	}
	bk[0], bv[0] = 'X', 'X'
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	err = db.View(bg, func(r kv.Reader) error {
		for _, k := range []string{"key", "batch"} {
			v, err := r.Get([]byte(k))
			if err != nil || string(v) != "value" {
				return fmt.Errorf("kv Get %q: %q %v", k, v, err)
			}
			v[0] = 'Z' // the caller owns the copy
			v2, err := r.Get([]byte(k))
			if err != nil || string(v2) != "value" {
				return fmt.Errorf("kv Get %q after mutating an earlier result: %q %v", k, v2, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testBinary(t *testing.T, db kv.DB) {
	pairs := map[string]string{
		"\x00":         "\x00",
		"\x00\x00":     "\xff\x00\xff",
		"a\x00b":       "\x00",
		"\xff":         "\xff\xff",
		"\xff\xff\xff": "",
		"\x80\x7f":     "\x80",
		"empty":        "",
		"é":            "not UTF-8: \xc3\x28",
	}
	err := db.Update(bg, func(txn kv.Txn) error {
		for k, v := range pairs {
			if err := txn.Set([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range pairs {
		if v, ok := get(t, db, k); !ok || v != want {
			t.Errorf("Get %q = %q %v, want %q", k, v, ok, want)
		}
	}
	var keys []string
	for k := range pairs {
		keys = append(keys, k)
	}
	slices.Sort(keys) // Go compares strings bytewise
	if got := scanView(t, db, kv.Range{}); !slices.Equal(got, keys) {
		t.Errorf("Scan of binary keys: %q, want %q", got, keys)
	}
}

func testLong(t *testing.T, db kv.DB) {
	key := bytes.Repeat([]byte{0xff, 0x00, 'k'}, 1024/3+1)[:1024]
	val := make([]byte, 1<<20)
	for i := range val {
		val[i] = byte(i * 7)
	}
	if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set(key, val) }); err != nil {
		t.Fatal(err)
	}
	err := db.View(bg, func(r kv.Reader) error {
		v, err := r.Get(key)
		if err != nil {
			return err
		}
		if !bytes.Equal(v, val) {
			return errors.New("a 1 MiB value came back changed")
		}
		n := 0
		err = r.Scan(kv.Prefix(key[:10]), func(k, v []byte) error {
			n++
			if !bytes.Equal(k, key) || !bytes.Equal(v, val) {
				return errors.New("kv Scan returned another key or value")
			}
			return nil
		})
		if err == nil && n != 1 {
			err = fmt.Errorf("kv Scan saw %d keys, want 1", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// orderKeys are keys whose bytewise order differs from any collation:
// upper case before lower case, 0x00 and 0x80..0xff, prefixes before
// their extensions.
var orderKeys = []string{"\x00", "\x00\x00", "\x00\x01", "\x01", "A", "B", "Z", "a", "a\x00", "a\x7f", "a\x80",
	"a\xff", "aa", "b", "z", "\x7f", "\x80", "\xc3\xa9", "\xfe", "\xff", "\xff\x00", "\xff\xff"}

func testScanOrder(t *testing.T, db kv.DB) {
	shuffled := slices.Clone(orderKeys)
	slices.Reverse(shuffled)
	fill(t, db, shuffled...)
	want := slices.Clone(orderKeys)
	slices.Sort(want)
	if got := scanView(t, db, kv.Range{}); !slices.Equal(got, want) {
		t.Errorf("forward: %q\nwant     %q", got, want)
	}
	slices.Reverse(want)
	if got := scanView(t, db, kv.Range{Reverse: true}); !slices.Equal(got, want) {
		t.Errorf("reverse: %q\nwant     %q", got, want)
	}
}

// model is the expected result of scanning rg over the sorted keys.
func model(sorted []string, rg kv.Range) []string {
	var out []string
	for _, k := range sorted {
		if k >= string(rg.Start) && (rg.End == nil || k < string(rg.End)) {
			out = append(out, k)
		}
	}
	if rg.Reverse {
		slices.Reverse(out)
	}
	return out
}

func testScanRanges(t *testing.T, db kv.DB) {
	keys := slices.Clone(orderKeys)
	slices.Sort(keys)
	fill(t, db, keys...)
	b := func(s string) []byte { return []byte(s) }
	ranges := []kv.Range{
		{Start: b("a"), End: b("b")},      // Start included, End excluded
		{Start: b("a\x00"), End: b("aa")}, // bounds between keys and on keys
		{Start: b("a\x01"), End: b("a\x80")},
		{Start: b("b")},              // nil End: to the last key
		{End: b("a")},                // nil Start: from the first key
		{Start: b("c"), End: b("d")}, // empty
		{Start: b("b"), End: b("b")}, // empty (Start == End)
		{Start: b("\xff"), End: b("\xff\xff")},
		kv.Prefix(b("a")),
		kv.Prefix(b("\xff")), // PrefixEnd is nil: no upper bound
		kv.Prefix(b("\x00")),
		kv.Prefix(nil),
	}
	for _, rg := range ranges {
		for _, rev := range []bool{false, true} {
			rg.Reverse = rev
			if got, want := scanView(t, db, rg), model(keys, rg); !slices.Equal(got, want) {
				t.Errorf("Scan [%q, %q) reverse=%v: %q, want %q", rg.Start, rg.End, rev, got, want)
			}
		}
	}
}

func testScanStop(t *testing.T, db kv.DB) {
	fill(t, db, "a", "b", "c", "d")
	boom := errors.New("boom")
	for _, rev := range []bool{false, true} {
		var seen []string
		err := db.View(bg, func(r kv.Reader) error {
			return r.Scan(kv.Range{Reverse: rev}, func(k, _ []byte) error {
				seen = append(seen, string(k))
				if len(seen) == 2 {
					return kv.ErrStop
				}
				return nil
			})
		})
		if err != nil || len(seen) != 2 {
			t.Errorf("ErrStop (reverse=%v): %v after %q, want nil after two keys", rev, err, seen)
		}
		n := 0
		err = db.View(bg, func(r kv.Reader) error {
			return r.Scan(kv.Range{Reverse: rev}, func(k, _ []byte) error {
				n++
				return fmt.Errorf("wrapped: %w", boom)
			})
		})
		if !errors.Is(err, boom) || n != 1 {
			t.Errorf("an error from fn (reverse=%v): %v after %d calls, want boom after 1", rev, err, n)
		}
	}
	err := db.Update(bg, func(txn kv.Txn) error {
		return txn.Scan(kv.Range{}, func(k, _ []byte) error { return boom })
	})
	if !errors.Is(err, boom) {
		t.Errorf("an error from a Txn's Scan callback: %v, want boom", err)
	}
}

// testScanNestedGet: a Scan callback may read (and, in a Txn, write) other
// keys of the same transaction; code walks an index and looks up what it
// points to.
func testScanNestedGet(t *testing.T, db kv.DB) {
	fill(t, db, "i/1", "i/2", "i/3", "t/1", "t/2", "t/3")
	err := db.View(bg, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte("i/")), func(k, _ []byte) error {
			target := "t/" + string(k[2:])
			v, err := r.Get([]byte(target))
			if err != nil || string(v) != "v:"+target {
				return fmt.Errorf("kv Get %s inside Scan: %q %v", target, v, err)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(bg, func(txn kv.Txn) error {
		return txn.Scan(kv.Prefix([]byte("i/")), func(k, _ []byte) error {
			if _, err := txn.Get([]byte("t/" + string(k[2:]))); err != nil {
				return err
			}
			return txn.Set([]byte("u/"+string(k[2:])), []byte("x"))
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanView(t, db, kv.Prefix([]byte("u/"))); len(got) != 3 {
		t.Fatalf("Sets inside a Txn's Scan: %q", got)
	}
}

// testScanMany: a range of a few thousand keys streams whole and in order
// (engines that page must not lose or repeat keys at page boundaries).
func testScanMany(t *testing.T, db kv.DB) {
	const n = 2500
	b := db.Batch(bg)
	for i := range n {
		if err := b.Set(fmt.Appendf(nil, "scan/%05d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []bool{false, true} {
		err := db.View(bg, func(r kv.Reader) error {
			i := 0
			if rev {
				i = n - 1
			}
			err := r.Scan(kv.Range{Start: []byte("scan/"), End: []byte("scan/99999"), Reverse: rev}, func(k, v []byte) error {
				if want := fmt.Sprintf("scan/%05d", i); string(k) != want || len(v) != 1 || v[0] != byte(i) {
					return fmt.Errorf("key %q value %v, want %q", k, v, want)
				}
				if rev {
					i--
				} else {
					i++
				}
				return nil
			})
			if err == nil && (rev && i != -1 || !rev && i != n) {
				err = fmt.Errorf("scan ended at %d", i)
			}
			return err
		})
		if err != nil {
			t.Errorf("reverse=%v: %v", rev, err)
		}
		// Stopping mid-way through a large range is clean too.
		count := 0
		err = db.View(bg, func(r kv.Reader) error {
			return r.Scan(kv.Range{Start: []byte("scan/"), Reverse: rev}, func(_, _ []byte) error {
				count++
				if count == 1000 {
					return kv.ErrStop
				}
				return nil
			})
		})
		if err != nil || count != 1000 {
			t.Errorf("ErrStop after 1000 of %d (reverse=%v): %v, %d calls", n, rev, err, count)
		}
	}
}

func testReadOwnWrites(t *testing.T, db kv.DB) {
	fill(t, db, "a", "b", "c", "d")
	want := []string{"0", "a", "bb", "c", "e"}
	err := db.Update(bg, func(txn kv.Txn) error {
		steps := []error{
			txn.Delete([]byte("b")), // hides a committed key
			txn.Delete([]byte("d")),
			txn.Set([]byte("bb"), []byte("new")), // adds keys before, between, after
			txn.Set([]byte("0"), []byte("new")),
			txn.Set([]byte("e"), []byte("new")),
			txn.Set([]byte("c"), []byte("changed")),
			txn.Set([]byte("gone"), []byte("x")), // set then deleted
			txn.Delete([]byte("gone")),
		}
		if err := errors.Join(steps...); err != nil {
			return err
		}
		if _, err := txn.Get([]byte("b")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("kv Get of a key deleted in the Txn: %v", err)
		}
		if _, err := txn.Get([]byte("gone")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("kv Get of a key set and deleted in the Txn: %v", err)
		}
		if v, err := txn.Get([]byte("c")); err != nil || string(v) != "changed" {
			return fmt.Errorf("kv Get of a key changed in the Txn: %q %v", v, err)
		}
		keys, values, err := scan(txn, kv.Range{})
		if err != nil {
			return err
		}
		if !slices.Equal(keys, want) {
			return fmt.Errorf("forward Scan in the Txn: %q, want %q", keys, want)
		}
		if values[3] != "changed" {
			return fmt.Errorf("kv Scan in the Txn saw c = %q", values[3])
		}
		keys, _, err = scan(txn, kv.Range{Reverse: true})
		if err != nil {
			return err
		}
		rev := slices.Clone(want)
		slices.Reverse(rev)
		if !slices.Equal(keys, rev) {
			return fmt.Errorf("kv reverse Scan in the Txn: %q, want %q", keys, rev)
		}
		keys, _, err = scan(txn, kv.Range{Start: []byte("b"), End: []byte("d"), Reverse: true})
		if err != nil {
			return err
		}
		if !slices.Equal(keys, []string{"c", "bb"}) {
			return fmt.Errorf("reverse range Scan in the Txn: %q", keys)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanView(t, db, kv.Range{}); !slices.Equal(got, want) {
		t.Fatalf("after commit: %q, want %q", got, want)
	}
}

func testViewSnapshot(t *testing.T, db kv.DB) {
	fill(t, db, "k", "x")
	err := db.View(bg, func(r kv.Reader) error {
		if v, err := r.Get([]byte("k")); err != nil || string(v) != "v:k" {
			return fmt.Errorf("first read: %q %v", v, err)
		}
		// Another writer commits while the View is open.
		done := make(chan error, 1)
		go func() {
			done <- db.Update(bg, func(txn kv.Txn) error {
				return errors.Join(txn.Set([]byte("k"), []byte("new")), txn.Set([]byte("n"), []byte("new")),
					txn.Delete([]byte("x")))
			})
		}()
		if err := <-done; err != nil {
			return fmt.Errorf("concurrent Update: %w", err)
		}
		if v, err := r.Get([]byte("k")); err != nil || string(v) != "v:k" {
			return fmt.Errorf("the View saw a later commit: k = %q %v", v, err)
		}
		if _, err := r.Get([]byte("n")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("the View saw a key added later: %v", err)
		}
		if keys, _, err := scan(r, kv.Range{}); err != nil || !slices.Equal(keys, []string{"k", "x"}) {
			return fmt.Errorf("the View's Scan saw a later commit: %q %v", keys, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := get(t, db, "k"); v != "new" {
		t.Fatalf("a View after the commit: k = %q", v)
	}
}

func testUpdateAtomic(t *testing.T, db kv.DB) {
	set(t, db, "keep", "old")
	boom := errors.New("boom")
	err := db.Update(bg, func(txn kv.Txn) error {
		if err := errors.Join(txn.Set([]byte("a"), []byte("1")), txn.Set([]byte("keep"), []byte("new")),
			txn.Delete([]byte("keep2"))); err != nil {
			return err
		}
		return fmt.Errorf("late: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if _, ok := get(t, db, "a"); ok {
		t.Error("a failed Update committed a Set")
	}
	if v, _ := get(t, db, "keep"); v != "old" {
		t.Errorf("a failed Update committed an overwrite: %q", v)
	}
}

// increment adds one to the big-endian counter at key.
func increment(txn kv.Txn, key []byte) error {
	v, err := txn.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		v, err = []byte{0, 0, 0, 0}, nil
	}
	if err != nil {
		return err
	}
	n := uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
	n++
	return txn.Set(key, []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func testCounter(t *testing.T, db kv.DB) {
	const workers, each = 8, 25
	key := []byte("counter")
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if err := db.Update(bg, func(txn kv.Txn) error { return increment(txn, key) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	v, _ := get(t, db, "counter")
	if n := int(v[0])<<24 | int(v[1])<<16 | int(v[2])<<8 | int(v[3]); n != workers*each {
		t.Fatalf("lost updates: %d of %d", n, workers*each)
	}
}

// rendezvous makes two transactions' first attempts both read before
// either writes; retries (and a partner that already committed) do not
// wait, and a partner that never arrives releases the wait after a while.
type rendezvous struct {
	arrived [2]chan struct{}
	once    [2]sync.Once
}

func newRendezvous() *rendezvous {
	return &rendezvous{arrived: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
}

func (r *rendezvous) meet(me int) {
	first := false
	r.once[me].Do(func() { first = true; close(r.arrived[me]) })
	if !first {
		return
	}
	select {
	case <-r.arrived[1-me]:
	case <-time.After(2 * time.Second):
	}
}

// skew runs two Updates at once, each running body with its index; the
// bodies meet between their reads and their writes.
func skew(t *testing.T, db kv.DB, body func(txn kv.Txn, me int, meet func()) error) {
	t.Helper()
	rv := newRendezvous()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for me := range 2 {
		wg.Go(func() {
			errs[me] = db.Update(bg, func(txn kv.Txn) error { return body(txn, me, func() { rv.meet(me) }) })
		})
	}
	wg.Wait()
	for me, err := range errs {
		if err != nil && !errors.Is(err, kv.ErrConflict) {
			t.Fatalf("Update %d: %v", me, err)
		}
	}
}

// testWriteSkew: two doctors on call each go off call if the other is on;
// under serializable transactions one of them stays.
func testWriteSkew(t *testing.T, db kv.DB) {
	keys := [2][]byte{[]byte("doc/alice"), []byte("doc/bob")}
	set(t, db, "doc/alice", "on")
	set(t, db, "doc/bob", "on")
	skew(t, db, func(txn kv.Txn, me int, meet func()) error {
		on := 0
		for _, k := range keys {
			v, err := txn.Get(k)
			if err != nil {
				return err
			}
			if string(v) == "on" {
				on++
			}
		}
		meet()
		if on == 2 {
			return txn.Set(keys[me], []byte("off"))
		}
		return nil
	})
	a, _ := get(t, db, "doc/alice")
	b, _ := get(t, db, "doc/bob")
	if a == "off" && b == "off" {
		t.Fatal("write skew: both transactions committed (each read both keys and wrote one)")
	}
}

// testWriteSkewRange is the write skew with the reads done by a Scan of a
// range that holds both keys.
func testWriteSkewRange(t *testing.T, db kv.DB) {
	keys := [2][]byte{[]byte("doc/alice"), []byte("doc/bob")}
	set(t, db, "doc/alice", "on")
	set(t, db, "doc/bob", "on")
	skew(t, db, func(txn kv.Txn, me int, meet func()) error {
		on := 0
		err := txn.Scan(kv.Prefix([]byte("doc/")), func(_, v []byte) error {
			if string(v) == "on" {
				on++
			}
			return nil
		})
		if err != nil {
			return err
		}
		meet()
		if on == 2 {
			return txn.Set(keys[me], []byte("off"))
		}
		return nil
	})
	a, _ := get(t, db, "doc/alice")
	b, _ := get(t, db, "doc/bob")
	if a == "off" && b == "off" {
		t.Fatal("write skew over a range: both transactions committed")
	}
}

// testPhantom: two transactions each claim a slot if the range of claims
// is empty; serializability allows one claim only. The range is empty when
// they read it, so an engine that tracks only the keys it read (not the
// range) misses the conflict.
func testPhantom(t *testing.T, db kv.DB) {
	set(t, db, "claim", "") // a neighbour outside the range
	skew(t, db, func(txn kv.Txn, me int, meet func()) error {
		n := 0
		if err := txn.Scan(kv.Prefix([]byte("claim/")), func(_, _ []byte) error { n++; return nil }); err != nil {
			return err
		}
		meet()
		if n == 0 {
			return txn.Set(fmt.Appendf(nil, "claim/%d", me), []byte("mine"))
		}
		return nil
	})
	if got := scanView(t, db, kv.Prefix([]byte("claim/"))); len(got) != 1 {
		t.Fatalf("phantom: claims %q, want exactly one", got)
	}
}

func testBatch(t *testing.T, db kv.DB) {
	set(t, db, "old", "x")
	b := db.Batch(bg)
	err := errors.Join(b.Set([]byte("b1"), []byte("1")), b.Set([]byte("b2"), []byte("2")),
		b.Delete([]byte("old")), b.Set([]byte("b1"), []byte("1again")), // the last write of a key wins
		b.Set([]byte("b3"), []byte("3")), b.Delete([]byte("b3")))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanView(t, db, kv.Range{}); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("after Flush: %q", got)
	}
	if v, _ := get(t, db, "b1"); v != "1again" {
		t.Fatalf("b1 = %q, want the last write", v)
	}
	// A Batch goes on after a Flush.
	if err := b.Set([]byte("b4"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, db, "b4"); !ok {
		t.Fatal("a write after the first Flush was lost")
	}
	if err := b.Flush(); err != nil {
		t.Fatalf("an empty Flush: %v", err)
	}
}

func testBatchCancel(t *testing.T, db kv.DB) {
	b := db.Batch(bg)
	if err := errors.Join(b.Set([]byte("a"), []byte("1")), b.Delete([]byte("z"))); err != nil {
		t.Fatal(err)
	}
	b.Cancel()
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanView(t, db, kv.Range{}); len(got) != 0 {
		t.Fatalf("cancelled writes landed: %q", got)
	}
}

func testBatchMany(t *testing.T, db kv.DB) {
	const n = 10000
	b := db.Batch(bg)
	val := make([]byte, 100)
	for i := range n {
		if err := b.Set(fmt.Appendf(nil, "big/%05d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	count := 0
	err := db.View(bg, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte("big/")), func(_, _ []byte) error { count++; return nil })
	})
	if err != nil || count != n {
		t.Fatalf("after flushing %d writes: %d keys, %v", n, count, err)
	}
}

func testCancelled(t *testing.T, db kv.DB) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := db.View(ctx, func(kv.Reader) error { return nil }); err == nil {
		t.Error("View with a cancelled context returned nil")
	}
	err := db.Update(ctx, func(txn kv.Txn) error { return txn.Set([]byte("a"), []byte("1")) })
	if err == nil {
		t.Error("Update with a cancelled context returned nil")
	}
	if _, ok := get(t, db, "a"); ok {
		t.Error("Update with a cancelled context committed")
	}
}

func testClose(t *testing.T, db kv.DB) {
	set(t, db, "a", "1")
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
