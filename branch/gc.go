package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// GCOptions tunes Collect.
type GCOptions struct {
	// Retention keeps commits and versions younger than it; older ones
	// that no branch head or fork point needs become collectable.
	Retention time.Duration
	// UploadExpiry aborts multipart uploads older than it.
	UploadExpiry time.Duration
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// DefaultRetention and DefaultUploadExpiry are the defaults of GCOptions.
const (
	DefaultRetention    = 30 * 24 * time.Hour
	DefaultUploadExpiry = 7 * 24 * time.Hour
	// TrashRetention is how long what a merge deleted from a protected
	// branch stays restorable from the trash; each collection drops older
	// entries.
	TrashRetention = 7 * 24 * time.Hour
)

// GCStats reports what a collection did.
type GCStats struct {
	Commits        int // commits retained
	ExpiredCommits int
	Versions       int // version records expired
	Uploads        int // multipart uploads expired
	// DeletedBranches counts deleted-branch records that expired.
	DeletedBranches int
	// Trash counts trash entries older than TrashRetention, dropped.
	Trash    int
	Nodes    int // tree nodes deleted
	Contents int // content lists deleted
	Chunks   cas.SweepStats
}

// RootSource keeps chunks alive from outside the trees: the lazy-source
// side index (package source) is one. Collect marks what it names; Check
// verifies that every chunk it names is present.
type RootSource interface {
	// MarkRoots calls mark for every chunk the source keeps alive.
	MarkRoots(ctx context.Context, mark func(chunk.Hash)) error
}

// AddRoots registers r as a source of garbage-collection roots for every
// later Collect and Check.
func (s *Service) AddRoots(r RootSource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rootSources = append(s.rootSources, r)
}

// OnCollect registers fn to be told of every collection's stats and
// error (the gateway's metrics). fn must be cheap.
func (s *Service) OnCollect(fn func(GCStats, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCollect = append(s.onCollect, fn)
}

func (s *Service) collected(st GCStats, err error) {
	s.mu.Lock()
	fns := append([]func(GCStats, error){}, s.onCollect...)
	s.mu.Unlock()
	for _, fn := range fns {
		fn(st, err)
	}
}

func (s *Service) extraRoots() []RootSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RootSource(nil), s.rootSources...)
}

// marker accumulates what is live.
type marker struct {
	s        *Service
	nodes    map[chunk.Hash]struct{}
	contents map[chunk.Hash]struct{}
	chunks   map[chunk.Hash]struct{}
	commits  map[manifest.CommitID]struct{}
}

func (m *marker) entry(ctx context.Context, b []byte) error {
	if b == nil {
		return nil
	}
	e, err := manifest.DecodeEntry(b)
	if err != nil {
		return err
	}
	if e.Content != nil {
		for _, r := range e.Content.Chunks {
			m.chunks[r.Hash] = struct{}{}
		}
		return nil
	}
	if e.ContentRef.IsZero() {
		return nil
	}
	if _, ok := m.contents[e.ContentRef]; ok {
		return nil
	}
	m.contents[e.ContentRef] = struct{}{}
	c, err := m.s.ms.GetContent(ctx, e.ContentRef)
	if err != nil {
		return err
	}
	for _, r := range c.Chunks {
		m.chunks[r.Hash] = struct{}{}
	}
	return nil
}

func (m *marker) tree(ctx context.Context, t *tree.Tree, root chunk.Hash) error {
	return t.Walk(ctx, root, func(v *tree.NodeView) error {
		if _, ok := m.nodes[v.Hash()]; ok {
			return tree.SkipSubtree
		}
		m.nodes[v.Hash()] = struct{}{}
		if v.Level() == 0 {
			for i := 0; i < v.Len(); i++ {
				if err := m.entry(ctx, v.Value(i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Collect is mark-and-sweep garbage collection. Roots: branch heads and
// fork points (of deleted branches too, within DeletedRetention), commits
// younger than the retention window reachable from them, staging,
// version records younger than the window, open multipart uploads, and
// every registered RootSource (AddRoots). Commits wait while it marks and
// sweeps tree nodes and commits, on every gateway that shares the store
// (HoldForCollection), and go on while it sweeps chunks; PUTs never wait
// (the chunk store's cycle and floor, and the content-list registry and
// marks, protect what they reference).
func (s *Service) Collect(ctx context.Context, o GCOptions) (GCStats, error) {
	st, err := s.collectGuarded(ctx, o)
	s.collected(st, err)
	return st, err
}

func (s *Service) collectGuarded(ctx context.Context, o GCOptions) (GCStats, error) {
	var st GCStats
	o = o.withDefaults()
	now := o.Now()
	// What only expires, outside the collection: these take branch locks,
	// which a gateway holding commits back for the collection could hold.
	if err := s.expireUploads(ctx, now.Add(-o.UploadExpiry).UnixNano(), &st); err != nil {
		return st, err
	}
	if err := s.SettleTrash(ctx); err != nil {
		return st, err
	}
	n, err := s.expireTrash(ctx, now.Add(-TrashRetention))
	if err != nil {
		return st, err
	}
	st.Trash = n
	adm := Admission{Release: func() {}}
	if s.collectGuard != nil {
		if adm, err = s.collectGuard(ctx); err != nil {
			return st, fmt.Errorf("garbage collection: %w", err)
		}
	}
	defer adm.Release()
	err = s.collect(ctx, now.Add(-o.Retention).UnixNano(), now, adm, &st)
	return st, err
}

func (o GCOptions) withDefaults() GCOptions {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.UploadExpiry == 0 {
		o.UploadExpiry = DefaultUploadExpiry
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// SetCollectGuard makes Collect first call guard, which may refuse (its
// error is returned) or admit the collection: gateways sharing a metadata
// store collect one at a time, with the others taking part
// (HoldForCollection). Call it before serving.
func (s *Service) SetCollectGuard(guard func(context.Context) (Admission, error)) {
	s.collectGuard = guard
}

// collect marks and sweeps under adm.
func (s *Service) collect(ctx context.Context, cutoff int64, now time.Time, adm Admission, st *GCStats) error {
	s.collectMu.Lock() // one cycle at a time (gcMu is let go early)
	defer s.collectMu.Unlock()
	s.gcMu.Lock()
	var once sync.Once
	unlock := func() { once.Do(s.gcMu.Unlock) }
	defer unlock()
	cycle := s.chunks.BeginCycleWith(cas.CycleOptions{Start: adm.Start, Spare: adm.Spare, Skew: adm.Skew, Check: adm.Check})
	defer cycle.End()
	s.beginListCycle()
	defer s.endListCycle()

	m := &marker{s: s, nodes: map[chunk.Hash]struct{}{}, contents: map[chunk.Hash]struct{}{},
		chunks: map[chunk.Hash]struct{}{}, commits: map[manifest.CommitID]struct{}{}}
	repos, err := s.allRepos(ctx)
	if err != nil {
		return err
	}
	for _, rr := range repos {
		if err := s.markRepo(ctx, m, rr, cutoff, now.Add(-s.DeletedRetention()), st); err != nil {
			return fmt.Errorf("mark %s: %w", rr.Name, err)
		}
	}
	for _, rs := range s.extraRoots() {
		if err := rs.MarkRoots(ctx, func(h chunk.Hash) { m.chunks[h] = struct{}{} }); err != nil {
			return fmt.Errorf("mark external roots: %w", err)
		}
	}
	// Orphaned keys of deleted repositories and branches are garbage too.
	if err := s.sweepMeta(ctx, m, adm, st); err != nil {
		return err
	}
	// Tree nodes and commits are swept: commits may go on while the
	// chunks are (what they reference was marked, or is pinned or
	// stamped by the write that staged it).
	unlock()
	if adm.MetaSwept != nil {
		adm.MetaSwept()
	}
	cs, err := cycle.Sweep(ctx, func(h chunk.Hash) bool { _, ok := m.chunks[h]; return ok })
	st.Chunks = cs
	return err
}

func (s *Service) allRepos(ctx context.Context) ([]*repoRecord, error) {
	var out []*repoRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.Repo)), func(_, v []byte) error {
			var rr repoRecord
			if err := json.Unmarshal(v, &rr); err != nil {
				return err
			}
			out = append(out, &rr)
			return nil
		})
	})
	return out, err
}

// markRepo marks everything a repository still needs: its pinned commits
// (heads, fork points, checkpoints, deleted branches younger than
// deletedCutoff) and their young history, the trash, staging, young
// version records and the parts of open uploads; it deletes the version
// records and deleted-branch records that expired.
func (s *Service) markRepo(ctx context.Context, m *marker, rr *repoRecord, cutoff int64, deletedCutoff time.Time, st *GCStats) error {
	pinned, err := s.pinnedCommits(ctx, rr)
	if err != nil {
		return err
	}
	deleted, expired, err := s.deletedPins(ctx, rr, deletedCutoff)
	if err != nil {
		return err
	}
	if err := s.deleteKeys(ctx, expired); err != nil {
		return err
	}
	st.DeletedBranches += len(expired)
	pinned = append(pinned, deleted...)
	// The trash keeps the content of what merges deleted.
	err = s.scan(ctx, trashPrefix(rr.ID), func(_, v []byte) error {
		var te TrashEntry
		if err := json.Unmarshal(v, &te); err != nil {
			return err
		}
		return m.entry(ctx, te.EntryB)
	})
	if err != nil {
		return err
	}
	if err := s.markHistory(ctx, m, rr, pinned, cutoff, st); err != nil {
		return err
	}
	// Staging of every branch, every generation.
	err = s.scan(ctx, u64([]byte(keyspace.Stage), rr.ID), func(_, v []byte) error {
		sv, err := decodeStaged(v)
		if err != nil {
			return err
		}
		return m.entry(ctx, sv.entry)
	})
	if err != nil {
		return err
	}
	if err := s.markVersions(ctx, m, rr, cutoff, st); err != nil {
		return err
	}
	// Parts of open uploads.
	return s.scan(ctx, u64([]byte(keyspace.Part), rr.ID), func(_, v []byte) error { return m.entry(ctx, v) })
}

// scan calls fn for every record under prefix, in one read transaction.
func (s *Service) scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	return s.db.View(ctx, func(r kv.Reader) error { return r.Scan(kv.Prefix(prefix), fn) })
}

// pinnedCommits lists the commits a repository keeps whatever their age:
// branch heads, fork points and checkpoints.
func (s *Service) pinnedCommits(ctx context.Context, rr *repoRecord) ([]manifest.CommitID, error) {
	var out []manifest.CommitID
	err := s.scan(ctx, branchPrefix(rr.ID), func(_, v []byte) error {
		br, err := decodeBranch(v)
		if err != nil {
			return err
		}
		out = append(out, br.Head)
		if id, err := manifest.ParseCommitID(br.Base); br.Base != "" && err == nil {
			out = append(out, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.scan(ctx, u64([]byte(keyspace.Checkpoint), rr.ID), func(_, v []byte) error {
		var cp Checkpoint
		if err := json.Unmarshal(v, &cp); err != nil {
			return err
		}
		if id, err := manifest.ParseCommitID(cp.CommitH); err == nil {
			out = append(out, id)
		}
		return nil
	})
	return out, err
}

// markHistory marks the pinned commits and, walking parents, every
// ancestor younger than cutoff, with their trees.
func (s *Service) markHistory(ctx context.Context, m *marker, rr *repoRecord, queue []manifest.CommitID, cutoff int64, st *GCStats) error {
	t := s.treeFor(rr)
	pinned := len(queue)
	for i := 0; i < len(queue); i++ {
		id := queue[i]
		if _, ok := m.commits[id]; ok {
			continue
		}
		c, err := s.ms.GetCommit(ctx, id)
		if errors.Is(err, manifest.ErrNotFound) && i >= pinned {
			continue // expired by an earlier collection
		}
		if err != nil {
			return err
		}
		if i >= pinned && c.Time < cutoff {
			continue
		}
		m.commits[id] = struct{}{}
		st.Commits++
		if err := m.tree(ctx, t, c.Tree); err != nil {
			return err
		}
		queue = append(queue, c.Parents...)
	}
	return nil
}

// markVersions marks the entries of version records younger than cutoff
// and deletes the older ones with their index keys.
func (s *Service) markVersions(ctx context.Context, m *marker, rr *repoRecord, cutoff int64, st *GCStats) error {
	var expired [][]byte
	err := s.scan(ctx, u64([]byte(keyspace.Version), rr.ID), func(k, v []byte) error {
		rec, err := decodeVersion(v)
		if err != nil {
			return err
		}
		if int64(rec.seq) < cutoff {
			expired = append(expired, append([]byte(nil), k...), keyVersionKey(rr.ID, rec.key, rec.seq))
			return nil
		}
		return m.entry(ctx, rec.entry)
	})
	if err != nil {
		return err
	}
	st.Versions += len(expired) / 2
	return s.deleteKeys(ctx, expired)
}

// sweepMeta deletes unmarked tree nodes, content lists and commits, and
// the commit info of expired commits.
func (s *Service) sweepMeta(ctx context.Context, m *marker, adm Admission, st *GCStats) error {
	var del [][]byte
	var lists []chunk.Hash
	err := s.db.View(ctx, func(r kv.Reader) error {
		if err := adm.check(r); err != nil {
			return err
		}
		for _, p := range []struct {
			kind  manifest.Kind
			live  func(chunk.Hash) bool
			count *int
		}{
			{manifest.KindNode, func(h chunk.Hash) bool { _, ok := m.nodes[h]; return ok }, &st.Nodes},
			{manifest.KindCommit, func(h chunk.Hash) bool { _, ok := m.commits[manifest.CommitID(h)]; return ok }, &st.ExpiredCommits},
		} {
			err := manifest.ScanKeys(r, p.kind, func(h chunk.Hash, k []byte) error {
				if !p.live(h) {
					del = append(del, append([]byte(nil), k...))
					*p.count++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		err := manifest.ScanKeys(r, manifest.KindContent, func(h chunk.Hash, _ []byte) error {
			if _, ok := m.contents[h]; !ok && !s.listTouched(h) {
				lists = append(lists, h)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Commit info of expired commits.
		return r.Scan(kv.Prefix([]byte(keyspace.CommitInfo)), func(k, _ []byte) error {
			if len(k) != len(keyspace.CommitInfo)+8+chunk.HashSize {
				return nil
			}
			var id manifest.CommitID
			copy(id[:], k[len(keyspace.CommitInfo)+8:])
			if _, ok := m.commits[id]; !ok {
				del = append(del, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := s.deleteKeys(ctx, del); err != nil {
		return err
	}
	n, err := s.deleteLists(ctx, lists, adm)
	st.Contents += n
	return err
}

func (s *Service) deleteKeys(ctx context.Context, keys [][]byte) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		b := s.db.Batch(ctx)
		for _, k := range keys[:n] {
			if err := b.Delete(k); err != nil {
				b.Cancel()
				return err
			}
		}
		if err := b.Flush(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func (s *Service) expireUploads(ctx context.Context, before int64, st *GCStats) error {
	type old struct {
		repo, key, id string
	}
	var olds []old
	repos, err := s.allRepos(ctx)
	if err != nil {
		return err
	}
	for _, rr := range repos {
		err := s.db.View(ctx, func(r kv.Reader) error {
			return r.Scan(kv.Prefix(uploadsPrefix(rr.ID)), func(_, v []byte) error {
				up, err := decodeUpload(v)
				if err != nil {
					return err
				}
				if up.Created < before {
					olds = append(olds, old{rr.Name, up.Key, up.ID})
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
	}
	for _, o := range olds {
		if err := s.AbortUpload(ctx, o.repo, o.key, o.id); err != nil && !errors.Is(err, ErrNoSuchUpload) {
			return err
		}
		st.Uploads++
	}
	return nil
}

// Content lists referenced by writes in flight, and those released while a
// collection runs, are live for the sweep (like the chunk store's pins).
func (s *Service) beginListCycle() {
	s.mu.Lock()
	s.touchedLists = map[chunk.Hash]struct{}{}
	s.mu.Unlock()
}

func (s *Service) endListCycle() {
	s.mu.Lock()
	s.touchedLists = nil
	s.mu.Unlock()
}

func (s *Service) listTouched(h chunk.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.touchedLists[h]
	return ok || s.listPins[h] > 0
}

// touchLists pins the content lists a write is about to reference until
// the returned release runs.
func (s *Service) touchLists(recs []Recorder) (release func()) {
	var hs []chunk.Hash
	for _, r := range recs {
		if c, ok := r.(ContentRecord); ok && !c.Hash.IsZero() {
			hs = append(hs, c.Hash)
		}
	}
	if len(hs) == 0 {
		return func() {}
	}
	s.mu.Lock()
	for _, h := range hs {
		s.listPins[h]++
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, h := range hs {
			if s.listPins[h]--; s.listPins[h] <= 0 {
				delete(s.listPins, h)
			}
			if s.touchedLists != nil {
				s.touchedLists[h] = struct{}{}
			}
		}
	}
}
