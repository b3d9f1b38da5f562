package record

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/agentnas/nas/kv"
)

// Filter selects events for List. Empty fields match everything; set
// fields must all match. Run, Lease and Commit are served from indexes, so
// a listing by one of them reads only the matching records.
type Filter struct {
	// From is the first sequence number to consider, and the paging
	// cursor: after a page whose last event had Seq s, pass From = s+1.
	From   uint64
	Run    string
	Lease  string
	Repo   string
	Commit string // Subject.Commit, exact
	Kinds  []Kind // any of these
	// Limit stops the listing after this many events; 0 means no limit.
	Limit int
}

func (f *Filter) match(e *Event) bool {
	return (f.Run == "" || e.Run == f.Run) &&
		(f.Lease == "" || e.Lease == f.Lease) &&
		(f.Repo == "" || e.Repo == f.Repo) &&
		(f.Commit == "" || e.Subject.Commit == f.Commit) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind))
}

// List calls fn for every event that matches f, in sequence order. It reads
// one consistent snapshot of the log. Returning ErrStop from fn ends the
// listing without error; any other error ends it and is returned.
func (r *Recorder) List(ctx context.Context, f Filter, fn func(Event) error) error {
	return r.db.View(ctx, func(rd kv.Reader) error {
		return list(ctx, rd, f, fn)
	})
}

func list(ctx context.Context, rd kv.Reader, f Filter, fn func(Event) error) error {
	n := 0
	visit := func(e Event) error {
		if !f.match(&e) {
			return nil
		}
		if err := fn(e); err != nil {
			return err
		}
		n++
		if f.Limit > 0 && n >= f.Limit {
			return ErrStop
		}
		return nil
	}
	field, val := indexCommit, f.Commit
	switch {
	case f.Commit != "":
	case f.Lease != "":
		field, val = indexLease, f.Lease
	case f.Run != "":
		field, val = indexRun, f.Run
	default:
		return rd.Scan(kv.Range{Start: eventKey(f.From), End: kv.PrefixEnd(prefixEvent)}, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			seq, ok := seqOfEventKey(k)
			if !ok {
				return fmt.Errorf("stray key %q among records: %w", k, ErrCorrupt)
			}
			e, _, err := decodeRecord(v)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			if e.Seq != seq {
				return fmt.Errorf("key %d holds record %d: %w", seq, e.Seq, ErrCorrupt)
			}
			return visit(e)
		})
	}
	prefix := indexPrefix(field, val)
	start := binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), f.From)
	return rd.Scan(kv.Range{Start: start, End: kv.PrefixEnd(prefix)}, func(k, _ []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(k) != len(prefix)+8 {
			return fmt.Errorf("malformed index key %q: %w", k, ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(k[len(prefix):])
		e, err := getEvent(rd, seq)
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("index entry %q: %w: %w", k, err, ErrCorrupt)
		}
		if err != nil {
			return err
		}
		return visit(e)
	})
}
