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

// ImportEntry is one object of an Import.
type ImportEntry struct {
	Key   string
	Entry *manifest.Entry
}

// importBatch bounds the version records written per kv batch.
const importBatch = 1000

// Import writes a sorted stream of entries directly into a new commit on a
// branch, without staging: the bulk path for loading large data sets (and
// remote listings). Each entry gets a version ID and a version record as a
// PUT would. Staged changes of the branch are left as they are. The chunks
// and content lists the entries reference must already be durable.
func (s *Service) Import(ctx context.Context, repo, branch string, entries iter.Seq2[ImportEntry, error], o CommitOptions) (manifest.CommitID, error) {
	lock := s.commitLock(repo, branch)
	lock.Lock()
	defer lock.Unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		v, err = s.writableView(ctx, r, repo, branch)
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
			e := *ie.Entry
			e.VersionID = newVersionID(seq, rand.Uint32())
			if e.ModTime == 0 {
				e.ModTime = time.Now().UnixNano()
			}
			st := staged{seq: seq, vid: e.VersionID, entry: e.Encode()}
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
			if !yield(tree.Edit{Key: []byte(ie.Key), Value: st.entry}, nil) {
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
	return s.swapHead(ctx, v, root, maxSeq, 0, o)
}
