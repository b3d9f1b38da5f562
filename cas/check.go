package cas

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// Problem is one inconsistency found by Check.
type Problem struct {
	Hash   chunk.Hash
	Detail string
}

// Stats summarises the store.
type Stats struct {
	Chunks       int
	Bytes        int64
	InlineChunks int
	Segments     int
	SegmentBytes int64
}

// Check verifies that every indexed chunk is readable and hashes to its
// name. It reports each problem through report and returns the store's size.
func (s *Store) Check(ctx context.Context, report func(Problem)) (Stats, error) {
	var st Stats
	var hashes []chunk.Hash
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyPrefix)), func(k, v []byte) error {
			var h chunk.Hash
			copy(h[:], k[len(keyPrefix):])
			rec, err := decodeRecord(v)
			if err != nil {
				report(Problem{Hash: h, Detail: "undecodable index record"})
				return nil
			}
			st.Chunks++
			st.Bytes += rec.size
			if rec.kind == kindInline {
				st.InlineChunks++
			}
			hashes = append(hashes, h)
			return nil
		})
	})
	if err != nil {
		return st, fmt.Errorf("check: %w", err)
	}
	for _, h := range hashes {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		rec, err := s.lookup(ctx, h)
		if err != nil {
			continue // deleted since the scan
		}
		if err := s.Read(ctx, io.Discard, h, 0, rec.size); err != nil {
			report(Problem{Hash: h, Detail: err.Error()})
		}
	}
	if s.remote != nil {
		err = s.remote.List(ctx, func(_ string, size int64, _ time.Time) error {
			st.Segments++
			st.SegmentBytes += size
			return nil
		})
		return st, err
	}
	_ = s.walkSegments(func(id uint64, path string, info fs.FileInfo) error {
		st.Segments++
		st.SegmentBytes += info.Size()
		return nil
	})
	return st, nil
}
