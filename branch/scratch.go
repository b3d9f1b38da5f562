package branch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Scratch files (the scratch retention class) are a run's working files:
// never merged out of the branch they were written on (see threeWay),
// and deleted from it once their time to live runs out. Each write of
// one indexes it by expiry (SX/), in the write's transaction; the sweep
// (ExpireScratch) deletes the version it indexed, unless the key was
// written again since.

// DefaultScratchTTL is how long a scratch file lives unless the service
// is told otherwise (SetScratchTTL).
const DefaultScratchTTL = 24 * time.Hour

// SetScratchTTL sets how long scratch files written from now on live.
func (s *Service) SetScratchTTL(d time.Duration) { s.scratchTTL.Store(int64(d)) }

func (s *Service) scratchLife() time.Duration {
	if d := time.Duration(s.scratchTTL.Load()); d > 0 {
		return d
	}
	return DefaultScratchTTL
}

// noteScratch indexes e, just staged as key on v's branch, when it is a
// scratch file.
func (s *Service) noteScratch(txn setter, v *view, key string, e *manifest.Entry) error {
	if e.Retention != manifest.RetentionScratch {
		return nil
	}
	at := time.Now().Add(s.scratchLife()).UnixNano()
	k := binary.BigEndian.AppendUint64([]byte(keyspace.Scratch), uint64(at))
	k = u64(u64(k, v.rr.ID), v.br.ID)
	val := appendString(appendString(nil, v.rr.Name), v.br.Name)
	return txn.Set(append(k, key...), append(val, e.VersionID...))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// scratchRecord is one SX/ record.
type scratchRecord struct {
	kvKey             []byte
	key               string
	repo, branch, vid string
}

func decodeScratch(k, v []byte) (scratchRecord, error) {
	r := scratchRecord{kvKey: append([]byte(nil), k...)}
	head := len(keyspace.Scratch) + 24
	if len(k) < head {
		return r, fmt.Errorf("scratch record: %w", manifest.ErrCorrupt)
	}
	r.key = string(k[head:])
	for _, dst := range []*string{&r.repo, &r.branch} {
		n, m := binary.Uvarint(v)
		if m <= 0 || n > uint64(len(v)-m) {
			return r, fmt.Errorf("scratch record: %w", manifest.ErrCorrupt)
		}
		*dst, v = string(v[m:m+int(n)]), v[m+int(n):]
	}
	r.vid = string(v)
	return r, nil
}

// scratchBatch is how many due SX/ records one pass of the sweep holds.
const scratchBatch = 512

// ExpireScratch deletes every scratch file whose time to live ran out
// before now, from the branch it was written on (a delete marker, as a
// DELETE would), unless its key holds another version since, and calls
// done for each deleted. A branch that refuses writes keeps the file. It
// works in batches, so a sweep holds scratchBatch records at a time
// whatever is due.
func (s *Service) ExpireScratch(ctx context.Context, now time.Time, done func(repo, branch, key string)) (int, error) {
	n := 0
	for {
		due, err := s.dueScratch(ctx, now)
		if err != nil || len(due) == 0 {
			return n, err
		}
		for _, rec := range due {
			gone, err := s.expireOne(ctx, rec)
			if err != nil {
				return n, err
			}
			if gone {
				n++
				if done != nil {
					done(rec.repo, rec.branch, rec.key)
				}
			}
		}
	}
}

// dueScratch reads up to scratchBatch SX/ records due before now. A
// record that does not decode comes back with an empty repo: expireOne
// only drops it.
func (s *Service) dueScratch(ctx context.Context, now time.Time) ([]scratchRecord, error) {
	var due []scratchRecord
	end := binary.BigEndian.AppendUint64([]byte(keyspace.Scratch), uint64(now.UnixNano()))
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Range{Start: []byte(keyspace.Scratch), End: end}, func(k, v []byte) error {
			rec, err := decodeScratch(k, v)
			if err != nil {
				rec = scratchRecord{kvKey: append([]byte(nil), k...)}
			}
			if due = append(due, rec); len(due) == scratchBatch {
				return kv.ErrStop
			}
			return nil
		})
	})
	return due, err
}

// expireOne deletes rec's version if it is still current, and the record.
func (s *Service) expireOne(ctx context.Context, rec scratchRecord) (bool, error) {
	if rec.repo == "" {
		return false, s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(rec.kvKey) })
	}
	e, err := s.Get(ctx, rec.repo, rec.branch, rec.key)
	gone := false
	switch {
	case err == nil && e.VersionID == rec.vid:
		_, err = s.Delete(ctx, rec.repo, rec.branch, rec.key, Condition{IfMatch: e.ETag})
		gone = err == nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrProtected) && !errors.Is(err, ErrPrecondition) {
		return false, err
	}
	return gone, s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(rec.kvKey) })
}
