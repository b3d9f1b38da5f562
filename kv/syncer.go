package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// syncer makes Badger's logs durable with group commit. Badger's own
// synchronous mode syncs its write-ahead log once per transaction, one after
// the other, so concurrent commits never share an fsync; instead Badger runs
// with asynchronous writes and every committer waits for one sync round that
// started after its write completed.
//
// A round syncs the data of every memtable WAL (*.mem, including ones
// rotated since the write); the value logs (*.vlog) only when a write since
// the last round put a value in one (Badger writes nothing else there, see
// valueThreshold); and, with every log, the directory whenever the set of
// logs changed since the last round that succeeded, so it also covers files
// Badger created or rotated meanwhile. A flush costs the same whether the
// file had anything to write or not, so a round of one small commit is one
// flush, not three. Tables (*.sst) and the MANIFEST are synced by Badger
// itself.
type syncer struct {
	dir string

	mu       sync.Mutex // guards everything below
	cond     *sync.Cond
	started  uint64 // rounds begun
	finished uint64 // rounds completed
	running  bool
	errRound uint64 // last round that failed, and why
	err      error
	vlog     bool // a write since the last round began put a value in a value log

	// Used by the round's leader only:
	files     map[string]*os.File // open handles of log files
	known     map[string]bool     // the logs as of the last round that succeeded (nil: none yet)
	stamp     dirStamp            // the directory as of the last listing
	quiet     bool                // it had been unchanged for quietFor then
	quietFor  time.Duration       // quietDir (shorter in tests)
	stampable bool                // its file system keeps change times itself (not a network one)
	// synced and listed, when set, are told each file a round syncs and
	// each listing of the directory (tests).
	synced func(name string)
	listed func()
}

func newSyncer(dir string) *syncer {
	s := &syncer{dir: dir, files: map[string]*os.File{}, quietFor: quietDir, stampable: stampable(dir)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// wait returns once a sync round that began after the call has completed.
// vlog says the caller's write put a value in a value log. The first waiter
// to find no round running performs it for everyone.
func (s *syncer) wait(vlog bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Set before want is taken: the first round to begin after this point,
	// the one that consumes the mark, began after the caller's write.
	s.vlog = s.vlog || vlog
	want := s.started + 1
	for s.finished < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		round, withVlog := s.started, s.vlog
		s.vlog = false
		s.mu.Unlock()
		err := s.round(withVlog)
		s.mu.Lock()
		s.running = false
		s.finished = round
		if err != nil {
			s.errRound, s.err = round, err
			s.vlog = s.vlog || withVlog // the next round tries again
		}
		s.cond.Broadcast()
	}
	if s.errRound >= want {
		return s.err
	}
	return nil
}

// round syncs the logs, and the directory when its logs changed.
func (s *syncer) round(vlog bool) (err error) {
	present, err := s.logs()
	if err != nil {
		return err
	}
	changed := !maps.Equal(present, s.known)
	s.known = nil // until this round succeeds
	for name := range present {
		if strings.HasSuffix(name, ".vlog") && !vlog && !changed {
			continue
		}
		if err := s.syncFile(name); err != nil {
			return err
		}
	}
	for name, f := range s.files {
		if !present[name] {
			f.Close()
			delete(s.files, name)
		}
	}
	if changed {
		if err := s.syncDir(); err != nil {
			return err
		}
	}
	s.known = present
	return nil
}

// quietDir is how long the directory must have gone unchanged before a
// listing of it may stand for later rounds: far longer than the coarse
// clock tick of its change time, so that a change after the listing
// cannot carry the same time.
const quietDir = time.Second

// logs returns the directory's logs. Listing it costs more than a flush's
// share of a round (every table is named), so a round whose directory
// stat says is as it was at the last listing, which came after it had
// been quiet for quietDir, reuses what that listing found. Any entry
// added, removed or renamed changes the directory's change time.
func (s *syncer) logs() (map[string]bool, error) {
	now := time.Now()
	st, ok := dirStamp{}, false
	if s.stampable {
		st, ok = statDir(s.dir)
	}
	if ok && s.quiet && st == s.stamp && s.known != nil {
		return s.known, nil
	}
	if s.listed != nil {
		s.listed()
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.quiet = false
		return nil, fmt.Errorf("kv sync: %w", err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".mem") || strings.HasSuffix(name, ".vlog") {
			present[name] = true
		}
	}
	s.stamp, s.quiet = st, ok && now.Sub(st.changed()) > s.quietFor
	return present, nil
}

// syncFile makes the data of log name durable; a log removed since the
// listing (flushed into a table) needs nothing.
func (s *syncer) syncFile(name string) error {
	f, ok := s.files[name]
	if !ok {
		var err error
		f, err = os.Open(filepath.Join(s.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kv sync: %w", err)
		}
		s.files[name] = f
	}
	if s.synced != nil {
		s.synced(name)
	}
	if err := syncData(f); err != nil {
		return fmt.Errorf("kv sync %s: %w", name, err)
	}
	return nil
}

// syncDir makes the directory's entries durable.
func (s *syncer) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("kv sync: %w", err)
	}
	defer d.Close()
	if s.synced != nil {
		s.synced(".")
	}
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
