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
	lock := s.commitLock(repo, branch)
	lock.Lock()
	defer lock.Unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
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
	var maxSeq uint64
	var batch kv.Batch
	pending := 0
	var firstErr error
	edits := func(yield func(tree.Edit, error) bool) {
		for ie, err := range entries {
			if err != nil {
				yield(tree.Edit{}, err)
				return
			}
			if err := ValidKey(ie.Key); err != nil {
				yield(tree.Edit{}, err)
				return
			}
			seq := s.clk.next()
			maxSeq = seq
			var st staged
			if ie.Delete {
				st = staged{del: true, seq: seq, vid: newVersionID(seq, rand.Uint32())}
			} else {
				e := *ie.Entry
				e.VersionID = newVersionID(seq, rand.Uint32())
				if e.ModTime == 0 {
					e.ModTime = time.Now().UnixNano()
				}
				st = staged{seq: seq, vid: e.VersionID, entry: e.Encode()}
			}
			if batch == nil {
				batch = s.db.Batch(ctx)
			}
			vr := versionRecord{key: ie.Key, branch: v.br.ID, staged: st}
			if err := batch.Set(versionKey(v.rr.ID, st.vid), vr.encode()); err != nil {
				firstErr = err
				return
			}
			if err := batch.Set(keyVersionKey(v.rr.ID, ie.Key, seq), []byte(st.vid)); err != nil {
				firstErr = err
				return
			}
			if pending++; pending >= importBatch {
				if err := batch.Flush(); err != nil {
					firstErr = err
					return
				}
				batch, pending = nil, 0
			}
			if !yield(tree.Edit{Key: []byte(ie.Key), Value: st.entry, Delete: st.del}, nil) {
				return
			}
		}
	}
	root, err := s.treeFor(v.rr).Apply(ctx, v.root, edits)
	if batch != nil {
		if ferr := batch.Flush(); ferr != nil && firstErr == nil {
			firstErr = ferr
		}
	}
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return manifest.CommitID{}, fmt.Errorf("import into %s/%s: %w", repo, branch, err)
	}
	return s.swapHead(ctx, v, root, maxSeq, 0, o.CommitOptions)
}
