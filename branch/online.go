package branch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Collections beside other gateways. One gateway collects (Collect, with
// the Admission its guard gives it); every other gateway on the store
// takes part through HoldForCollection until it ends:
//
//   - commits, merges, imports, picks, restores and checkpoints wait
//     until tree nodes and commits are swept (Part.ResumeCommits), as
//     they wait for a collection of their own gateway (tree nodes and
//     commits carry no time, so the mark must see a still tree);
//   - uploads stamp the chunks they write or reuse with the collection's
//     start (cas.Store.Floor), which the sweep spares;
//   - writes mark the content lists they write (ListMark), which the
//     sweep spares too.
//
// A gateway acknowledges only once every write it began before is over,
// so the mark, which starts when all have acknowledged, sees them.

// Admission is what a collection's guard (SetCollectGuard) admits it
// with. The zero value, with a Release, is a collection alone.
type Admission struct {
	// Release ends the admission; Collect calls it when done.
	Release func()
	// Epoch names the collection when other gateways take part ("":
	// none); their list marks carry it.
	Epoch string
	// Start is the time the other gateways stamp from (0: now).
	Start int64
	// Spare lists the segments the other gateways had open.
	Spare []uint64
	// Skew is the clock difference tolerated between writers.
	Skew time.Duration
	// Check, if set, says whether the collection may still go on (its
	// lock is held); it runs in every transaction that deletes.
	Check func(kv.Reader) error
	// MetaSwept, if set, is told when tree nodes and commits are swept:
	// the other gateways may resume their commits (Part.ResumeCommits).
	MetaSwept func()
}

// Part is this gateway's part in another gateway's collection
// (HoldForCollection).
type Part struct {
	// Open lists the segments this gateway's uploads had open when it
	// began to take part, which that collection must spare.
	Open   []uint64
	resume sync.Once
	end    sync.Once
	s      *Service
}

// ResumeCommits lets this gateway's commits, merges and the like go on
// once the collection has swept tree nodes and commits; writes still
// stamp and mark until End.
func (p *Part) ResumeCommits() { p.resume.Do(p.s.gcMu.Unlock) }

// End ends the part.
func (p *Part) End() {
	p.end.Do(func() {
		p.s.chunks.ClearFloor()
		p.s.listEpoch.Store(nil)
		p.ResumeCommits()
	})
}

func (a Admission) check(r kv.Reader) error {
	if a.Check == nil {
		return nil
	}
	return a.Check(r)
}

// HoldForCollection makes this gateway take part in the collection epoch
// that another gateway runs over the shared store, stamping from start
// (see the package's online collections). It returns once every write
// this gateway began before is over; the Part ends it.
func (s *Service) HoldForCollection(ctx context.Context, epoch string, start int64) (*Part, error) {
	s.gcMu.Lock()
	s.listEpoch.Store(&epoch)
	p := &Part{s: s}
	if err := s.drainUnmarked(ctx); err != nil {
		p.End()
		return nil, err
	}
	open, err := s.chunks.Floor(ctx, start)
	if err != nil {
		p.End()
		return nil, err
	}
	p.Open = open
	return p, nil
}

// drainUnmarked waits until no write that began without a collection's
// marks is still in flight.
func (s *Service) drainUnmarked(ctx context.Context) error {
	for {
		n := s.unmarked.Load()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d writes begun before the collection: %w", n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// enterWrite begins a write that stages recs: their content lists are
// pinned for this gateway's own collections, and marked for another's
// while one runs. done ends the write.
func (s *Service) enterWrite(recs []Recorder) (_ []Recorder, done func()) {
	unpin := s.touchLists(recs)
	s.unmarked.Add(1)
	epoch := s.listEpoch.Load()
	if epoch == nil {
		return recs, func() {
			unpin()
			s.unmarked.Add(-1)
		}
	}
	s.unmarked.Add(-1)
	if m := marksOf(*epoch, recs); len(m.lists) > 0 {
		recs = append(recs[:len(recs):len(recs)], m)
	}
	return recs, unpin
}

// SetFence makes head-moving work (commits, merges and the like, new
// repositories, forks from a commit ID) and, through the chunk store,
// every write that references chunks ask fence first and fail with its
// error: a gateway whose membership lapsed must not write beside a
// collection that counts it gone. Call it before serving.
func (s *Service) SetFence(fence func() error) {
	s.fence = fence
	s.chunks.SetFence(fence)
}

// fenced is the fence's verdict (nil without one).
func (s *Service) fenced() error {
	if s.fence == nil {
		return nil
	}
	return s.fence()
}

// listMarks is a Recorder that marks content lists for collection epoch.
type listMarks struct {
	epoch string
	lists []chunk.Hash
}

func marksOf(epoch string, recs []Recorder) listMarks {
	m := listMarks{epoch: epoch}
	for _, r := range recs {
		if c, ok := r.(ContentRecord); ok && !c.Hash.IsZero() {
			m.lists = append(m.lists, c.Hash)
		}
	}
	return m
}

// Record implements Recorder.
func (m listMarks) Record(txn kv.Txn) error {
	for _, h := range m.lists {
		if err := txn.Set(listMarkKey(h), []byte(m.epoch)); err != nil {
			return err
		}
	}
	return nil
}

func listMarkKey(h chunk.Hash) []byte {
	return append([]byte(keyspace.ListMark), h[:]...)
}

// listBatch bounds the content lists deleted per transaction.
const listBatch = 256

// deleteLists deletes the unmarked content lists; beside other gateways,
// each in a transaction that spares a list marked for this collection
// (the mark and the list's rewrite are in the marking write's
// transaction, so one of the two sees the other). It returns how many it
// deleted.
func (s *Service) deleteLists(ctx context.Context, lists []chunk.Hash, adm Admission) (int, error) {
	if adm.Epoch == "" {
		keys := make([][]byte, len(lists))
		for i, h := range lists {
			keys[i] = manifest.ContentKey(h)
		}
		return len(keys), s.deleteKeys(ctx, keys)
	}
	deleted := 0
	for len(lists) > 0 {
		batch := lists[:min(len(lists), listBatch)]
		lists = lists[len(batch):]
		n := 0
		err := s.db.Update(ctx, func(txn kv.Txn) error {
			n = 0
			if err := adm.check(txn); err != nil {
				return err
			}
			for _, h := range batch {
				if v, err := txn.Get(listMarkKey(h)); err == nil && string(v) == adm.Epoch {
					continue
				}
				if err := txn.Delete(manifest.ContentKey(h)); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return deleted, err
		}
		deleted += n
	}
	return deleted, s.clearListMarks(ctx)
}

// clearListMarks deletes every list mark: they matter only to the
// collection that is ending (a later write's stale mark is ignored by
// the next, which carries another epoch, and cleared by it).
func (s *Service) clearListMarks(ctx context.Context) error {
	var keys [][]byte
	err := s.scan(ctx, []byte(keyspace.ListMark), func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return err
	}
	return s.deleteKeys(ctx, keys)
}
