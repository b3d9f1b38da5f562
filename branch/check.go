package branch

import (
	"context"
	"fmt"

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
	rep := &CheckReport{}
	repos, err := s.allRepos(ctx)
	if err != nil {
		return nil, err
	}
	seenNodes := map[chunk.Hash]struct{}{}
	seenChunks := map[chunk.Hash]bool{}
	checkEntry := func(where string, b []byte) {
		if b == nil {
			return
		}
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
		c, err := s.ms.Content(ctx, e)
		if err != nil {
			rep.problem("%s: content list %s: %v", where, e.ContentRef, err)
			return
		}
		if c.Size() != e.Size {
			rep.problem("%s: chunks hold %d bytes, entry says %d", where, c.Size(), e.Size)
		}
		for _, r := range c.Chunks {
			ok, done := seenChunks[r.Hash]
			if !done {
				ok, err = s.chunks.Has(ctx, r.Hash)
				if err != nil {
					rep.problem("%s: chunk %s: %v", where, r.Hash, err)
				}
				seenChunks[r.Hash] = ok
			}
			if !ok {
				rep.problem("%s: missing chunk %s", where, r.Hash)
			}
		}
	}
	for _, rr := range repos {
		rep.Repos++
		t := s.treeFor(rr)
		var branches []*branchRecord
		err := s.db.View(ctx, func(r kv.Reader) error {
			return r.Scan(kv.Prefix(branchPrefix(rr.ID)), func(_, v []byte) error {
				br, err := decodeBranch(v)
				if err != nil {
					rep.problem("%s: undecodable branch record: %v", rr.Name, err)
					return nil
				}
				branches = append(branches, br)
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
		seenCommits := map[manifest.CommitID]struct{}{}
		for _, br := range branches {
			rep.Branches++
			id := br.Head
			for first := true; !id.IsZero(); first = false {
				if _, ok := seenCommits[id]; ok {
					break
				}
				c, err := s.ms.GetCommit(ctx, id)
				if err != nil {
					if first {
						rep.problem("%s/%s: head %s: %v", rr.Name, br.Name, id, err)
					}
					break // older history may have expired
				}
				seenCommits[id] = struct{}{}
				rep.Commits++
				if err := t.Check(ctx, c.Tree); err != nil {
					rep.problem("%s: commit %s: tree: %v", rr.Name, id, err)
				} else if _, ok := seenNodes[c.Tree]; !ok {
					seenNodes[c.Tree] = struct{}{}
					where := fmt.Sprintf("%s@%s", rr.Name, id)
					_ = s.walkEntries(ctx, t, c.Tree, seenNodes, func(key, val []byte) {
						checkEntry(where+" "+string(key), val)
					})
				}
				if len(c.Parents) == 0 {
					break
				}
				id = c.Parents[0]
			}
		}
		for _, p := range []struct{ prefix, what string }{{keyspace.Stage, "staging"}, {keyspace.Version, "version"}, {keyspace.Part, "part"}} {
			err := s.db.View(ctx, func(r kv.Reader) error {
				return r.Scan(kv.Prefix(u64([]byte(p.prefix), rr.ID)), func(k, v []byte) error {
					where := fmt.Sprintf("%s %s %x", rr.Name, p.what, k[10:])
					switch p.prefix {
					case keyspace.Stage:
						st, err := decodeStaged(v)
						if err != nil {
							rep.problem("%s: %v", where, err)
							return nil
						}
						checkEntry(where, st.entry)
					case keyspace.Version:
						rec, err := decodeVersion(v)
						if err != nil {
							rep.problem("%s: %v", where, err)
							return nil
						}
						checkEntry(where, rec.entry)
					default:
						checkEntry(where, v)
					}
					return nil
				})
			})
			if err != nil {
				return nil, err
			}
		}
	}
	for _, rs := range s.extraRoots() {
		err := rs.MarkRoots(ctx, func(h chunk.Hash) {
			ok, done := seenChunks[h]
			if !done {
				var err error
				if ok, err = s.chunks.Has(ctx, h); err != nil {
					rep.problem("external root: chunk %s: %v", h, err)
				}
				seenChunks[h] = ok
			}
			if !ok {
				rep.problem("external root (lazy-source side index): missing chunk %s", h)
			}
		})
		if err != nil {
			rep.problem("external roots: %v", err)
		}
	}
	st, err := s.chunks.Check(ctx, func(p cas.Problem) { rep.problem("chunk %s: %s", p.Hash, p.Detail) })
	if err != nil {
		return nil, err
	}
	rep.Chunks = st
	return rep, nil
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
