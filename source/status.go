package source

import (
	"context"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/kv"
)

// Status is how much of an attached source is local, and its prefetch.
type Status struct {
	Source Info
	// Scanned says the counts below were taken (Status with scan false
	// leaves them zero).
	Scanned bool
	// Entries and Bytes are the source's lazy entries on its branch (not
	// objects written over its prefix) and their size; LocalEntries are
	// those whose every block is local, LocalBytes the bytes of local
	// blocks.
	Entries, Bytes           int64
	LocalEntries, LocalBytes int64
	// Prefetch is the prefetch under way, else the last one (nil: none).
	Prefetch *PrefetchInfo
}

// Status returns how much of source id is local. With scan it walks the
// source's entries on its branch and scans the side index once per entry
// (one range scan over the entry's block records, a page of 1,000
// entries per kv read transaction): its cost grows with the entries and
// their blocks, like listing the prefix plus reading one ~35-byte record
// a chunk. Without scan it costs one record read: what a poller of a
// prefetch wants.
func (r *Registry) Status(ctx context.Context, id string, scan bool) (*Status, error) {
	// The job is looked up before the record: a job leaves the registry
	// only once its outcome is stored, so a record read after finding no
	// job holds that outcome (read first, it could still say running).
	j := r.prefetchOf(id)
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &Status{Source: rec.Info, Prefetch: rec.Prefetch}
	if j != nil {
		st.Prefetch = j.snapshot()
	}
	st.Source.Prefetch = nil
	if !scan {
		return st, nil
	}
	err = r.walkOwned(ctx, rec, rec.Prefix, func(page []branch.Object) error {
		return r.db.View(ctx, func(rd kv.Reader) error {
			for _, o := range page {
				n, err := localBytes(rd, o.Entry)
				if err != nil {
					return err
				}
				st.Entries, st.Bytes, st.LocalBytes = st.Entries+1, st.Bytes+o.Entry.Size, st.LocalBytes+n
				if n == o.Entry.Size {
					st.LocalEntries++
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	st.Scanned = true
	return st, nil
}
