package branch_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// TestCollectSparesWritesOfAnotherGateway: two services on one store
// stand for two gateways. While "there" takes part in a collection "here"
// runs, the content lists its writes store are marked with the epoch and
// the chunks they reuse are stamped, and the collection spares both
// though no entry it marked names them; a list written without a mark
// goes, and the marks are cleared.
func TestCollectSparesWritesOfAnotherGateway(t *testing.T) {
	ctx := context.Background()
	chunks, db, dir := castest.Open(t)
	here := branch.New(db, chunks, nil)
	thereChunks, err := cas.Open(filepath.Join(dir, "chunks"), db, cas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer thereChunks.Close()
	there := branch.New(db, thereChunks, nil)
	if _, err := here.CreateRepo(ctx, "gcm", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	list := func(seed byte) branch.ContentRecord {
		data := (&manifest.Content{Chunks: []chunk.Ref{{Hash: chunk.Sum([]byte{seed}), Size: 1}}}).Encode()
		return branch.ContentRecord{Hash: chunk.Sum(data), Data: data}
	}
	unmarked, marked := list(1), list(2)
	if _, err := here.Put(ctx, "gcm", "main", "a", &manifest.Entry{Size: 1, ETag: "a"}, branch.Condition{}, unmarked); err != nil {
		t.Fatal(err)
	}

	// Bytes of an object deleted on "here", written again on "there":
	// their chunks are garbage to the mark, but stamped by the write.
	reused := randData(31, 3<<20)
	e := putData(t, here, "gcm", "main", "gone", reused)
	if _, err := here.Delete(ctx, "gcm", "main", "gone", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixNano()
	part, err := there.HoldForCollection(ctx, "gc_test", start)
	if err != nil {
		t.Fatal(err)
	}
	defer part.End()
	if _, err := there.Put(ctx, "gcm", "main", "b", &manifest.Entry{Size: 1, ETag: "b"}, branch.Condition{}, marked); err != nil {
		t.Fatal(err)
	}
	again := putData(t, there, "gcm", "main", "again", reused)
	if _, err := there.Delete(ctx, "gcm", "main", "again", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if !exists(t, db, append([]byte(keyspace.ListMark), marked.Hash[:]...)) {
		t.Fatal("a write while taking part in a collection left no mark on its content list")
	}
	here.SetCollectGuard(func(context.Context) (branch.Admission, error) {
		return branch.Admission{Release: func() {}, Epoch: "gc_test", Start: start}, nil
	})
	time.Sleep(time.Millisecond)
	st, err := here.Collect(ctx, branch.GCOptions{Retention: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, db, manifest.ContentKey(marked.Hash)) {
		t.Fatalf("the marked content list was collected: %+v", st)
	}
	if exists(t, db, manifest.ContentKey(unmarked.Hash)) {
		t.Fatal("an unreferenced, unmarked content list survived")
	}
	if exists(t, db, append([]byte(keyspace.ListMark), marked.Hash[:]...)) {
		t.Fatal("the collection left its marks")
	}
	if st.Chunks.SkippedRecent == 0 {
		t.Fatalf("the chunks the other gateway reused were not stamped: %+v", st.Chunks)
	}
	if !bytes.Equal(readData(t, here, again), reused) || !bytes.Equal(readData(t, here, e), reused) {
		t.Fatal("the reused chunks were collected")
	}
}

func exists(t *testing.T, db kv.DB, key []byte) bool {
	t.Helper()
	found := false
	err := db.View(context.Background(), func(r kv.Reader) error {
		_, err := r.Get(key)
		found = err == nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// stall is a Recorder that blocks its write's transaction until released.
type stall struct{ entered, release chan struct{} }

func (s stall) Record(kv.Txn) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return nil
}

// TestHoldWaitsForWritesBegunBefore: taking part in another gateway's
// collection returns only once the writes this gateway began before are
// over, so that collection's mark sees them.
func TestHoldWaitsForWritesBegunBefore(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "gch", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	st := stall{entered: make(chan struct{}, 1), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(ctx, "gch", "main", "k", &manifest.Entry{Size: 1, ETag: "k"}, branch.Condition{}, st)
		done <- err
	}()
	<-st.entered
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.HoldForCollection(short, "gc_wait", time.Now().UnixNano()); err == nil {
		t.Fatal("took part while a write begun before was in flight")
	}
	close(st.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	part, err := s.HoldForCollection(ctx, "gc_wait", time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	part.End()
}

// TestPartHoldsCommitsUntilTreeSwept: while this gateway takes part in a
// collection its commits wait, until the collection has swept tree
// nodes and commits (ResumeCommits); End is then the part's end only.
func TestPartHoldsCommitsUntilTreeSwept(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "gcp", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "gcp", "main", "k", "e1")
	part, err := s.HoldForCollection(ctx, "gc_part", time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Commit(ctx, "gcp", "main", branch.CommitOptions{Message: "during"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a commit ran while the collection marked: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	part.ResumeCommits()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	part.End()
	part.End() // idempotent
}

// TestFenceRefusesWrites: while the fence says no (this gateway's
// membership lapsed), commits, writes of chunks and new repositories
// fail with its error; reads and deletes are not refused.
func TestFenceRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "gcf", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	e := putData(t, s, "gcf", "main", "k", []byte("before"))
	lapsed := errors.New("membership lapsed")
	var fenced bool
	s.SetFence(func() error {
		if fenced {
			return lapsed
		}
		return nil
	})
	fenced = true
	if _, err := s.Commit(ctx, "gcf", "main", branch.CommitOptions{Message: "x"}); !errors.Is(err, lapsed) {
		t.Errorf("commit while fenced: %v", err)
	}
	if _, err := s.CreateRepo(ctx, "gcf2", branch.CreateRepoOptions{}); !errors.Is(err, lapsed) {
		t.Errorf("new repository while fenced: %v", err)
	}
	up := s.Chunks().NewUpload()
	defer up.Close()
	if _, err := s.Put(ctx, "gcf", "main", "k2", &manifest.Entry{Size: 0, ETag: "e"}, branch.Condition{}, up); !errors.Is(err, lapsed) {
		t.Errorf("a write of chunks while fenced: %v", err)
	}
	if !bytes.Equal(readData(t, s, e), []byte("before")) {
		t.Error("a read while fenced failed")
	}
	fenced = false
	if _, err := s.Commit(ctx, "gcf", "main", branch.CommitOptions{Message: "after"}); err != nil {
		t.Fatal(err)
	}
}
