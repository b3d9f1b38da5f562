package branch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// DefaultBranch is the branch every repository starts with.
const DefaultBranch = "main"

// Service manages repositories, branches, objects and commits.
type Service struct {
	db     kv.DB
	ms     *manifest.Store
	nodes  tree.NodeStore // ms behind a decoded-node cache
	chunks *cas.Store
	log    *slog.Logger
	clk    clock
	// journal hears every write committed through db (TouchedSince).
	journal *journal

	mu          sync.Mutex             // guards commitLocks and roots
	commitLocks map[string]*sync.Mutex // per repo/branch: one fold at a time
	locker      Locker                 // across gateways (SetLocker), else commitLocks
	// sharedQuotas keeps quota usage in the store (SetSharedQuotas).
	sharedQuotas bool
	// collectGuard admits a collection (SetCollectGuard; nil: always).
	collectGuard func(context.Context) (Admission, error)
	// listEpoch is the other gateway's collection this one takes part in
	// (HoldForCollection; nil: none); unmarked counts the writes in
	// flight that began without it (enterWrite counts a write before it
	// reads listEpoch, HoldForCollection sets it before it reads the
	// count, so a write it does not wait for is one that saw it).
	listEpoch atomic.Pointer[string]
	unmarked  atomic.Int64
	// fence refuses writes while this gateway's membership lapsed
	// (SetFence; nil: never).
	fence func() error
	roots map[manifest.CommitID]chunk.Hash
	trees sync.Map // repo ID -> *tree.Tree
	// touchedLists holds content lists written during a collection; nil
	// outside one. Guarded by mu.
	touchedLists map[chunk.Hash]struct{}
	listPins     map[chunk.Hash]int           // content lists of writes in flight; guarded by mu
	rootSources  []RootSource                 // roots kept outside the trees (AddRoots); guarded by mu
	onCollect    []func(GCStats, error)       // told of every collection (OnCollect); guarded by mu
	usage        usageTracker                 // per branch with a quota
	deletedKeep  atomic.Int64                 // nanoseconds deleted branches stay restorable (0: the default)
	keys         atomic.Pointer[keyring.Ring] // the domain keys of sealed content (SetKeys); nil: none
	scratchTTL   atomic.Int64                 // nanoseconds scratch files live (0: DefaultScratchTTL)

	// gcMu is held for writing by Collect and for reading by everything
	// that creates tree nodes or commits, so a sweep never deletes a node a
	// commit is about to reference.
	gcMu sync.RWMutex
	// collectMu is held through a whole collection: gcMu is let go once
	// tree nodes and commits are swept, but the chunk store's cycle is
	// one at a time.
	collectMu sync.Mutex

	// foldHook, when set (tests only), runs after a commit sealed its
	// generation and before it folds it.
	foldHook func()
}

// New returns a Service over db and chunks.
func New(db kv.DB, chunks *cas.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ms := manifest.NewStore(db)
	j := newJournal()
	return &Service{
		db:          observed{DB: db, j: j},
		journal:     j,
		ms:          ms,
		nodes:       tree.NewCache(ms, 64<<20),
		chunks:      chunks,
		log:         log,
		commitLocks: map[string]*sync.Mutex{},
		roots:       map[manifest.CommitID]chunk.Hash{},
		listPins:    map[chunk.Hash]int{},
	}
}

// Manifest returns the store of nodes, content lists and commits.
func (s *Service) Manifest() *manifest.Store { return s.ms }

// Nodes returns the (cached) tree node store.
func (s *Service) Nodes() tree.NodeStore { return s.nodes }

// Chunks returns the chunk store.
func (s *Service) Chunks() *cas.Store { return s.chunks }

// Repo describes a repository.
type Repo struct {
	Name          string
	DefaultBranch string
	Created       time.Time
}

// Branch describes a branch.
type Branch struct {
	Repo      string
	Name      string
	Head      manifest.CommitID
	Base      manifest.CommitID // the commit it was forked from; zero for main
	Protected bool
	Created   time.Time
	Limits    Limits
}

func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// CreateRepoOptions tunes CreateRepo.
type CreateRepoOptions struct {
	// Protected makes the default branch protected (the control API does;
	// S3 CreateBucket does not).
	Protected bool
	Principal string
}

// CreateRepo creates a repository with an empty initial commit on its
// default branch.
func (s *Service) CreateRepo(ctx context.Context, name string, o CreateRepoOptions) (*Repo, error) {
	if err := ValidRepoName(name); err != nil {
		return nil, err
	}
	if err := s.fenced(); err != nil {
		return nil, err
	}
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	now := time.Now()
	rr := repoRecord{Name: name, ID: randomID(), DefaultBranch: DefaultBranch, Created: now.UnixNano(), Salt: make([]byte, 16)}
	if _, err := rand.Read(rr.Salt); err != nil {
		return nil, err
	}
	initial := &manifest.Commit{Message: "repository created", Principal: o.Principal, Time: now.UnixNano()}
	head, err := s.ms.PutCommit(ctx, initial)
	if err != nil {
		return nil, err
	}
	br := &branchRecord{Name: DefaultBranch, ID: randomID(), Head: head, Gen: 1, Protected: o.Protected, Created: now.UnixNano()}
	br.Lineage = []lineageItem{{Branch: br.ID, MaxSeq: ^uint64(0)}}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		if _, err := txn.Get(repoKey(name)); err == nil {
			return fmt.Errorf("%s: %w", name, ErrRepoExists)
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		b, _ := json.Marshal(rr)
		if err := txn.Set(repoKey(name), b); err != nil {
			return err
		}
		ci, _ := json.Marshal(commitInfo{Branch: br.ID, Lineage: br.Lineage})
		if err := txn.Set(commitInfoKey(rr.ID, head), ci); err != nil {
			return err
		}
		return txn.Set(branchKey(rr.ID, br.Name), br.encode())
	})
	if err != nil {
		return nil, err
	}
	return rr.public(), nil
}

func (rr *repoRecord) public() *Repo {
	return &Repo{Name: rr.Name, DefaultBranch: rr.DefaultBranch, Created: time.Unix(0, rr.Created)}
}

func (s *Service) repo(r kv.Reader, name string) (*repoRecord, error) {
	v, err := r.Get(repoKey(name))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", name, ErrNoSuchRepo)
	}
	if err != nil {
		return nil, err
	}
	var rr repoRecord
	if err := json.Unmarshal(v, &rr); err != nil {
		return nil, fmt.Errorf("repo record %s: %w", name, err)
	}
	return &rr, nil
}

func (s *Service) branch(r kv.Reader, rr *repoRecord, name string) (*branchRecord, error) {
	v, err := r.Get(branchKey(rr.ID, name))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("%s/%s: %w", rr.Name, name, ErrNoSuchBranch)
	}
	if err != nil {
		return nil, err
	}
	return decodeBranch(v)
}

// GetRepo returns repository name.
func (s *Service) GetRepo(ctx context.Context, name string) (*Repo, error) {
	var rr *repoRecord
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		rr, err = s.repo(r, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rr.public(), nil
}

// ListRepos returns every repository in name order.
func (s *Service) ListRepos(ctx context.Context) ([]Repo, error) {
	var out []Repo
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.Repo)), func(_, v []byte) error {
			var rr repoRecord
			if err := json.Unmarshal(v, &rr); err != nil {
				return err
			}
			out = append(out, *rr.public())
			return nil
		})
	})
	return out, err
}

func (br *branchRecord) public(repo string) *Branch {
	b := &Branch{Repo: repo, Name: br.Name, Head: br.Head, Protected: br.Protected, Created: time.Unix(0, br.Created), Limits: br.limits()}
	if br.Base != "" {
		b.Base, _ = manifest.ParseCommitID(br.Base)
	}
	return b
}

// GetBranch returns branch name of repo.
func (s *Service) GetBranch(ctx context.Context, repo, name string) (*Branch, error) {
	var out *Branch
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		br, err := s.branch(r, rr, name)
		if err != nil {
			return err
		}
		out = br.public(repo)
		return nil
	})
	return out, err
}

// ListBranches returns the branches of repo in name order.
func (s *Service) ListBranches(ctx context.Context, repo string) ([]Branch, error) {
	var out []Branch
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		return r.Scan(kv.Prefix(branchPrefix(rr.ID)), func(_, v []byte) error {
			br, err := decodeBranch(v)
			if err != nil {
				return err
			}
			out = append(out, *br.public(repo))
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// CreateBranch forks a new branch from a branch's head commit or from a
// commit ID, in constant time: nothing but the new branch record is written.
// Staged (uncommitted) changes of the source are not included.
func (s *Service) CreateBranch(ctx context.Context, repo, name, from string) (*Branch, error) {
	return s.CreateBranchWith(ctx, repo, name, from, Limits{})
}

// CreateBranchWith is CreateBranch with a time to live and quotas. A branch
// of that name whose time to live ran out is recycled first.
func (s *Service) CreateBranchWith(ctx context.Context, repo, name, from string, lim Limits) (*Branch, error) {
	if err := ValidBranchName(name); err != nil {
		return nil, err
	}
	if _, err := manifest.ParseCommitID(from); err == nil {
		// A commit ID need not be a head the collection marked: wait
		// for one to end rather than fork from a commit it deletes.
		if err := s.fenced(); err != nil {
			return nil, err
		}
		s.gcMu.RLock()
		defer s.gcMu.RUnlock()
	}
	var out *Branch
	var stale *branchRecord
	var rrID uint64
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		stale = nil
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		rrID = rr.ID
		if b, err := txn.Get(branchKey(rr.ID, name)); err == nil {
			old, err := decodeBranch(b)
			if err != nil {
				return err
			}
			if !old.expired(time.Now()) {
				return fmt.Errorf("%s/%s: %w", repo, name, ErrBranchExists)
			}
			stale = old
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		if from == "" {
			from = rr.DefaultBranch
		}
		head, err := s.resolve(ctx, txn, rr, from)
		if err != nil {
			return err
		}
		ci, err := s.commitInfo(txn, rr, head)
		if err != nil {
			return err
		}
		br := &branchRecord{Name: name, ID: randomID(), Head: head, Base: head.String(), Gen: 1, Created: time.Now().UnixNano()}
		br.Lineage = append(ci.lineageAt(), lineageItem{Branch: br.ID, MaxSeq: ^uint64(0)})
		if err := checkLimits(rr, br, lim, time.Now()); err != nil {
			return err
		}
		br.setLimits(lim)
		if err := txn.Set(branchKey(rr.ID, name), br.encode()); err != nil {
			return err
		}
		out = br.public(repo)
		return nil
	})
	if err != nil || stale == nil {
		return out, err
	}
	s.forgetUsage(rrID, stale.ID)
	if err := s.clearStaging(ctx, rrID, stale.ID); err != nil {
		s.log.Warn("clearing an expired branch's staging", "repo", repo, "branch", name, "err", err)
	}
	return out, nil
}

// resolve turns a branch name or a commit ID (hex) into a commit ID.
func (s *Service) resolve(ctx context.Context, r kv.Reader, rr *repoRecord, ref string) (manifest.CommitID, error) {
	if id, err := manifest.ParseCommitID(ref); err == nil {
		if _, err := s.commitInfo(r, rr, id); err != nil {
			return id, err
		}
		return id, nil
	}
	br, err := s.branch(r, rr, ref)
	if err != nil {
		return manifest.CommitID{}, err
	}
	if br.expired(time.Now()) {
		return manifest.CommitID{}, fmt.Errorf("%s/%s expired: %w", rr.Name, ref, ErrNoSuchBranch)
	}
	return br.Head, nil
}

// ResolveRef returns the commit a branch name or commit ID names.
func (s *Service) ResolveRef(ctx context.Context, repo, ref string) (manifest.CommitID, error) {
	var id manifest.CommitID
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		id, err = s.resolve(ctx, r, rr, ref)
		return err
	})
	return id, err
}

func (s *Service) commitInfo(r kv.Reader, rr *repoRecord, id manifest.CommitID) (*commitInfo, error) {
	v, err := r.Get(commitInfoKey(rr.ID, id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("%s in %s: %w", id, rr.Name, manifest.ErrNoSuchCommit)
	}
	if err != nil {
		return nil, err
	}
	var ci commitInfo
	if err := json.Unmarshal(v, &ci); err != nil {
		return nil, fmt.Errorf("commit info %s: %w", id, err)
	}
	return &ci, nil
}

// SetProtected protects or unprotects a branch.
func (s *Service) SetProtected(ctx context.Context, repo, name string, protected bool) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		br, err := s.branch(txn, rr, name)
		if err != nil {
			return err
		}
		br.Protected = protected
		return txn.Set(branchKey(rr.ID, name), br.encode())
	})
}

// DeleteBranch removes a branch and its staging area, keeping a record
// that makes it restorable (RestoreBranch) for DeletedRetention. The
// default branch and protected branches cannot be deleted.
func (s *Service) DeleteBranch(ctx context.Context, repo, name string) error {
	return s.DeleteBranchBy(ctx, repo, name, "")
}

// DeleteBranchBy is DeleteBranch recording who deleted it.
func (s *Service) DeleteBranchBy(ctx context.Context, repo, name, by string) error {
	return s.deleteBranch(ctx, repo, name, by, true)
}

// DiscardBranch deletes a branch without keeping it restorable: for undoing
// the creation of one that never held anyone's work (a fork a failed lease
// issue made), which must not show among the deleted branches.
func (s *Service) DiscardBranch(ctx context.Context, repo, name string) error {
	return s.deleteBranch(ctx, repo, name, "", false)
}

func (s *Service) deleteBranch(ctx context.Context, repo, name, by string, keep bool) error {
	var rr *repoRecord
	var br *branchRecord
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		var err error
		if rr, err = s.repo(txn, repo); err != nil {
			return err
		}
		if br, err = s.branch(txn, rr, name); err != nil {
			return err
		}
		if name == rr.DefaultBranch {
			return fmt.Errorf("%s/%s: %w", repo, name, ErrDefaultBranch)
		}
		if br.Protected {
			return fmt.Errorf("delete %s/%s: %w", repo, name, ErrProtected)
		}
		if keep {
			if err := putDeleted(txn, rr, br, by, time.Now().UTC()); err != nil {
				return err
			}
		}
		return txn.Delete(branchKey(rr.ID, name))
	})
	if err != nil {
		return err
	}
	s.forgetUsage(rr.ID, br.ID)
	return s.clearStaging(ctx, rr.ID, br.ID)
}

// clearStaging deletes a gone branch's staging and its writers.
func (s *Service) clearStaging(ctx context.Context, repo, br uint64) error {
	if err := s.deleteRange(ctx, kv.Prefix(branchStagePrefix(repo, br))); err != nil {
		return err
	}
	return s.deleteRange(ctx, kv.Prefix(branchWriterPrefix(repo, br)))
}

// deleteRange removes every key in r in bounded batches; the keys must
// already be unreachable, so nothing is written into r meanwhile. Each
// batch's scan starts after the last key deleted: from the start of r it
// would walk every deletion marker left by the batches before it, which
// made clearing n keys cost O(n²).
func (s *Service) deleteRange(ctx context.Context, r kv.Range) error {
	for {
		var keys [][]byte
		err := s.db.View(ctx, func(rd kv.Reader) error {
			return rd.Scan(r, func(k, _ []byte) error {
				keys = append(keys, append([]byte(nil), k...))
				if len(keys) >= 1000 {
					return kv.ErrStop
				}
				return nil
			})
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		b := s.db.Batch(ctx)
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				b.Cancel()
				return err
			}
		}
		if err := b.Flush(); err != nil {
			return err
		}
		r.Start = append(keys[len(keys)-1], 0)
	}
}

// DeleteRepo removes a repository whose branches hold no objects. History,
// version records and chunks become garbage for the collector.
func (s *Service) DeleteRepo(ctx context.Context, name string) error {
	branches, err := s.ListBranches(ctx, name)
	if err != nil {
		return err
	}
	for _, b := range branches {
		empty, err := s.isEmpty(ctx, name, b.Name)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%s: branch %s holds objects: %w", name, b.Name, ErrRepoNotEmpty)
		}
	}
	var rr *repoRecord
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		var err error
		if rr, err = s.repo(txn, name); err != nil {
			return err
		}
		return txn.Delete(repoKey(name))
	})
	if err != nil {
		return err
	}
	for _, p := range repoSpaces {
		if err := s.deleteRange(ctx, kv.Prefix(u64([]byte(p), rr.ID))); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) isEmpty(ctx context.Context, repo, br string) (bool, error) {
	res, err := s.List(ctx, repo, br, ListOptions{MaxKeys: 1})
	if err != nil {
		return false, err
	}
	return len(res.Objects) == 0, nil
}

// root returns the tree root of a commit, caching the answer.
func (s *Service) root(ctx context.Context, id manifest.CommitID) (chunk.Hash, error) {
	s.mu.Lock()
	h, ok := s.roots[id]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	c, err := s.ms.GetCommit(ctx, id)
	if err != nil {
		return chunk.Hash{}, err
	}
	s.mu.Lock()
	if len(s.roots) > 100000 {
		clear(s.roots)
	}
	s.roots[id] = c.Tree
	s.mu.Unlock()
	return c.Tree, nil
}
