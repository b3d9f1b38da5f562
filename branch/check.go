package branch

import (
	"context"
	"fmt"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// CheckReport summarises a consistency check.
type CheckReport struct {
	Repos, Branches, Commits, Entries int
	// Lazy counts the entries whose bytes live in an attached source
	// (manifest.Entry.Lazy); they reference no chunks of their own.
	Lazy     int
	Chunks   cas.Stats
	Problems []string
}

// OK reports whether no problem was found.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds the problems a report lists.
const maxProblems = 1000

// problem adds a problem to the report, up to maxProblems.
func (r *CheckReport) problem(format string, a ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
	}
}

// Check verifies that every reference resolves: every branch head and its
// history (as far as retained), every tree node (structure and hash), every
// content list and chunk referenced by trees, staging, versions and parts;
// every chunk a registered RootSource names (the lazy-source side index);
// and that every stored chunk hashes to its name. A lazy entry must name
// its source and pinned ETag; its bytes are not local, so it is not held
// to a chunk list.
func (s *Service) Check(ctx context.Context) (*CheckReport, error) {
	c := &checker{
		s:          s,
		rep:        &CheckReport{},
		seenNodes:  map[chunk.Hash]struct{}{},
		seenChunks: map[chunk.Hash]bool{},
	}
	repos, err := s.allRepos(ctx)
	if err != nil {
		return nil, err
	}
	for _, rr := range repos {
		if err := c.repo(ctx, rr); err != nil {
			return nil, err
		}
	}
	c.extraRoots(ctx)
	st, err := s.chunks.Check(ctx, func(p cas.Problem) { c.rep.problem("chunk %s: %s", p.Hash, p.Detail) })
	if err != nil {
		return nil, err
	}
	c.rep.Chunks = st
	return c.rep, nil
}

// checker is the state of one Check: the report it fills and what it has
// checked already, so that what many commits share is checked once.
type checker struct {
	s          *Service
	rep        *CheckReport
	seenNodes  map[chunk.Hash]struct{} // tree nodes walked
	seenChunks map[chunk.Hash]bool     // chunks looked up: present or not
}

// repo checks one repository: its branches' histories and trees, then its
// staging, version and part records. It returns only errors of the kv
// store; what it finds wrong goes into the report.
func (c *checker) repo(ctx context.Context, rr *repoRecord) error {
	c.rep.Repos++
	t := c.s.treeFor(rr)
	branches, err := c.branches(ctx, rr)
	if err != nil {
		return err
	}
	seenCommits := map[manifest.CommitID]struct{}{}
	for _, br := range branches {
		c.rep.Branches++
		c.history(ctx, t, rr, br, seenCommits)
	}
	deleted, _, err := c.s.deletedPins(ctx, rr, time.Time{})
	if err != nil {
		return err
	}
	for _, id := range deleted {
		// A restorable deleted branch's head must be whole, as a live one's.
		c.history(ctx, t, rr, &branchRecord{Name: "(deleted)", Head: id}, seenCommits)
	}
	return c.records(ctx, rr)
}

// branches returns rr's decodable branch records, reporting the others.
func (c *checker) branches(ctx context.Context, rr *repoRecord) ([]*branchRecord, error) {
	var branches []*branchRecord
	err := c.s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix(branchPrefix(rr.ID)), func(_, v []byte) error {
			br, err := decodeBranch(v)
			if err != nil {
				c.rep.problem("%s: undecodable branch record: %v", rr.Name, err)
				return nil
			}
			branches = append(branches, br)
			return nil
		})
	})
	return branches, err
}

// history checks br's head and its first-parent history, as far as it is
// retained and not in seenCommits, and the tree and entries of each commit.
func (c *checker) history(ctx context.Context, t *tree.Tree, rr *repoRecord, br *branchRecord, seenCommits map[manifest.CommitID]struct{}) {
	id := br.Head
	for first := true; !id.IsZero(); first = false {
		if _, ok := seenCommits[id]; ok {
			break
		}
		cm, err := c.s.ms.GetCommit(ctx, id)
		if err != nil {
			if first {
				c.rep.problem("%s/%s: head %s: %v", rr.Name, br.Name, id, err)
			}
			break // older history may have expired
		}
		seenCommits[id] = struct{}{}
		c.rep.Commits++
		if err := t.Check(ctx, cm.Tree); err != nil {
			c.rep.problem("%s: commit %s: tree: %v", rr.Name, id, err)
		} else if _, ok := c.seenNodes[cm.Tree]; !ok {
			c.seenNodes[cm.Tree] = struct{}{}
			where := fmt.Sprintf("%s@%s", rr.Name, id)
			_ = c.s.walkEntries(ctx, t, cm.Tree, c.seenNodes, func(key, val []byte) {
				c.entry(ctx, where+" "+string(key), val)
			})
		}
		if len(cm.Parents) == 0 {
			break
		}
		id = cm.Parents[0]
	}
}

// records checks the entries of rr's staging, version and part records,
// each kind in a transaction of its own.
func (c *checker) records(ctx context.Context, rr *repoRecord) error {
	for _, p := range []struct{ prefix, what string }{{keyspace.Stage, "staging"}, {keyspace.Version, "version"}, {keyspace.Part, "part"}} {
		err := c.s.db.View(ctx, func(r kv.Reader) error {
			return r.Scan(kv.Prefix(u64([]byte(p.prefix), rr.ID)), func(k, v []byte) error {
				where := fmt.Sprintf("%s %s %x", rr.Name, p.what, k[10:])
				switch p.prefix {
				case keyspace.Stage:
					st, err := decodeStaged(v)
					if err != nil {
						c.rep.problem("%s: %v", where, err)
						return nil
					}
					c.entry(ctx, where, st.entry)
				case keyspace.Version:
					rec, err := decodeVersion(v)
					if err != nil {
						c.rep.problem("%s: %v", where, err)
						return nil
					}
					c.entry(ctx, where, rec.entry)
				default:
					c.entry(ctx, where, v)
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// entry checks the encoded entry b found at where (nil: none): that it
// decodes and, unless lazy, that its content list resolves, adds up to its
// size and names chunks that are present.
func (c *checker) entry(ctx context.Context, where string, b []byte) {
	if b == nil {
		return
	}
	rep := c.rep
	rep.Entries++
	e, err := manifest.DecodeEntry(b)
	if err != nil {
		rep.problem("%s: undecodable entry: %v", where, err)
		return
	}
	if e.Lazy() {
		rep.Lazy++
		if e.Remote.ETag == "" || e.Remote.Key == "" {
			rep.problem("%s: lazy entry without a pinned key and ETag", where)
		}
		return
	}
	cl, err := c.s.ms.Content(ctx, e)
	if err != nil {
		rep.problem("%s: content list %s: %v", where, e.ContentRef, err)
		return
	}
	if n, ok := cl.PlainSize(); !ok || n != e.Size {
		rep.problem("%s: chunks hold %d bytes (%d sealed), entry says %d", where, n, cl.Size(), e.Size)
	}
	for _, r := range cl.Chunks {
		ok, err := c.hasChunk(ctx, r.Hash)
		if err != nil {
			rep.problem("%s: chunk %s: %v", where, r.Hash, err)
		}
		if !ok {
			rep.problem("%s: missing chunk %s", where, r.Hash)
		}
	}
}

// extraRoots checks that every chunk a registered RootSource names is
// present.
func (c *checker) extraRoots(ctx context.Context) {
	for _, rs := range c.s.extraRoots() {
		err := rs.MarkRoots(ctx, func(h chunk.Hash) {
			ok, err := c.hasChunk(ctx, h)
			if err != nil {
				c.rep.problem("external root: chunk %s: %v", h, err)
			}
			if !ok {
				c.rep.problem("external root (lazy-source side index): missing chunk %s", h)
			}
		})
		if err != nil {
			c.rep.problem("external roots: %v", err)
		}
	}
}

// hasChunk reports whether chunk h is stored, asking the chunk store only
// the first time; a failed lookup counts as missing and returns its error
// that once.
func (c *checker) hasChunk(ctx context.Context, h chunk.Hash) (bool, error) {
	if ok, done := c.seenChunks[h]; done {
		return ok, nil
	}
	ok, err := c.s.chunks.Has(ctx, h)
	c.seenChunks[h] = ok
	return ok, err
}

// walkEntries calls fn for every entry under root, skipping subtrees whose
// nodes were already seen (the root itself is marked by the caller).
func (s *Service) walkEntries(ctx context.Context, t *tree.Tree, root chunk.Hash, seen map[chunk.Hash]struct{}, fn func(key, val []byte)) error {
	return t.Walk(ctx, root, func(v *tree.NodeView) error {
		if v.Hash() != root {
			if _, ok := seen[v.Hash()]; ok {
				return tree.SkipSubtree
			}
			seen[v.Hash()] = struct{}{}
		}
		if v.Level() == 0 {
			for i := 0; i < v.Len(); i++ {
				fn(v.Key(i), v.Value(i))
			}
		}
		return nil
	})
}
