package cas

import (
	"path/filepath"
	"testing"

	"github.com/agentnas/nas/kv"
)

// testStore opens a store with options o and its Badger database under a
// new temporary directory ("kv" and "chunks" inside), both closed when tb
// ends. Tests inside the package use it; castest.OpenWith is the same
// for tests outside.
func testStore(tb testing.TB, o Options) (*Store, kv.DB) {
	tb.Helper()
	dir := tb.TempDir()
	db, err := kv.OpenBadger(filepath.Join(dir, "kv"), kv.BadgerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	s, err := Open(filepath.Join(dir, "chunks"), db, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, db
}
