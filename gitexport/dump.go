package gitexport

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// Dump writes repository repo of svc to w as a dump stream: every commit
// reachable from a branch head, a fork point or a checkpoint, parents
// first, each as the changes from its first parent (O(changes) per commit),
// with the bytes of every content not already carried by a parent, then
// the branches and checkpoints. Garbage collection is held off while it
// runs. On failure after the stream started, an error record ends it.
func Dump(ctx context.Context, svc *branch.Service, repo string, w io.Writer) (*apiv1.Report, error) {
	h, st, err := svc.OpenHistory(ctx, repo)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d := &dumper{svc: svc, h: h, t: h.Tree(), sw: newStreamWriter(w), rep: &apiv1.Report{
		Uncommitted: []apiv1.Uncommitted{}, Collected: []string{},
		VersionRecords: st.VersionRecords, DeleteMarkers: st.DeleteMarkers, Trash: st.Trash, Uploads: st.Uploads}}
	if err := d.run(ctx, st); err != nil {
		d.sw.fail(err)
		return nil, err
	}
	if err := d.sw.flush(); err != nil {
		return nil, err
	}
	return d.rep, nil
}

type dumper struct {
	svc *branch.Service
	h   *branch.History
	t   *tree.Tree
	sw  *streamWriter
	rep *apiv1.Report
	buf bytes.Buffer // one chunk
}

// dumpCommit is a commit to export with the parents that are exported.
type dumpCommit struct {
	c       *manifest.Commit
	present []manifest.CommitID
}

func (d *dumper) run(ctx context.Context, st *branch.RepoState) error {
	err := d.sw.json(recHeader, repoDoc{Format: formatName, Version: formatVersion, Repo: st.Name,
		DefaultBranch: st.DefaultBranch, Created: st.Created, Salt: base64.StdEncoding.EncodeToString(st.Salt)})
	if err != nil {
		return err
	}
	var roots []manifest.CommitID
	for _, b := range st.Branches {
		roots = append(roots, b.Head)
		if !b.Base.IsZero() {
			roots = append(roots, b.Base)
		}
		if b.StagedKeys > 0 {
			d.rep.Uncommitted = append(d.rep.Uncommitted, apiv1.Uncommitted{Branch: b.Name, Keys: b.StagedKeys})
		}
	}
	for _, cp := range st.Checkpoints {
		roots = append(roots, cp.Commit)
	}
	order, commits, err := d.walk(ctx, roots)
	if err != nil {
		return err
	}
	for _, id := range order {
		if err := d.commit(ctx, id, commits[id], commits); err != nil {
			return fmt.Errorf("export commit %s: %w", id, err)
		}
		d.rep.Commits++
	}
	for _, b := range st.Branches {
		bd := branchDoc{Name: b.Name, Head: b.Head.String(), Protected: b.Protected, Created: b.Created}
		if !b.Base.IsZero() {
			bd.Base = b.Base.String()
		}
		if err := d.sw.json(recBranch, bd); err != nil {
			return err
		}
	}
	for _, cp := range st.Checkpoints {
		cd := checkpointDoc{Branch: cp.Branch, Name: text(cp.Name), Commit: cp.Commit.String(), Created: cp.Created.UnixNano()}
		if err := d.sw.json(recCheckpoint, cd); err != nil {
			return err
		}
	}
	return d.sw.json(recEnd, d.rep)
}

// walk loads every commit reachable from roots and returns them parents
// first (a depth-first post-order from the sorted roots, so the order is
// the same on every run). Parents the repository no longer has are
// reported and left out.
func (d *dumper) walk(ctx context.Context, roots []manifest.CommitID) ([]manifest.CommitID, map[manifest.CommitID]*dumpCommit, error) {
	slices.SortFunc(roots, func(a, b manifest.CommitID) int { return bytes.Compare(a[:], b[:]) })
	roots = slices.Compact(roots)
	commits := map[manifest.CommitID]*dumpCommit{}
	missing := map[manifest.CommitID]bool{}
	load := func(id manifest.CommitID, root bool) (*dumpCommit, error) {
		if dc, ok := commits[id]; ok {
			return dc, nil
		}
		if missing[id] {
			return nil, nil
		}
		c, err := d.h.Commit(ctx, id)
		if errors.Is(err, manifest.ErrNotFound) && !root {
			missing[id] = true
			d.rep.Collected = append(d.rep.Collected, id.String())
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		dc := &dumpCommit{c: c}
		commits[id] = dc
		return dc, nil
	}
	type frame struct {
		id   manifest.CommitID
		next int // next parent to visit
	}
	var order []manifest.CommitID
	done := map[manifest.CommitID]bool{}
	for _, r := range roots {
		if done[r] {
			continue
		}
		if _, err := load(r, true); err != nil {
			return nil, nil, err
		}
		stack := []frame{{id: r}}
		onStack := map[manifest.CommitID]bool{r: true}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			dc := commits[f.id]
			if f.next < len(dc.c.Parents) {
				p := dc.c.Parents[f.next]
				f.next++
				if done[p] || onStack[p] {
					continue
				}
				pc, err := load(p, false)
				if err != nil {
					return nil, nil, err
				}
				if pc == nil {
					continue
				}
				stack = append(stack, frame{id: p})
				onStack[p] = true
				continue
			}
			for _, p := range dc.c.Parents {
				if _, ok := commits[p]; ok {
					dc.present = append(dc.present, p)
				}
			}
			done[f.id] = true
			delete(onStack, f.id)
			order = append(order, f.id)
			stack = stack[:len(stack)-1]
		}
	}
	return order, commits, nil
}

func (d *dumper) commit(ctx context.Context, id manifest.CommitID, dc *dumpCommit, all map[manifest.CommitID]*dumpCommit) error {
	info, err := d.h.Info(ctx, id)
	if err != nil {
		return err
	}
	doc := newCommitDoc(id, dc.c, info)
	var baseRoot chunk.Hash
	base := ""
	if len(dc.present) > 0 {
		baseRoot = all[dc.present[0]].c.Tree
		base = dc.present[0].String()
	}
	doc.Base = &base
	if err := d.sw.json(recCommit, doc); err != nil {
		return err
	}
	others := make([]manifest.CommitID, 0, len(dc.present))
	if len(dc.present) > 1 {
		others = dc.present[1:]
	}
	err = d.t.Diff(ctx, baseRoot, dc.c.Tree, func(ch tree.Change) error {
		return d.change(ctx, ch, base, others, all)
	})
	if err != nil {
		return err
	}
	return d.sw.record(recCommitEnd, nil)
}

func (d *dumper) change(ctx context.Context, ch tree.Change, base string, others []manifest.CommitID, all map[manifest.CommitID]*dumpCommit) error {
	key := string(ch.Key)
	d.rep.Entries++
	if ch.New == nil {
		return d.sw.json(recEntry, entryRec{Key: text(key), Delete: true})
	}
	e, err := manifest.DecodeEntry(ch.New)
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	rec := entryRec{Key: text(key), Entry: base64.StdEncoding.EncodeToString(ch.New)}
	writer, ok, err := d.h.Writer(ctx, key, e.VersionID, ch.New)
	if err != nil {
		return err
	}
	if ok {
		rec.Writer = hexID(writer)
	}
	if e.Lazy() {
		d.rep.Lazy++
		return d.sw.json(recEntry, rec)
	}
	content, err := d.svc.Manifest().Content(ctx, e)
	if err != nil {
		return fmt.Errorf("%q: content list: %w", key, err)
	}
	if !e.ContentRef.IsZero() {
		list := content.Encode()
		if chunk.Sum(list) != e.ContentRef {
			return fmt.Errorf("%q: content list %s does not re-encode to its hash: %w", key, e.ContentRef, manifest.ErrCorrupt)
		}
		rec.List = base64.StdEncoding.EncodeToString(list)
	}
	if len(content.Chunks) == 0 {
		return d.sw.json(recEntry, rec)
	}
	id := contentID(e)
	switch {
	case ch.Old != nil && sameContent(ch.Old, id):
		rec.Data = dataFrom + base
	default:
		for _, p := range others {
			old, found, err := d.t.Get(ctx, all[p].c.Tree, ch.Key)
			if err != nil {
				return err
			}
			if found && sameContent(old, id) {
				rec.Data = dataFrom + p.String()
				break
			}
		}
	}
	if rec.Data != "" {
		return d.sw.json(recEntry, rec)
	}
	rec.Data = dataInline
	if err := d.sw.json(recEntry, rec); err != nil {
		return err
	}
	for _, r := range content.Chunks {
		d.buf.Reset()
		if err := d.svc.Chunks().Read(ctx, &d.buf, r.Hash, 0, int64(r.Size)); err != nil {
			return fmt.Errorf("%q: chunk %s: %w", key, r.Hash, err)
		}
		if err := d.sw.record(recData, d.buf.Bytes()); err != nil {
			return err
		}
		d.rep.Bytes += int64(r.Size)
	}
	return nil
}

// contentID names an entry's bytes: the hash of its encoded content list
// (which is ContentRef when the list is stored by reference).
func contentID(e *manifest.Entry) chunk.Hash {
	if !e.ContentRef.IsZero() {
		return e.ContentRef
	}
	if e.Content == nil {
		return chunk.Sum(nil)
	}
	return chunk.Sum(e.Content.Encode())
}

func sameContent(encoded []byte, id chunk.Hash) bool {
	e, err := manifest.DecodeEntry(encoded)
	return err == nil && !e.Lazy() && contentID(e) == id
}

// newCommitDoc renders a commit and its lineage record.
func newCommitDoc(id manifest.CommitID, c *manifest.Commit, info *branch.CommitInfo) *commitDoc {
	doc := &commitDoc{ID: id.String(), Parents: []string{}, Message: text(c.Message), Principal: text(c.Principal),
		OnBehalfOf: text(c.OnBehalfOf), Run: text(c.Run), Lease: text(c.Lease), Time: c.Time, Extra: [][2]text{}}
	if !c.Tree.IsZero() {
		doc.Tree = c.Tree.String()
	}
	for _, p := range c.Parents {
		doc.Parents = append(doc.Parents, p.String())
	}
	for _, p := range c.Extra {
		doc.Extra = append(doc.Extra, [2]text{text(p.Name), text(p.Value)})
	}
	if info != nil {
		doc.Info = &infoDoc{Branch: hexID(info.Branch), Seq: info.Seq, Lineage: []lineageDoc{}}
		for _, l := range info.Lineage {
			doc.Info.Lineage = append(doc.Info.Lineage, lineageDoc{Branch: hexID(l.Branch), MaxSeq: l.MaxSeq})
		}
	}
	return doc
}

// commit turns a commit document back into a commit and its lineage
// record, checking that the ID it claims is the commit's.
func (doc *commitDoc) commit() (manifest.CommitID, *manifest.Commit, *branch.CommitInfo, error) {
	id, err := manifest.ParseCommitID(doc.ID)
	if err != nil {
		return id, nil, nil, formatf("commit id: %v", err)
	}
	c := &manifest.Commit{Message: string(doc.Message), Principal: string(doc.Principal), OnBehalfOf: string(doc.OnBehalfOf),
		Run: string(doc.Run), Lease: string(doc.Lease), Time: doc.Time}
	if doc.Tree != "" {
		if c.Tree, err = chunk.ParseHash(doc.Tree); err != nil {
			return id, nil, nil, formatf("commit %s: tree: %v", doc.ID, err)
		}
	}
	for _, p := range doc.Parents {
		pid, err := manifest.ParseCommitID(p)
		if err != nil {
			return id, nil, nil, formatf("commit %s: parent: %v", doc.ID, err)
		}
		c.Parents = append(c.Parents, pid)
	}
	for _, p := range doc.Extra {
		c.Extra = append(c.Extra, manifest.Pair{Name: string(p[0]), Value: string(p[1])})
	}
	if got := c.ID(); got != id {
		return id, nil, nil, mismatchf("commit %s: its fields hash to %s (message, provenance, time, parents or tree altered)", id, got)
	}
	var info *branch.CommitInfo
	if doc.Info != nil {
		b, err := parseHexID(doc.Info.Branch)
		if err != nil {
			return id, nil, nil, err
		}
		info = &branch.CommitInfo{Branch: b, Seq: doc.Info.Seq}
		for _, l := range doc.Info.Lineage {
			lb, err := parseHexID(l.Branch)
			if err != nil {
				return id, nil, nil, err
			}
			info.Lineage = append(info.Lineage, branch.LineageItem{Branch: lb, MaxSeq: l.MaxSeq})
		}
	}
	return id, c, info, nil
}

// Summary is a one-paragraph description of what an export left out.
func Summary(r *apiv1.Report) string {
	var parts []string
	if len(r.Uncommitted) > 0 {
		names := make([]string, 0, len(r.Uncommitted))
		for _, u := range r.Uncommitted {
			names = append(names, fmt.Sprintf("%s (%d keys)", u.Branch, u.Keys))
		}
		parts = append(parts, fmt.Sprintf("%d branch(es) have uncommitted changes that were not exported: %s; commit them and export again to include them",
			len(r.Uncommitted), strings.Join(names, ", ")))
	}
	if r.DeleteMarkers > 0 {
		parts = append(parts, fmt.Sprintf("%d delete markers are not exported (a key's absence is)", r.DeleteMarkers))
	}
	if r.Trash > 0 {
		parts = append(parts, fmt.Sprintf("%d trash entries are not exported", r.Trash))
	}
	if r.Uploads > 0 {
		parts = append(parts, fmt.Sprintf("%d open multipart uploads are not exported", r.Uploads))
	}
	if len(r.Collected) > 0 {
		parts = append(parts, fmt.Sprintf("%d parent commits had already been garbage collected", len(r.Collected)))
	}
	if r.Lazy > 0 {
		parts = append(parts, fmt.Sprintf("%d lazily attached entries are exported as references to their source, without bytes", r.Lazy))
	}
	if len(r.NoRef) > 0 {
		parts = append(parts, fmt.Sprintf("branches %s have no refs/heads ref (not valid Git ref names); they are in .nas/branches.json", strings.Join(r.NoRef, ", ")))
	}
	return strings.Join(parts, "; ")
}
