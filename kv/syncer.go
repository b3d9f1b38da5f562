package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// syncer makes Badger's logs durable with group commit. Badger's own
// synchronous mode syncs its write-ahead log once per transaction, one after
// the other, so concurrent commits never share an fsync; instead Badger runs
// with asynchronous writes and every committer waits for one sync round that
// started after its write completed. One round fsyncs every memtable WAL
// (*.mem, including ones rotated since the write) and value log (*.vlog) and
// the directory, so it also covers files Badger created or rotated meanwhile.
// Tables (*.sst) and the MANIFEST are synced by Badger itself.
type syncer struct {
	dir string

	mu       sync.Mutex // guards everything below
	cond     *sync.Cond
	started  uint64 // rounds begun
	finished uint64 // rounds completed
	running  bool
	errRound uint64 // last round that failed, and why
	err      error
	files    map[string]*os.File // open handles of log files; used by the leader only
}

func newSyncer(dir string) *syncer {
	s := &syncer{dir: dir, files: map[string]*os.File{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// wait returns once a sync round that began after the call has completed.
// The first waiter to find no round running performs it for everyone.
func (s *syncer) wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := s.started + 1
	for s.finished < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		round := s.started
		s.mu.Unlock()
		err := s.round()
		s.mu.Lock()
		s.running = false
		s.finished = round
		if err != nil {
			s.errRound, s.err = round, err
		}
		s.cond.Broadcast()
	}
	if s.errRound >= want {
		return s.err
	}
	return nil
}

// round fsyncs the logs and the directory.
func (s *syncer) round() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("kv sync: %w", err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		present[name] = true
		f, ok := s.files[name]
		if !ok {
			f, err = os.Open(filepath.Join(s.dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed and removed since the listing
			}
			if err != nil {
				return fmt.Errorf("kv sync: %w", err)
			}
			s.files[name] = f
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("kv sync %s: %w", name, err)
		}
	}
	for name, f := range s.files {
		if !present[name] {
			f.Close()
			delete(s.files, name)
		}
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("kv sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("kv sync dir: %w", err)
	}
	return nil
}

func (s *syncer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, f := range s.files {
		f.Close()
		delete(s.files, name)
	}
}
