package kv

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// syncLog records the files each sync round syncs.
type syncLog struct {
	mu    sync.Mutex
	names []string
}

func (l *syncLog) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, name)
}

// take returns what was synced since the last take, sorted.
func (l *syncLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Sorted(slices.Values(l.names))
	l.names = nil
	return out
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRoundSyncsWhatChanged: the first round syncs every log and the
// directory; later rounds the memtable logs only, the value logs when a
// write marked them, and everything when a log came or went.
func TestRoundSyncsWhatChanged(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"00001.mem", "000001.vlog", "000001.sst", "MANIFEST"} {
		touch(t, filepath.Join(dir, n))
	}
	s := newSyncer(dir)
	defer s.close()
	var log syncLog
	s.synced = log.add
	steps := []struct {
		what string
		do   func()
		vlog bool
		want []string
	}{
		{"first round", nil, false, []string{".", "000001.vlog", "00001.mem"}},
		{"small write", nil, false, []string{"00001.mem"}},
		{"large value", nil, true, []string{"000001.vlog", "00001.mem"}},
		{"small write after it", nil, false, []string{"00001.mem"}},
		{"memtable rotated", func() { touch(t, filepath.Join(dir, "00002.mem")) }, false, []string{".", "000001.vlog", "00001.mem", "00002.mem"}},
		{"old memtable flushed", func() { os.Remove(filepath.Join(dir, "00001.mem")) }, false, []string{".", "000001.vlog", "00002.mem"}},
		{"a table added (Badger syncs those)", func() { touch(t, filepath.Join(dir, "000002.sst")) }, false, []string{"00002.mem"}},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		if err := s.wait(st.vlog); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if got := log.take(); !slices.Equal(got, st.want) {
			t.Errorf("%s: synced %v, want %v", st.what, got, st.want)
		}
	}
}

// TestVlogMarkDuringRound: a value-log write that completes while a round
// runs is synced by a later round, never lost to the running one's reset.
func TestVlogMarkDuringRound(t *testing.T) {
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "00001.mem"))
	touch(t, filepath.Join(dir, "000001.vlog"))
	s := newSyncer(dir)
	defer s.close()
	if err := s.wait(false); err != nil { // the first, full round
		t.Fatal(err)
	}
	var log syncLog
	inRound, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.synced = func(name string) {
		once.Do(func() { close(inRound); <-release })
		log.add(name)
	}
	first := make(chan error)
	go func() { first <- s.wait(false) }()
	<-inRound // a round without the value log runs
	second := make(chan error)
	go func() { second <- s.wait(true) }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.vlog })
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if got := log.take(); !slices.Equal(got, []string{"000001.vlog", "00001.mem", "00001.mem"}) {
		t.Fatalf("synced %v: the marked write's round must sync the value log", got)
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 100000 {
			t.Fatal("condition never held")
		}
		runtimeGosched()
	}
}

// TestLargeValueMarksTheValueLog: an Update or a Batch that sets a value
// the value log keeps syncs it; one of small values does not.
func TestLargeValueMarksTheValueLog(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var log syncLog
	db.syncer.synced = log.add
	set := func(n int) error {
		return db.Update(ctx, func(txn Txn) error { return txn.Set([]byte("k"), make([]byte, n)) })
	}
	batch := func(n int) error {
		b := db.Batch(ctx)
		b.Set([]byte("b"), make([]byte, n))
		return b.Flush()
	}
	if err := set(1); err != nil { // the first round syncs everything
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		do   func(int) error
		n    int
		vlog bool
	}{
		{"update, small", set, 100, false},
		{"update, just below", set, valueThreshold - 1, false},
		{"update, at the threshold", set, valueThreshold, true},
		{"batch, small", batch, 100, false},
		{"batch, large", batch, valueThreshold + 1, true},
	} {
		log.take()
		if err := c.do(c.n); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		got := log.take()
		if vlog := slices.ContainsFunc(got, func(n string) bool { return filepath.Ext(n) == ".vlog" }); vlog != c.vlog {
			t.Errorf("%s: synced %v, value log synced %v, want %v", c.what, got, vlog, c.vlog)
		}
	}
}

func runtimeGosched() { runtime.Gosched() }

// TestQuietDirectoryIsNotListed: once the directory has been unchanged
// for the quiet time, rounds reuse the last listing; a log created after
// it is still found (and synced, with the directory) by the next round.
func TestQuietDirectoryIsNotListed(t *testing.T) {
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "00001.mem"))
	s := newSyncer(dir)
	defer s.close()
	s.quietFor = 50 * time.Millisecond
	s.stampable = true // whatever file system the test's directory is on
	var log syncLog
	listings := 0
	s.synced, s.listed = log.add, func() { listings++ }
	round := func(what string, wantListings int, want ...string) {
		t.Helper()
		listings = 0
		if err := s.wait(false); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := log.take(); listings != wantListings || !slices.Equal(got, want) {
			t.Fatalf("%s: %d listings, synced %v; want %d, %v", what, listings, got, wantListings, want)
		}
	}
	round("first", 1, ".", "00001.mem")
	round("just changed: listed again", 1, "00001.mem")
	time.Sleep(100 * time.Millisecond)
	round("quiet, but stamped before", 1, "00001.mem")
	round("quiet and stamped", 0, "00001.mem")
	round("again", 0, "00001.mem")
	touch(t, filepath.Join(dir, "00002.mem"))
	round("a new log", 1, ".", "00001.mem", "00002.mem")
	os.Remove(filepath.Join(dir, "00001.mem"))
	round("a log gone", 1, ".", "00002.mem")
}
