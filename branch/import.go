package branch

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// ImportEntry is one object of an Import. With Delete set the key is
// removed instead (a delete marker is recorded, as a DELETE would).
type ImportEntry struct {
	Key    string
	Entry  *manifest.Entry
	Delete bool
}

// ImportOptions tunes ImportWith.
type ImportOptions struct {
	CommitOptions
	// AllowProtected lets the import commit to a protected branch. Only the
	// owner's source attach and refresh set it (a protected branch otherwise
	// changes only through merges); nothing a lease can call does.
	AllowProtected bool
}

// importBatch bounds the version records written per kv batch.
const importBatch = 1000

// Import writes a sorted stream of entries directly into a new commit on a
// branch, without staging: the bulk path for loading large data sets (and
// remote listings). Each entry gets a version ID and a version record as a
// PUT would. Staged changes of the branch are left as they are. The chunks
// and content lists the entries reference must already be durable.
func (s *Service) Import(ctx context.Context, repo, branch string, entries iter.Seq2[ImportEntry, error], o CommitOptions) (manifest.CommitID, error) {
	return s.ImportWith(ctx, repo, branch, entries, ImportOptions{CommitOptions: o})
}

// ImportWith is Import with options.
func (s *Service) ImportWith(ctx context.Context, repo, branch string, entries iter.Seq2[ImportEntry, error], o ImportOptions) (manifest.CommitID, error) {
	unlock, err := s.lockBranch(ctx, repo, branch)
	if err != nil {
		return manifest.CommitID{}, err
	}
	defer unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	var v *view
	err = s.db.View(ctx, func(r kv.Reader) (err error) {
		if o.AllowProtected {
			v, err = s.openView(ctx, r, repo, branch)
		} else {
			v, err = s.writableView(ctx, r, repo, branch)
		}
		return err
	})
	if err != nil {
		return manifest.CommitID{}, err
	}
	w := &importWriter{s: s, v: v}
	edits := func(yield func(tree.Edit, error) bool) {
		for ie, err := range entries {
			if err == nil {
				err = ValidKey(ie.Key)
			}
			if err != nil {
				yield(tree.Edit{}, err)
				return
			}
			st := s.importStaged(ie)
			w.maxSeq = st.seq
			// A write error ends the edits; close returns it.
			if w.err = w.write(ctx, ie.Key, st); w.err != nil {
				return
			}
			if !yield(tree.Edit{Key: []byte(ie.Key), Value: st.entry, Delete: st.del}, nil) {
				return
			}
		}
	}
	root, err := s.treeFor(v.rr).Apply(ctx, v.root, edits)
	if werr := w.close(); err == nil {
		err = werr
	}
	if err != nil {
		return manifest.CommitID{}, fmt.Errorf("import into %s/%s: %w", repo, branch, err)
	}
	return s.swapHead(ctx, v, root, w.maxSeq, 0, o.CommitOptions)
}

// importStaged returns what ie stages under a new version sequence: a
// delete marker, or its entry with a new version ID and, if it has none, a
// modification time.
func (s *Service) importStaged(ie ImportEntry) staged {
	seq := s.clk.next()
	if ie.Delete {
		return staged{del: true, seq: seq, vid: newVersionID(seq, rand.Uint32())}
	}
	e := *ie.Entry
	e.VersionID = newVersionID(seq, rand.Uint32())
	if e.ModTime == 0 {
		e.ModTime = time.Now().UnixNano()
	}
	return staged{seq: seq, vid: e.VersionID, entry: e.Encode()}
}

// importWriter writes the version records of an import, importBatch to a
// kv batch, while the tree takes its edits.
type importWriter struct {
	s       *Service
	v       *view
	batch   kv.Batch // nil until a record is pending
	pending int      // records in batch
	maxSeq  uint64   // sequence of the last entry
	err     error    // the first write error
}

// write adds the version records of st, staged at key, flushing the batch
// once it holds importBatch of them.
func (w *importWriter) write(ctx context.Context, key string, st staged) error {
	if w.batch == nil {
		w.batch = w.s.db.Batch(ctx)
	}
	vr := versionRecord{key: key, branch: w.v.br.ID, staged: st}
	if err := w.batch.Set(versionKey(w.v.rr.ID, st.vid), vr.encode()); err != nil {
		return err
	}
	if err := w.batch.Set(keyVersionKey(w.v.rr.ID, key, st.seq), []byte(st.vid)); err != nil {
		return err
	}
	if w.pending++; w.pending >= importBatch {
		if err := w.batch.Flush(); err != nil {
			return err
		}
		w.batch, w.pending = nil, 0
	}
	return nil
}

// close flushes the records still pending and returns the first write
// error.
func (w *importWriter) close() error {
	if w.batch != nil {
		if err := w.batch.Flush(); err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}
