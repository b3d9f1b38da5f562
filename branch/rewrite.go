package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// RewriteStats reports what a history rewrite did.
type RewriteStats struct {
	// Keys lists, sorted, every key removed from some commit's tree.
	Keys []string
	// Remotes lists the attached-source objects of the lazy entries
	// removed (what their source materialised of them is a copy too).
	Remotes []manifest.Remote
	// Commits counts the commits given a new ID (a changed tree or a
	// rewritten parent); Changed those whose tree lost a key.
	Commits, Changed int
	// Versions counts the version records of Keys dropped.
	Versions int
	// Uploads counts the open multipart uploads to Keys aborted.
	Uploads int
	// Repointed counts the branch heads, fork points, checkpoints and
	// deleted-branch records moved to a rewritten commit.
	Repointed int
}

// RewriteTag names the commit metadata a rewritten commit carries: the
// request that rewrote it.
const RewriteTag = "rewritten-by"

// RewriteOptions tunes ForgetHistory.
type RewriteOptions struct {
	// ID names the request; rewritten commits carry it (RewriteTag).
	ID string
	// Check, when set, sees the keys found before anything changes; an
	// error stops the rewrite (a legal hold on one of them).
	Check func(keys []string) error
}

// ForgetHistory removes every key match accepts from every commit of repo
// that a branch head, fork point, checkpoint or deleted branch still
// reaches, as git filter-repo would: each such commit is written again
// without those keys (and with rewritten parents), so its ID changes; the
// heads, fork points, checkpoints and deleted-branch records move to the
// rewritten commits, and the version records, trash entries and open
// uploads of those keys are dropped. The old commits stay in the store
// until the next Collect, which no longer reaches them. Commits, merges
// and collections wait while it runs. Commit IDs of the old history stop
// resolving.
func (s *Service) ForgetHistory(ctx context.Context, repo string, match func(key string) bool, o RewriteOptions) (RewriteStats, error) {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	var st RewriteStats
	rr, err := s.repoRecordOf(ctx, repo)
	if err != nil {
		return st, err
	}
	pins, err := s.historyPins(ctx, rr)
	if err != nil {
		return st, err
	}
	rw := &rewriter{s: s, t: s.treeFor(rr), rr: rr, id: o.ID, done: map[manifest.CommitID]manifest.CommitID{},
		roots: map[chunk.Hash]chunk.Hash{}, seen: map[chunk.Hash]struct{}{}}
	order, err := rw.history(ctx, pins)
	if err != nil {
		return st, err
	}
	if st.Keys, st.Remotes, err = rw.keys(ctx, order, match); err != nil || len(st.Keys) == 0 {
		return st, err
	}
	if o.Check != nil {
		if err := o.Check(st.Keys); err != nil {
			return RewriteStats{}, err
		}
	}
	if err := rw.rewrite(ctx, order, st.Keys, &st); err != nil {
		return st, err
	}
	if st.Repointed, err = s.repoint(ctx, rr, rw.done); err != nil {
		return st, err
	}
	if st.Versions, err = s.dropVersions(ctx, rr, st.Keys); err != nil {
		return st, err
	}
	if err := s.dropTrash(ctx, repo, st.Keys); err != nil {
		return st, err
	}
	st.Uploads, err = s.abortUploadsOf(ctx, rr, st.Keys)
	return st, err
}

// repoRecordOf reads repo's record.
func (s *Service) repoRecordOf(ctx context.Context, repo string) (*repoRecord, error) {
	var rr *repoRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		rr, err = s.repo(r, repo)
		return err
	})
	return rr, err
}

// historyPins lists every commit the repository keeps: heads, fork
// points, checkpoints and every deleted branch, whatever its age.
func (s *Service) historyPins(ctx context.Context, rr *repoRecord) ([]manifest.CommitID, error) {
	pins, err := s.pinnedCommits(ctx, rr)
	if err != nil {
		return nil, err
	}
	deleted, _, err := s.deletedPins(ctx, rr, time.Time{})
	return append(pins, deleted...), err
}

// rewriter is one history rewrite in progress.
type rewriter struct {
	s     *Service
	t     *tree.Tree
	rr    *repoRecord
	id    string
	done  map[manifest.CommitID]manifest.CommitID // old ID -> rewritten ID
	roots map[chunk.Hash]chunk.Hash               // old tree -> rewritten tree
	seen  map[chunk.Hash]struct{}                 // tree nodes searched for keys
	cs    map[manifest.CommitID]*manifest.Commit
}

// history returns every commit reachable from pins that is still stored,
// parents before children.
func (rw *rewriter) history(ctx context.Context, pins []manifest.CommitID) ([]manifest.CommitID, error) {
	rw.cs = map[manifest.CommitID]*manifest.Commit{}
	var order []manifest.CommitID
	type frame struct {
		id   manifest.CommitID
		next int // parents pushed so far
	}
	state := map[manifest.CommitID]bool{} // false: on the stack, true: ordered
	for _, pin := range pins {
		stack := []frame{{id: pin}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			c, err := rw.commit(ctx, f.id, f.id == pin)
			if err != nil {
				return nil, err
			}
			if _, ok := state[f.id]; ok && f.next == 0 || c == nil {
				stack = stack[:len(stack)-1]
				continue
			}
			state[f.id] = false
			if f.next < len(c.Parents) {
				p := c.Parents[f.next]
				f.next++
				if _, ok := state[p]; !ok {
					stack = append(stack, frame{id: p})
				}
				continue
			}
			state[f.id] = true
			order = append(order, f.id)
			stack = stack[:len(stack)-1]
		}
	}
	return order, nil
}

// commit loads id once; a missing ancestor (expired by a collection) is
// nil, a missing pin an error.
func (rw *rewriter) commit(ctx context.Context, id manifest.CommitID, pin bool) (*manifest.Commit, error) {
	if c, ok := rw.cs[id]; ok {
		return c, nil
	}
	c, err := rw.s.ms.GetCommit(ctx, id)
	if errors.Is(err, manifest.ErrNotFound) && !pin {
		rw.cs[id] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", rw.rr.Name, err)
	}
	rw.cs[id] = c
	return c, nil
}

// keys searches the trees of order, each node once, for the keys match
// accepts, and returns them with the remote objects of those that are
// lazy.
func (rw *rewriter) keys(ctx context.Context, order []manifest.CommitID, match func(string) bool) ([]string, []manifest.Remote, error) {
	found := map[string]struct{}{}
	remotes := map[manifest.Remote]struct{}{}
	for _, id := range order {
		err := rw.t.Walk(ctx, rw.cs[id].Tree, func(v *tree.NodeView) error {
			if _, ok := rw.seen[v.Hash()]; ok {
				return tree.SkipSubtree
			}
			rw.seen[v.Hash()] = struct{}{}
			for i := 0; v.Level() == 0 && i < v.Len(); i++ {
				k := string(v.Key(i))
				if !match(k) {
					continue
				}
				found[k] = struct{}{}
				if e, err := manifest.DecodeEntry(v.Value(i)); err == nil && e.Remote != nil {
					remotes[*e.Remote] = struct{}{}
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return slices.Sorted(maps.Keys(found)), slices.Collect(maps.Keys(remotes)), nil
}

// rewrite writes every commit of order again without keys, parents first.
func (rw *rewriter) rewrite(ctx context.Context, order []manifest.CommitID, keys []string, st *RewriteStats) error {
	edits := make([]tree.Edit, len(keys))
	for i, k := range keys {
		edits[i] = tree.Edit{Key: []byte(k), Delete: true}
	}
	for _, id := range order {
		c := rw.cs[id]
		root, err := rw.root(ctx, c.Tree, edits)
		if err != nil {
			return err
		}
		n := *c
		n.Tree = root
		n.Parents = make([]manifest.CommitID, len(c.Parents))
		for i, p := range c.Parents {
			n.Parents[i] = rw.mapped(p)
		}
		if root == c.Tree && slices.Equal(n.Parents, c.Parents) {
			rw.done[id] = id
			continue
		}
		if root != c.Tree {
			st.Changed++
		}
		n.Extra = append(slices.DeleteFunc(slices.Clone(c.Extra), func(p manifest.Pair) bool { return p.Name == RewriteTag }),
			manifest.Pair{Name: RewriteTag, Value: rw.id})
		nid, err := rw.put(ctx, id, &n)
		if err != nil {
			return err
		}
		rw.done[id] = nid
		st.Commits++
	}
	return nil
}

// mapped is the rewritten ID of p, or p (an expired ancestor).
func (rw *rewriter) mapped(p manifest.CommitID) manifest.CommitID {
	if n, ok := rw.done[p]; ok {
		return n
	}
	return p
}

// root is old without keys, computed once per tree.
func (rw *rewriter) root(ctx context.Context, old chunk.Hash, edits []tree.Edit) (chunk.Hash, error) {
	if r, ok := rw.roots[old]; ok {
		return r, nil
	}
	r, err := rw.t.Apply(ctx, old, tree.SliceEdits(edits))
	if err != nil {
		return r, fmt.Errorf("rewrite tree %s: %w", old, err)
	}
	rw.roots[old] = r
	return r, nil
}

// put stores the rewritten commit n of old, with old's lineage record.
func (rw *rewriter) put(ctx context.Context, old manifest.CommitID, n *manifest.Commit) (manifest.CommitID, error) {
	id, err := rw.s.ms.PutCommit(ctx, n)
	if err != nil {
		return id, err
	}
	err = rw.s.db.Update(ctx, func(txn kv.Txn) error {
		ci, err := txn.Get(commitInfoKey(rw.rr.ID, old))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return txn.Set(commitInfoKey(rw.rr.ID, id), ci)
	})
	return id, err
}

// repoint moves every branch head and fork point, checkpoint and deleted
// branch of rr that names a rewritten commit to its rewrite, in one
// transaction, and returns how many records moved.
func (s *Service) repoint(ctx context.Context, rr *repoRecord, done map[manifest.CommitID]manifest.CommitID) (int, error) {
	var n int
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		n = 0
		for _, p := range []struct {
			prefix []byte
			fix    func([]byte) ([]byte, bool, error)
		}{
			{branchPrefix(rr.ID), func(v []byte) ([]byte, bool, error) { return repointBranch(v, done) }},
			{u64([]byte(keyspace.Checkpoint), rr.ID), func(v []byte) ([]byte, bool, error) { return repointCheckpoint(v, done) }},
			{deletedPrefix(rr.ID), func(v []byte) ([]byte, bool, error) { return repointDeleted(v, done) }},
		} {
			m, err := rewriteRecords(txn, p.prefix, p.fix)
			if err != nil {
				return err
			}
			n += m
		}
		return nil
	})
	return n, err
}

// rewriteRecords sets every record under prefix that fix changes.
func rewriteRecords(txn kv.Txn, prefix []byte, fix func([]byte) ([]byte, bool, error)) (int, error) {
	type kvp struct{ k, v []byte }
	var out []kvp
	err := txn.Scan(kv.Prefix(prefix), func(k, v []byte) error {
		nv, changed, err := fix(v)
		if changed {
			out = append(out, kvp{append([]byte(nil), k...), nv})
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, p := range out {
		if err := txn.Set(p.k, p.v); err != nil {
			return 0, err
		}
	}
	return len(out), nil
}

// moveHex maps the hex commit ID *h through done; it reports a change.
func moveHex(h *string, done map[manifest.CommitID]manifest.CommitID) bool {
	id, err := manifest.ParseCommitID(*h)
	if *h == "" || err != nil {
		return false
	}
	if n, ok := done[id]; ok && n != id {
		*h = n.String()
		return true
	}
	return false
}

func repointBranch(v []byte, done map[manifest.CommitID]manifest.CommitID) ([]byte, bool, error) {
	br, err := decodeBranch(v)
	if err != nil {
		return nil, false, err
	}
	head := br.Head.String()
	changed := moveHex(&head, done)
	changed = moveHex(&br.Base, done) || changed
	if !changed {
		return nil, false, nil
	}
	br.Head, _ = manifest.ParseCommitID(head)
	return br.encode(), true, nil
}

func repointCheckpoint(v []byte, done map[manifest.CommitID]manifest.CommitID) ([]byte, bool, error) {
	var cp Checkpoint
	if err := json.Unmarshal(v, &cp); err != nil {
		return nil, false, fmt.Errorf("checkpoint record: %w", err)
	}
	if !moveHex(&cp.CommitH, done) {
		return nil, false, nil
	}
	b, err := json.Marshal(cp)
	return b, true, err
}

func repointDeleted(v []byte, done map[manifest.CommitID]manifest.CommitID) ([]byte, bool, error) {
	d, err := decodeDeleted(v)
	if err != nil {
		return nil, false, err
	}
	changed := moveHex(&d.HeadH, done)
	changed = moveHex(&d.Base, done) || changed
	if !changed {
		return nil, false, nil
	}
	b, err := json.Marshal(d)
	return b, true, err
}

// dropVersions deletes every version record of keys, on every branch.
func (s *Service) dropVersions(ctx context.Context, rr *repoRecord, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		err := s.db.Update(ctx, func(txn kv.Txn) error {
			var del [][]byte
			p := escKey(keyVersionsPrefix(rr.ID), k)
			err := txn.Scan(kv.Prefix(p), func(key, vid []byte) error {
				if len(key) == len(p)+8 { // this key's, not a longer key's
					del = append(del, append([]byte(nil), key...), versionKey(rr.ID, string(vid)))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, d := range del {
				if err := txn.Delete(d); err != nil {
					return err
				}
			}
			n += len(del) / 2
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// abortUploadsOf aborts the open multipart uploads to keys.
func (s *Service) abortUploadsOf(ctx context.Context, rr *repoRecord, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		var ids []string
		p := escKey(uploadsPrefix(rr.ID), k)
		err := s.scan(ctx, p, func(key, _ []byte) error {
			ids = append(ids, string(key[len(p):]))
			return nil
		})
		if err != nil {
			return n, err
		}
		for _, id := range ids {
			if err := s.AbortUpload(ctx, rr.Name, k, id); err != nil && !errors.Is(err, ErrNoSuchUpload) {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
