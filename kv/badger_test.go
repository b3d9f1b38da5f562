package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func open(t testing.TB) *Badger {
	t.Helper()
	db, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCommitSyncs: every Update waits for a sync round that began after
// its write (Badger itself runs with asynchronous writes).
func TestCommitSyncs(t *testing.T) {
	db := open(t)
	before := db.syncer.finished
	if err := db.Update(context.Background(), func(txn Txn) error { return txn.Set([]byte("a"), []byte("b")) }); err != nil {
		t.Fatal(err)
	}
	if db.syncer.finished <= before {
		t.Fatal("an Update returned without a sync round")
	}
	if db.db.Opts().ValueThreshold < 1<<20 {
		t.Fatal("values must stay out of the value log (its GC is unsafe without synchronous writes)")
	}
}

func TestReadAfterWriteAndScan(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		err := db.Update(ctx, func(txn Txn) error { return txn.Set([]byte(fmt.Sprintf("k%02d", i)), []byte{byte(i)}) })
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(ctx, func(r Reader) error {
			v, err := r.Get([]byte(fmt.Sprintf("k%02d", i)))
			if err != nil || len(v) != 1 || v[0] != byte(i) {
				return fmt.Errorf("read after write of k%02d: %v %v", i, v, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var fwd, rev []string
	db.View(ctx, func(r Reader) error {
		r.Scan(Range{Start: []byte("k05"), End: []byte("k08")}, func(k, _ []byte) error { fwd = append(fwd, string(k)); return nil })
		return r.Scan(Range{Start: []byte("k05"), End: []byte("k08"), Reverse: true}, func(k, _ []byte) error { rev = append(rev, string(k)); return nil })
	})
	if fmt.Sprint(fwd) != "[k05 k06 k07]" || fmt.Sprint(rev) != "[k07 k06 k05]" {
		t.Fatalf("scan: %v / %v", fwd, rev)
	}
	b := db.Batch(ctx)
	b.Delete([]byte("k00"))
	b.Set([]byte("z"), []byte("1"))
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(r Reader) error {
		if _, err := r.Get([]byte("k00")); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted key: %v", err)
		}
		if _, err := r.Get([]byte("z")); err != nil {
			t.Errorf("batched key: %v", err)
		}
		return nil
	})
}

// TestConflictsRetried: concurrent read-modify-write increments of one key
// must all land (serializable transactions, retried on conflict).
func TestConflictsRetried(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				err := db.Update(ctx, func(txn Txn) error {
					v, err := txn.Get([]byte("n"))
					if errors.Is(err, ErrNotFound) {
						v, err = []byte{0, 0}, nil
					}
					if err != nil {
						return err
					}
					n := int(v[0])<<8 | int(v[1])
					n++
					return txn.Set([]byte("n"), []byte{byte(n >> 8), byte(n)})
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	db.View(ctx, func(r Reader) error {
		v, _ := r.Get([]byte("n"))
		if n := int(v[0])<<8 | int(v[1]); n != 200 {
			t.Errorf("lost updates: %d of 200", n)
		}
		return nil
	})
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\xff": "b", "\xff\xff": "", "": ""} {
		if got := string(PrefixEnd([]byte(in))); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}
