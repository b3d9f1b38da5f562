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
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// ReadGit reads an export at src (the bare repository export wrote, or a
// clone of it: git clone --mirror, git gc and plain clones keep what it
// needs) and writes it to w as a dump stream for Load. Each commit is
// sent as its changes from its first parent, found by comparing Git tree
// hashes, so unchanged directories are skipped: O(changes) per commit
// plus the size of the directories on the changed paths. Every commit,
// metadata line and blob is checked against what export would have
// written for it; a mismatch stops the stream with ErrMismatch.
func ReadGit(ctx context.Context, src string, w io.Writer) (*apiv1.Report, error) {
	repo, err := git.PlainOpenWithOptions(src, &git.PlainOpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", src, err)
	}
	g := &gitReader{st: repo.Storer, sw: newStreamWriter(w), nas: map[plumbing.Hash]manifest.CommitID{},
		cache: newTreeCache(64), sent: newSentSet(100000), rep: &apiv1.Report{Uncommitted: []apiv1.Uncommitted{}, Collected: []string{}}}
	if err := g.run(ctx, repo); err != nil {
		g.sw.fail(err)
		return nil, err
	}
	if err := g.sw.flush(); err != nil {
		return nil, err
	}
	return g.rep, nil
}

type gitReader struct {
	st     storage.Storer
	sw     *streamWriter
	nas    map[plumbing.Hash]manifest.CommitID // imported Git commits
	cache  *treeCache
	sent   *sentSet
	rep    *apiv1.Report
	repoJS []byte // .nas/repo.json of the export
	buf    []byte
}

func (g *gitReader) run(ctx context.Context, repo *git.Repository) error {
	ref, err := repo.Reference(plumbing.ReferenceName(exportTag), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return formatf("no %s: not a nas export, or a copy without its tags", exportTag)
	}
	if err != nil {
		return err
	}
	state, err := object.GetCommit(g.st, ref.Hash())
	if err != nil {
		return fmt.Errorf("%s: %w", exportTag, err)
	}
	stree, err := g.cache.get(g.st, state.TreeHash)
	if err != nil {
		return err
	}
	file := func(name string) ([]byte, error) {
		e, ok := findEntry(stree, name)
		if !ok {
			return nil, formatf("%s has no %s", exportTag, name)
		}
		return readBlob(g.st, e.Hash)
	}
	if g.repoJS, err = file(repoFile); err != nil {
		return err
	}
	var hd repoDoc
	if err := decodeStrict(g.repoJS, &hd); err != nil {
		return err
	}
	if hd.Format != formatName || hd.Version != formatVersion {
		return formatf("format %q version %d; this version reads %s version %d", hd.Format, hd.Version, formatName, formatVersion)
	}
	if want, _ := indentPlain(hd); !bytes.Equal(want, g.repoJS) {
		return mismatchf("%s was altered", repoFile)
	}
	var branches []branchDoc
	var cps []checkpointDoc
	for _, f := range []struct {
		name string
		v    any
	}{{branchesDoc, &branches}, {cpsDoc, &cps}} {
		b, err := file(f.name)
		if err != nil {
			return err
		}
		if err := decodeStrict(b, f.v); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if err := g.sw.json(recHeader, hd); err != nil {
		return err
	}
	order, err := g.order(ctx, state.ParentHashes)
	if err != nil {
		return err
	}
	for _, h := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.commit(ctx, h); err != nil {
			return fmt.Errorf("git commit %s: %w", h, err)
		}
		g.rep.Commits++
	}
	for _, b := range branches {
		head, err := manifest.ParseCommitID(b.Head)
		if err != nil {
			return formatf("branch %s: %v", b.Name, err)
		}
		gh := plumbing.NewHash(b.GitHead)
		if g.nas[gh] != head {
			return mismatchf("branch %s: Git commit %s is not nas commit %s", b.Name, b.GitHead, b.Head)
		}
		if validRefName(b.Name) {
			r, err := repo.Reference(plumbing.NewBranchReferenceName(b.Name), true)
			switch {
			case errors.Is(err, plumbing.ErrReferenceNotFound):
			case err != nil:
				return err
			case r.Hash() != gh:
				return mismatchf("refs/heads/%s moved to %s after the export (it was %s); the Git history was changed", b.Name, r.Hash(), gh)
			}
		}
		b.GitHead = ""
		if err := g.sw.json(recBranch, b); err != nil {
			return err
		}
		g.rep.Branches++
	}
	for _, c := range cps {
		if err := g.sw.json(recCheckpoint, c); err != nil {
			return err
		}
	}
	return g.sw.json(recEnd, apiv1.Report{Commits: g.rep.Commits, Entries: g.rep.Entries, Bytes: g.rep.Bytes,
		Uncommitted: []apiv1.Uncommitted{}, Collected: []string{}, Lazy: g.rep.Lazy})
}

// order returns the commits reachable from roots, parents first.
func (g *gitReader) order(ctx context.Context, roots []plumbing.Hash) ([]plumbing.Hash, error) {
	parents := map[plumbing.Hash][]plumbing.Hash{}
	var order []plumbing.Hash
	type frame struct {
		h    plumbing.Hash
		next int
	}
	for _, r := range roots {
		if _, ok := parents[r]; ok {
			continue
		}
		c, err := object.GetCommit(g.st, r)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", r, err)
		}
		parents[r] = c.ParentHashes
		stack := []frame{{h: r}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			ps := parents[f.h]
			if f.next < len(ps) {
				p := ps[f.next]
				f.next++
				if _, seen := parents[p]; seen {
					continue
				}
				c, err := object.GetCommit(g.st, p)
				if err != nil {
					return nil, fmt.Errorf("commit %s: %w", p, err)
				}
				parents[p] = c.ParentHashes
				stack = append(stack, frame{h: p})
				continue
			}
			order = append(order, f.h)
			stack = stack[:len(stack)-1]
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// commitTrees are the parts of a commit's Git tree.
type commitTrees struct {
	obj, meta plumbing.Hash
	commitJS  []byte
}

func (g *gitReader) trees(h plumbing.Hash) (*commitTrees, error) {
	t, err := g.cache.get(g.st, h)
	if err != nil {
		return nil, err
	}
	ne, ok := findEntry(t, nasDir)
	if !ok || ne.Mode != filemode.Dir {
		return nil, formatf("tree %s has no %s directory", h, nasDir)
	}
	nt, err := g.cache.get(g.st, ne.Hash)
	if err != nil {
		return nil, err
	}
	out := &commitTrees{obj: h}
	for _, e := range nt.Entries {
		switch {
		case e.Name == objectsDir && e.Mode == filemode.Dir:
			out.meta = e.Hash
		case e.Name == commitFile && e.Mode == filemode.Regular:
			if out.commitJS, err = readBlob(g.st, e.Hash); err != nil {
				return nil, err
			}
		case e.Name == repoFile && e.Mode == filemode.Regular:
			b, err := readBlob(g.st, e.Hash)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(b, g.repoJS) {
				return nil, mismatchf("%s/%s differs from the export's", nasDir, repoFile)
			}
		case e.Name == readmeFile && e.Mode == filemode.Regular:
		default:
			return nil, mismatchf("unexpected %s/%s", nasDir, e.Name)
		}
	}
	if out.commitJS == nil {
		return nil, formatf("tree %s has no %s/%s", h, nasDir, commitFile)
	}
	return out, nil
}

func (g *gitReader) commit(ctx context.Context, h plumbing.Hash) error {
	gc, err := object.GetCommit(g.st, h)
	if err != nil {
		return err
	}
	cur, err := g.trees(gc.TreeHash)
	if err != nil {
		return err
	}
	var doc commitDoc
	if err := decodeStrict(cur.commitJS, &doc); err != nil {
		return err
	}
	if doc.Base != nil {
		return formatf("%s holds a base", commitFile)
	}
	id, c, info, err := doc.commit()
	if err != nil {
		return err
	}
	if want, _ := indentPlain(newCommitDoc(id, c, info)); !bytes.Equal(want, cur.commitJS) {
		return mismatchf("%s of %s is not in canonical form", commitFile, id)
	}
	// Git parents are the commit's parents that the export holds, in order.
	var want []manifest.CommitID
	imported := map[manifest.CommitID]bool{}
	for _, p := range gc.ParentHashes {
		pid, ok := g.nas[p]
		if !ok {
			return formatf("parent %s comes later", p)
		}
		imported[pid] = true
	}
	for _, p := range c.Parents {
		if imported[p] {
			want = append(want, p)
		}
	}
	got := make([]manifest.CommitID, 0, len(gc.ParentHashes))
	for _, p := range gc.ParentHashes {
		got = append(got, g.nas[p])
	}
	if !slices.Equal(got, want) {
		return mismatchf("its Git parents are not the parents of nas commit %s", id)
	}
	o := &plumbing.MemoryObject{}
	if err := gitCommit(id, c, gc.TreeHash, gc.ParentHashes).Encode(o); err != nil {
		return err
	}
	if o.Hash() != h {
		return mismatchf("the Git commit of %s was altered (message, author, committer or headers differ from what its %s gives)", id, commitFile)
	}
	base := ""
	var old commitTrees
	if len(gc.ParentHashes) > 0 {
		base = g.nas[gc.ParentHashes[0]].String()
		pc, err := object.GetCommit(g.st, gc.ParentHashes[0])
		if err != nil {
			return err
		}
		pt, err := g.trees(pc.TreeHash)
		if err != nil {
			return err
		}
		old = *pt
	}
	doc.Base = &base
	if err := g.sw.json(recCommit, doc); err != nil {
		return err
	}
	if err := g.diff(ctx, nil, old.obj, cur.obj, old.meta, cur.meta); err != nil {
		return err
	}
	if err := g.sw.record(recCommitEnd, nil); err != nil {
		return err
	}
	g.nas[h] = id
	return nil
}

// dirView is one directory of one side of a diff.
type dirView struct {
	entries plumbing.Hash            // the %entries.jsonl blob; zero when none
	blobs   map[string]plumbing.Hash // file entries of the object tree
	objDirs map[string]plumbing.Hash // subdirectories by name
	meta    map[string]plumbing.Hash // metadata subdirectories by name
}

func (g *gitReader) view(segs []string, obj, meta plumbing.Hash) (*dirView, error) {
	v := &dirView{blobs: map[string]plumbing.Hash{}, objDirs: map[string]plumbing.Hash{}, meta: map[string]plumbing.Hash{}}
	top := len(segs) == 0
	if !obj.IsZero() {
		t, err := g.cache.get(g.st, obj)
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			switch {
			case top && e.Name == nasDir:
			case e.Mode == filemode.Dir:
				v.objDirs[e.Name] = e.Hash
			case e.Mode == filemode.Regular:
				v.blobs[e.Name] = e.Hash
			default:
				return nil, mismatchf("%s: mode %o is not a regular file or a directory", e.Name, uint32(e.Mode))
			}
		}
	}
	if !meta.IsZero() {
		t, err := g.cache.get(g.st, meta)
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			switch {
			case e.Mode == filemode.Dir:
				v.meta[e.Name] = e.Hash
			case e.Name == entriesName && e.Mode == filemode.Regular:
				v.entries = e.Hash
			default:
				return nil, mismatchf("unexpected %s in the metadata of %q", e.Name, strings.Join(segs, "/"))
			}
		}
	}
	for name := range v.objDirs {
		if _, ok := v.meta[name]; !ok {
			return nil, mismatchf("directory %q has files but no metadata", name)
		}
	}
	return v, nil
}

// diff sends the changes of one directory and its subdirectories.
func (g *gitReader) diff(ctx context.Context, segs []string, oldObj, newObj, oldMeta, newMeta plumbing.Hash) error {
	if oldObj == newObj && oldMeta == newMeta {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	top := len(segs) == 0
	ov, err := g.view(segs, oldObj, oldMeta)
	if err != nil {
		return err
	}
	nv, err := g.view(segs, newObj, newMeta)
	if err != nil {
		return err
	}
	for name := range nv.meta {
		if _, suffix, err := DecodeSegment(name, top); err != nil || suffix {
			return mismatchf("directory name %q: not an escaped key segment", name)
		}
	}
	if ov.entries != nv.entries || !equalMaps(ov.blobs, nv.blobs) || !equalKeys(ov.meta, nv.meta) {
		if err := g.files(segs, ov, nv); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(nv.meta)+len(ov.meta))
	for n := range nv.meta {
		names = append(names, n)
	}
	for n := range ov.meta {
		if _, ok := nv.meta[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		seg, _, err := DecodeSegment(n, top)
		if err != nil {
			return mismatchf("%v", err)
		}
		sub := append(slices.Clip(segs), seg)
		if err := g.diff(ctx, sub, ov.objDirs[n], nv.objDirs[n], ov.meta[n], nv.meta[n]); err != nil {
			return err
		}
	}
	return nil
}

type readFile struct {
	rec  *fileRec
	line []byte
	name string
}

// lines reads and checks a directory's metadata lines.
func (g *gitReader) lines(segs []string, v *dirView) ([]readFile, error) {
	if v.entries.IsZero() {
		return nil, nil
	}
	b, err := readBlob(g.st, v.entries)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, mismatchf("metadata of %q does not end with a newline", strings.Join(segs, "/"))
	}
	top := len(segs) == 0
	var out []readFile
	for _, line := range bytes.Split(b[:len(b)-1], []byte("\n")) {
		f, name, err := parseLine(line)
		if err != nil {
			return nil, err
		}
		ks := strings.Split(f.key, "/")
		if !slices.Equal(ks[:len(ks)-1], segs) {
			return nil, mismatchf("key %q is listed in the metadata of %q", f.key, strings.Join(segs, "/"))
		}
		want := EncodeSegment(ks[len(ks)-1], top)
		if _, isDir := v.meta[want]; isDir {
			want += fileSuffix
		}
		if name != want {
			return nil, mismatchf("key %q is stored as %q, not %q", f.key, name, want)
		}
		if len(out) > 0 && out[len(out)-1].rec.key >= f.key {
			return nil, mismatchf("metadata of %q is not sorted by key", strings.Join(segs, "/"))
		}
		out = append(out, readFile{rec: f, line: line, name: name})
	}
	return out, nil
}

// files sends the changed keys directly in one directory.
func (g *gitReader) files(segs []string, ov, nv *dirView) error {
	olds, err := g.lines(segs, ov)
	if err != nil {
		return err
	}
	news, err := g.lines(segs, nv)
	if err != nil {
		return err
	}
	claimed := 0
	oldByKey := make(map[string]readFile, len(olds))
	for _, f := range olds {
		oldByKey[f.rec.key] = f
	}
	for _, f := range news {
		e, err := manifest.DecodeEntry(f.rec.entry)
		if err != nil {
			return mismatchf("%q: %v", f.rec.key, err)
		}
		blob, hasBlob := nv.blobs[f.name]
		if e.Lazy() == hasBlob {
			if hasBlob {
				return mismatchf("%q is lazy but has a file", f.rec.key)
			}
			return mismatchf("%q has no file", f.rec.key)
		}
		if hasBlob {
			claimed++
		}
		o, had := oldByKey[f.rec.key]
		delete(oldByKey, f.rec.key)
		if had && bytes.Equal(o.line, f.line) {
			if ov.blobs[o.name] != blob {
				return mismatchf("the file of %q changed but its metadata did not", f.rec.key)
			}
			continue
		}
		if err := g.send(f.rec, e, blob); err != nil {
			return fmt.Errorf("%q: %w", f.rec.key, err)
		}
	}
	if claimed != len(nv.blobs) {
		for name := range nv.blobs {
			found := false
			for _, f := range news {
				found = found || f.name == name
			}
			if !found {
				return mismatchf("file %q in %q has no metadata line", name, strings.Join(segs, "/"))
			}
		}
	}
	keys := make([]string, 0, len(oldByKey))
	for k := range oldByKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g.rep.Entries++
		if err := g.sw.json(recEntry, entryRec{Key: text(k), Delete: true}); err != nil {
			return err
		}
	}
	return nil
}

// send writes one entry record and its bytes.
func (g *gitReader) send(f *fileRec, e *manifest.Entry, blob plumbing.Hash) error {
	g.rep.Entries++
	rec := entryRec{Key: text(f.key), Entry: base64.StdEncoding.EncodeToString(f.entry), Writer: f.writer}
	if len(f.list) > 0 {
		rec.List = base64.StdEncoding.EncodeToString(f.list)
	}
	var content *manifest.Content
	switch {
	case e.Lazy():
		g.rep.Lazy++
		return g.sw.json(recEntry, rec)
	case e.Content != nil:
		content = e.Content
	case !e.ContentRef.IsZero():
		if chunk.Sum(f.list) != e.ContentRef {
			return mismatchf("content list does not hash to %s", e.ContentRef)
		}
		var err error
		if content, err = manifest.DecodeContent(f.list); err != nil {
			return mismatchf("content list: %v", err)
		}
	}
	var chunks []chunk.Ref
	if content != nil {
		chunks = content.Chunks
	}
	b, err := object.GetBlob(g.st, blob)
	if err != nil {
		return err
	}
	if size := manifest.StoredSize(e, content); b.Size != size {
		return mismatchf("its file holds %d bytes, the entry says %d", b.Size, size)
	}
	if len(chunks) == 0 {
		return g.sw.json(recEntry, rec)
	}
	sk := sentKey{content: contentID(e), blob: blob}
	if g.sent.has(sk) {
		rec.Data = dataHave
		return g.sw.json(recEntry, rec)
	}
	rec.Data = dataInline
	if err := g.sw.json(recEntry, rec); err != nil {
		return err
	}
	r, err := b.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	for i, ref := range chunks {
		if cap(g.buf) < int(ref.Size) {
			g.buf = make([]byte, ref.Size)
		}
		buf := g.buf[:ref.Size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return mismatchf("its file is shorter than its chunks: %v", err)
		}
		if chunk.Sum(buf) != ref.Hash {
			return mismatchf("bytes %d.. of its file (chunk %d) do not hash to %s: the file was altered", offsetOf(chunks, i), i, ref.Hash)
		}
		if err := g.sw.record(recData, buf); err != nil {
			return err
		}
		g.rep.Bytes += int64(ref.Size)
	}
	g.sent.add(sk)
	return nil
}

func offsetOf(chunks []chunk.Ref, i int) int64 {
	var n int64
	for _, c := range chunks[:i] {
		n += int64(c.Size)
	}
	return n
}

func equalMaps(a, b map[string]plumbing.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalKeys(a, b map[string]plumbing.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// sentKey names bytes already sent: a content (chunk list) read from a
// blob. The gateway keeps what it received, so the same pair is sent once.
type sentKey struct {
	content chunk.Hash
	blob    plumbing.Hash
}

// sentSet remembers the last n sentKeys (older ones are sent again).
type sentSet struct {
	n     int
	m     map[sentKey]struct{}
	order []sentKey
}

func newSentSet(n int) *sentSet { return &sentSet{n: n, m: map[sentKey]struct{}{}} }

func (s *sentSet) has(k sentKey) bool { _, ok := s.m[k]; return ok }

func (s *sentSet) add(k sentKey) {
	if s.has(k) {
		return
	}
	if len(s.order) >= s.n {
		delete(s.m, s.order[0])
		s.order = s.order[1:]
	}
	s.m[k] = struct{}{}
	s.order = append(s.order, k)
}
