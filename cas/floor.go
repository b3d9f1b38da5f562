package cas

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// A floor is how a store that shares its index with other gateways takes
// part in a collection one of them runs. The collector spares every index
// record created at or after its cycle's start (CycleOptions.Start); its
// own uploads are protected in memory (pins), but another gateway's are
// not. So while the floor is set, every Record stamps the records it
// writes, and the records of the existing chunks its upload deduplicated
// against or pinned, with a creation time of at least the floor, inside
// the transaction that references them. The collector's deleting
// transaction re-reads each record, so the two are serialized: either the
// stamp comes first and the chunk is spared, or the delete does and the
// write fails with ErrCollected (the client retries) instead of
// committing a reference to a chunk that is gone.

// ErrCollected refuses a write that references a chunk a collection
// deleted while the write was in flight (a chunk it deduplicated against).
// It says the store is unavailable, so the edges answer 503 and clients
// send the write again, which then stores the bytes anew.
var ErrCollected = fmt.Errorf("a chunk this write reuses was collected while it was written; retry: %w", kv.ErrUnavailable)

// floorBatch bounds the records Floor re-stamps per transaction.
const floorBatch = 256

// Floor sets the floor to at (unix nanoseconds) and returns once it holds
// for every reference this store will still commit: every upload that
// recorded without it has closed (its transaction is over, so the
// collector's mark sees it), and every chunk pinned now is stamped. It
// returns the segments that uploads have open, which the collector must
// spare: they may be older than at and recorded only later. Floor and
// ClearFloor must not overlap.
func (s *Store) Floor(ctx context.Context, at int64) (open []uint64, err error) {
	s.mu.Lock()
	s.floor = at
	s.mu.Unlock()
	if err := s.drainUnfloored(ctx); err != nil {
		return nil, err
	}
	if err := s.stampPinned(ctx, at); err != nil {
		return nil, err
	}
	return s.OpenSegments(), nil
}

// SetFence makes every Record ask fence first and fail with its error (a
// gateway whose membership lapsed must not commit references to chunks
// beside a collection that counts it gone). Call it before serving.
func (s *Store) SetFence(fence func() error) { s.fence = fence }

// ClearFloor ends the floor once the collection is over.
func (s *Store) ClearFloor() {
	s.mu.Lock()
	s.floor = 0
	s.mu.Unlock()
}

// drainUnfloored waits until no upload that recorded without the floor is
// still open.
func (s *Store) drainUnfloored(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := s.unfloored
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d uploads recorded before the collection: %w", n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stampPinned stamps the records of the chunks pinned now; chunks not yet
// recorded are stamped by their Record.
func (s *Store) stampPinned(ctx context.Context, at int64) error {
	s.mu.Lock()
	hs := make([]chunk.Hash, 0, len(s.pins))
	for h := range s.pins {
		hs = append(hs, h)
	}
	s.mu.Unlock()
	for len(hs) > 0 {
		batch := hs[:min(len(hs), floorBatch)]
		hs = hs[len(batch):]
		err := s.db.Update(ctx, func(txn kv.Txn) error {
			for _, h := range batch {
				if err := stamp(txn, h, at); err != nil && !errors.Is(err, ErrCollected) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("stamp pinned chunks: %w", err)
		}
	}
	return nil
}

// OpenSegments lists the segments open uploads are writing.
func (s *Store) OpenSegments() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]uint64, 0, len(s.open))
	for id := range s.open {
		out = append(out, id)
	}
	return out
}

// stamp raises chunk h's creation time to at, in txn; a chunk that is not
// there is ErrCollected.
func stamp(txn kv.Txn, h chunk.Hash, at int64) error {
	v, err := txn.Get(indexKey(h))
	if errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("chunk %s: %w", h, ErrCollected)
	}
	if err != nil {
		return err
	}
	rec, err := decodeRecord(v)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", h, err)
	}
	if rec.created >= at {
		return nil
	}
	rec.created = at
	return txn.Set(indexKey(h), rec.encode())
}

// recordFloor returns the floor for u's Record (0: none) and counts u as
// recorded without one until it closes.
func (s *Store) recordFloor(u *Upload) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.floor == 0 && !u.unfloored {
		u.unfloored = true
		s.unfloored++
	}
	return s.floor
}

// stampReused stamps, in txn, every chunk u pinned without writing it.
func (u *Upload) stampReused(txn kv.Txn, at int64) error {
	done := make(map[chunk.Hash]struct{}, len(u.pinned))
	for _, h := range u.pinned {
		if _, ok := u.recs[h]; ok {
			continue
		}
		if _, ok := done[h]; ok {
			continue
		}
		done[h] = struct{}{}
		if err := stamp(txn, h, at); err != nil {
			return err
		}
	}
	return nil
}
