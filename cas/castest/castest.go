// Package castest opens the real storage of a gateway for tests: a Badger
// database and a chunk store in the test's temporary directory, closed
// when the test ends. Tests build their services (branch, gate, s3api) on
// it instead of on fakes.
package castest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/kv"
)

// Open returns a chunk store and its database under a new temporary
// directory, which it also returns ("kv" and "chunks" inside it). Both
// are closed when tb ends, the store first.
func Open(tb testing.TB) (*cas.Store, kv.DB, string) {
	tb.Helper()
	return OpenWith(tb, cas.Options{})
}

// OpenWith is Open with the store's options o.
func OpenWith(tb testing.TB, o cas.Options) (*cas.Store, kv.DB, string) {
	tb.Helper()
	dir := tb.TempDir()
	db, err := kv.OpenBadger(filepath.Join(dir, "kv"), kv.BadgerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	s, err := cas.Open(filepath.Join(dir, "chunks"), db, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, db, dir
}

// FindOnDisk returns a file under dir whose bytes contain probe, or "":
// how tests check that content has left the disk.
func FindOnDisk(tb testing.TB, dir string, probe []byte) string {
	tb.Helper()
	found := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, probe) {
			found = p
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return found
}
