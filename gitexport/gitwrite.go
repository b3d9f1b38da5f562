package gitexport

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Paths inside a commit's tree.
const (
	nasDir      = ".nas"
	objectsDir  = "objects"
	readmeFile  = "README"
	repoFile    = "repo.json"
	commitFile  = "commit.json"
	exportTag   = "refs/tags/nas/export"
	branchesDoc = "branches.json"
	cpsDoc      = "checkpoints.json"
	reportFile  = "report.json"
)

// WriteGit reads a dump stream from r and writes it as a bare Git
// repository at dest, which must not exist or be an empty directory: one
// Git commit per nas commit, refs/heads/<branch> per branch and the
// export's own state under refs/tags/nas/export. Objects are written
// loose and streamed (memory holds the directories along one path, not
// the objects). Chunks are verified against their hashes on the way.
func WriteGit(ctx context.Context, r io.Reader, dest string) (*apiv1.Report, error) {
	if err := emptyDir(dest); err != nil {
		return nil, err
	}
	repo, err := git.PlainInit(dest, true)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", dest, err)
	}
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("create %s: unexpected storage %T", dest, repo.Storer)
	}
	w := &gitWriter{st: st, sr: newStreamReader(r), commits: map[manifest.CommitID]plumbing.Hash{},
		trees: map[manifest.CommitID]plumbing.Hash{}, cache: newTreeCache(64)}
	rep, err := w.run(ctx)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// emptyDir refuses a destination that exists and is not an empty
// directory.
func emptyDir(dest string) error {
	f, err := os.Open(dest)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", dest, ErrDestination)
	}
	if len(names) > 0 {
		return fmt.Errorf("%s is not empty: %w", dest, ErrDestination)
	}
	return nil
}

type gitWriter struct {
	st      *filesystem.Storage
	sr      *streamReader
	hd      repoDoc
	readme  plumbing.Hash
	repo    plumbing.Hash // .nas/repo.json
	empty   plumbing.Hash // the empty blob
	commits map[manifest.CommitID]plumbing.Hash
	trees   map[manifest.CommitID]plumbing.Hash // root tree of each commit
	cache   *treeCache
	rep     apiv1.Report
	stack   []*wdir
}

func (w *gitWriter) run(ctx context.Context) (*apiv1.Report, error) {
	kind, payload, err := w.sr.next()
	if err != nil {
		return nil, err
	}
	if kind != recHeader {
		return nil, formatf("stream starts with record %q", kind)
	}
	if err := decodeStrict(payload, &w.hd); err != nil {
		return nil, err
	}
	if w.hd.Format != formatName || w.hd.Version != formatVersion {
		return nil, formatf("format %q version %d", w.hd.Format, w.hd.Version)
	}
	rj, err := indentPlain(w.hd)
	if err != nil {
		return nil, err
	}
	if w.repo, err = w.blob(rj); err != nil {
		return nil, err
	}
	if w.readme, err = w.blob([]byte(readme)); err != nil {
		return nil, err
	}
	if w.empty, err = w.blob(nil); err != nil {
		return nil, err
	}
	var branches []branchDoc
	var cps []checkpointDoc
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		kind, payload, err := w.sr.next()
		if err != nil {
			return nil, err
		}
		switch kind {
		case recCommit:
			var doc commitDoc
			if err := decodeStrict(payload, &doc); err != nil {
				return nil, err
			}
			if err := w.commit(ctx, &doc); err != nil {
				return nil, fmt.Errorf("commit %s: %w", doc.ID, err)
			}
		case recBranch:
			var b branchDoc
			if err := decodeStrict(payload, &b); err != nil {
				return nil, err
			}
			branches = append(branches, b)
		case recCheckpoint:
			var c checkpointDoc
			if err := decodeStrict(payload, &c); err != nil {
				return nil, err
			}
			cps = append(cps, c)
		case recEnd:
			if err := decodeStrict(payload, &w.rep); err != nil {
				return nil, err
			}
			if err := w.sr.expectEOF(); err != nil {
				return nil, err
			}
			if err := w.finish(branches, cps); err != nil {
				return nil, err
			}
			rep := w.rep
			rep.Repo, rep.Branches = w.hd.Repo, len(branches)
			return &rep, nil
		default:
			return nil, formatf("unexpected record %q", kind)
		}
	}
}

// finish writes the branches, HEAD and the export's state commit.
func (w *gitWriter) finish(branches []branchDoc, cps []checkpointDoc) error {
	var roots []plumbing.Hash
	lookup := func(id string) (plumbing.Hash, error) {
		cid, err := manifest.ParseCommitID(id)
		if err != nil {
			return plumbing.ZeroHash, formatf("commit %q: %v", id, err)
		}
		h, ok := w.commits[cid]
		if !ok {
			return plumbing.ZeroHash, formatf("commit %s was not in the stream", id)
		}
		return h, nil
	}
	w.rep.NoRef = nil
	for i := range branches {
		b := &branches[i]
		h, err := lookup(b.Head)
		if err != nil {
			return fmt.Errorf("branch %s: %w", b.Name, err)
		}
		b.GitHead = h.String()
		roots = append(roots, h)
		if b.Base != "" {
			bh, err := lookup(b.Base)
			if err != nil {
				return fmt.Errorf("branch %s: base: %w", b.Name, err)
			}
			roots = append(roots, bh)
		}
		if !validRefName(b.Name) {
			w.rep.NoRef = append(w.rep.NoRef, b.Name)
			continue
		}
		if err := w.st.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(b.Name), h)); err != nil {
			return err
		}
	}
	for _, c := range cps {
		h, err := lookup(c.Commit)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", c.Name, err)
		}
		roots = append(roots, h)
	}
	if validRefName(w.hd.DefaultBranch) {
		if err := w.st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(w.hd.DefaultBranch))); err != nil {
			return err
		}
	}
	slices.SortFunc(roots, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	roots = slices.Compact(roots)
	if branches == nil {
		branches = []branchDoc{}
	}
	if cps == nil {
		cps = []checkpointDoc{}
	}
	entries := []object.TreeEntry{{Name: readmeFile, Mode: filemode.Regular, Hash: w.readme}, {Name: repoFile, Mode: filemode.Regular, Hash: w.repo}}
	for _, f := range []struct {
		name string
		v    any
	}{{branchesDoc, branches}, {cpsDoc, cps}, {reportFile, &w.rep}} {
		b, err := indentPlain(f.v)
		if err != nil {
			return err
		}
		h, err := w.blob(b)
		if err != nil {
			return err
		}
		entries = append(entries, object.TreeEntry{Name: f.name, Mode: filemode.Regular, Hash: h})
	}
	th, err := w.tree(entries)
	if err != nil {
		return err
	}
	sig := object.Signature{Name: "nas", Email: "export@nas.invalid", When: time.Now().UTC().Truncate(time.Second)}
	msg := fmt.Sprintf("nas export of %s\n\nThe parents of this commit are every exported root (branch heads, fork\npoints and checkpoints); its tree holds the branches, checkpoints and\nwhat the export could not carry.\n", w.hd.Repo)
	ch, err := w.encode(&object.Commit{Author: sig, Committer: sig, TreeHash: th, ParentHashes: roots, Message: msg})
	if err != nil {
		return err
	}
	return w.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(exportTag), ch))
}

// wdir is a directory open while a commit's changes are applied: the
// directories along the path of the current key are open, from the root.
type wdir struct {
	segs  []string          // its key segments from the root
	files map[string]*wfile // by last key segment
	dirs  map[string]wsub   // subdirectories by key segment
}

// wsub is a subdirectory's object tree and metadata tree (zero: none).
type wsub struct{ obj, meta plumbing.Hash }

type wfile struct {
	fileRec
	blob plumbing.Hash // zero for a lazy entry
}

func (w *gitWriter) commit(ctx context.Context, doc *commitDoc) error {
	id, c, _, err := doc.commit()
	if err != nil {
		return err
	}
	if _, dup := w.commits[id]; dup {
		return formatf("commit %s twice", id)
	}
	var baseTree plumbing.Hash
	var base manifest.CommitID
	if doc.Base != nil && *doc.Base != "" {
		if base, err = manifest.ParseCommitID(*doc.Base); err != nil {
			return formatf("base: %v", err)
		}
		var ok bool
		if baseTree, ok = w.trees[base]; !ok {
			return formatf("base %s not written yet", base)
		}
	}
	root, err := w.openRoot(baseTree)
	if err != nil {
		return err
	}
	w.stack = []*wdir{root}
	for {
		kind, payload, err := w.sr.next()
		if err != nil {
			return err
		}
		if kind == recCommitEnd {
			break
		}
		if kind != recEntry {
			return formatf("record %q inside a commit", kind)
		}
		var rec entryRec
		if err := decodeStrict(payload, &rec); err != nil {
			return err
		}
		if err := w.change(ctx, &rec, base); err != nil {
			return fmt.Errorf("%q: %w", string(rec.Key), err)
		}
	}
	for len(w.stack) > 1 {
		if err := w.close(); err != nil {
			return err
		}
	}
	rootObj, meta, err := w.build(w.stack[0])
	if err != nil {
		return err
	}
	cdoc := newCommitDoc(id, c, nil)
	cdoc.Info = doc.Info
	cj, err := indentPlain(cdoc)
	if err != nil {
		return err
	}
	ch, err := w.blob(cj)
	if err != nil {
		return err
	}
	nas := []object.TreeEntry{{Name: readmeFile, Mode: filemode.Regular, Hash: w.readme},
		{Name: commitFile, Mode: filemode.Regular, Hash: ch}, {Name: repoFile, Mode: filemode.Regular, Hash: w.repo}}
	if meta != nil {
		mh, err := w.tree(meta)
		if err != nil {
			return err
		}
		nas = append(nas, object.TreeEntry{Name: objectsDir, Mode: filemode.Dir, Hash: mh})
	}
	nh, err := w.tree(nas)
	if err != nil {
		return err
	}
	rootObj = append(rootObj, object.TreeEntry{Name: nasDir, Mode: filemode.Dir, Hash: nh})
	th, err := w.tree(rootObj)
	if err != nil {
		return err
	}
	var parents []plumbing.Hash
	for _, p := range c.Parents {
		if h, ok := w.commits[p]; ok {
			parents = append(parents, h)
		}
	}
	gh, err := w.encode(gitCommit(id, c, th, parents))
	if err != nil {
		return err
	}
	w.commits[id], w.trees[id] = gh, th
	return nil
}

// openRoot opens the root directory of a base commit's tree.
func (w *gitWriter) openRoot(baseTree plumbing.Hash) (*wdir, error) {
	d := &wdir{files: map[string]*wfile{}, dirs: map[string]wsub{}}
	if baseTree.IsZero() {
		return d, nil
	}
	t, err := w.cache.get(w.st, baseTree)
	if err != nil {
		return nil, err
	}
	var obj, meta plumbing.Hash
	obj = baseTree
	if e, ok := findEntry(t, nasDir); ok {
		nt, err := w.cache.get(w.st, e.Hash)
		if err != nil {
			return nil, err
		}
		if me, ok := findEntry(nt, objectsDir); ok {
			meta = me.Hash
		}
	}
	return d, w.load(d, obj, meta)
}

// load fills d from its object tree and metadata tree in the base commit.
func (w *gitWriter) load(d *wdir, obj, meta plumbing.Hash) error {
	top := len(d.segs) == 0
	blobs := map[string]plumbing.Hash{}
	if !obj.IsZero() {
		t, err := w.cache.get(w.st, obj)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			if top && e.Name == nasDir {
				continue
			}
			if e.Mode == filemode.Dir {
				seg, _, err := DecodeSegment(e.Name, top)
				if err != nil {
					return err
				}
				s := d.dirs[seg]
				s.obj = e.Hash
				d.dirs[seg] = s
				continue
			}
			blobs[e.Name] = e.Hash
		}
	}
	if meta.IsZero() {
		return nil
	}
	t, err := w.cache.get(w.st, meta)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Dir {
			seg, _, err := DecodeSegment(e.Name, top)
			if err != nil {
				return err
			}
			s := d.dirs[seg]
			s.meta = e.Hash
			d.dirs[seg] = s
			continue
		}
		if e.Name != entriesName {
			return formatf("unexpected %s in the metadata tree", e.Name)
		}
		b, err := readBlob(w.st, e.Hash)
		if err != nil {
			return err
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			f, name, err := parseLine(line)
			if err != nil {
				return err
			}
			segs := strings.Split(f.key, "/")
			d.files[segs[len(segs)-1]] = &wfile{fileRec: *f, blob: blobs[name]}
		}
	}
	return nil
}

// change applies one entry record to the open directories.
func (w *gitWriter) change(ctx context.Context, rec *entryRec, base manifest.CommitID) error {
	key := string(rec.Key)
	segs := strings.Split(key, "/")
	dirSegs, last := segs[:len(segs)-1], segs[len(segs)-1]
	for !isPrefix(w.top().segs, dirSegs) {
		if err := w.close(); err != nil {
			return err
		}
	}
	for len(w.top().segs) < len(dirSegs) {
		parent := w.top()
		seg := dirSegs[len(parent.segs)]
		d := &wdir{segs: dirSegs[: len(parent.segs)+1 : len(parent.segs)+1], files: map[string]*wfile{}, dirs: map[string]wsub{}}
		sub := parent.dirs[seg]
		if err := w.load(d, sub.obj, sub.meta); err != nil {
			return err
		}
		w.stack = append(w.stack, d)
	}
	d := w.top()
	old := d.files[last]
	if rec.Delete {
		delete(d.files, last)
		return nil
	}
	f := &wfile{fileRec: fileRec{key: key, writer: rec.Writer}}
	var err error
	if f.entry, err = base64.StdEncoding.DecodeString(rec.Entry); err != nil {
		return formatf("entry: %v", err)
	}
	if rec.List != "" {
		if f.list, err = base64.StdEncoding.DecodeString(rec.List); err != nil {
			return formatf("content list: %v", err)
		}
	}
	e, err := manifest.DecodeEntry(f.entry)
	if err != nil {
		return mismatchf("entry: %v", err)
	}
	var content *manifest.Content
	switch {
	case e.Lazy():
	case e.Content != nil:
		content = e.Content
	case !e.ContentRef.IsZero():
		if chunk.Sum(f.list) != e.ContentRef {
			return mismatchf("content list does not hash to %s", e.ContentRef)
		}
		if content, err = manifest.DecodeContent(f.list); err != nil {
			return mismatchf("content list: %v", err)
		}
	}
	var chunks []chunk.Ref
	if content != nil {
		chunks = content.Chunks
	}
	switch {
	case e.Lazy():
	case rec.Data == dataInline:
		// A sensitive file's blob is its sealed bytes: the export carries
		// them as the gateway keeps them, unreadable without the keyring.
		size := manifest.StoredSize(e, content)
		if f.blob, err = w.streamBlob(size, chunks); err != nil {
			return err
		}
		w.rep.Bytes += size
	case strings.HasPrefix(rec.Data, dataFrom):
		from, err := manifest.ParseCommitID(strings.TrimPrefix(rec.Data, dataFrom))
		if err != nil {
			return formatf("data %q", rec.Data)
		}
		if from == base && old != nil && !old.blob.IsZero() {
			f.blob = old.blob
		} else if f.blob, err = w.blobAt(from, segs); err != nil {
			return err
		}
	case rec.Data == dataNone && len(chunks) == 0:
		f.blob = w.empty
	default:
		return formatf("data mode %q for %d chunks", rec.Data, len(chunks))
	}
	d.files[last] = f
	return nil
}

func (w *gitWriter) top() *wdir { return w.stack[len(w.stack)-1] }

func isPrefix(p, s []string) bool {
	return len(p) <= len(s) && slices.Equal(p, s[:len(p)])
}

// close writes the top directory and records it in its parent.
func (w *gitWriter) close() error {
	d := w.top()
	w.stack = w.stack[:len(w.stack)-1]
	obj, meta, err := w.build(d)
	if err != nil {
		return err
	}
	var sub wsub
	if len(obj) > 0 {
		if sub.obj, err = w.tree(obj); err != nil {
			return err
		}
	}
	if len(meta) > 0 {
		if sub.meta, err = w.tree(meta); err != nil {
			return err
		}
	}
	parent := w.top()
	seg := d.segs[len(d.segs)-1]
	if sub.obj.IsZero() && sub.meta.IsZero() {
		delete(parent.dirs, seg)
	} else {
		parent.dirs[seg] = sub
	}
	return nil
}

// build returns the entries of a directory's object tree and metadata
// tree (nil when empty), writing its %entries.jsonl.
func (w *gitWriter) build(d *wdir) (obj, meta []object.TreeEntry, err error) {
	top := len(d.segs) == 0
	segs := make([]string, 0, len(d.files))
	for s := range d.files {
		segs = append(segs, s)
	}
	sort.Strings(segs)
	var lines bytes.Buffer
	for _, s := range segs {
		f := d.files[s]
		name := EncodeSegment(s, top)
		if !d.dirs[s].meta.IsZero() {
			name += fileSuffix
		}
		line, err := renderLine(&f.fileRec, name)
		if err != nil {
			return nil, nil, err
		}
		lines.Write(line)
		lines.WriteByte('\n')
		if !f.blob.IsZero() {
			obj = append(obj, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: f.blob})
		}
	}
	if lines.Len() > 0 {
		h, err := w.blob(lines.Bytes())
		if err != nil {
			return nil, nil, err
		}
		meta = append(meta, object.TreeEntry{Name: entriesName, Mode: filemode.Regular, Hash: h})
	}
	for s, sub := range d.dirs {
		name := EncodeSegment(s, top)
		if !sub.obj.IsZero() {
			obj = append(obj, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: sub.obj})
		}
		if !sub.meta.IsZero() {
			meta = append(meta, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: sub.meta})
		}
	}
	return obj, meta, nil
}

// streamBlob writes a blob of size bytes from the next D records,
// verifying each against its chunk reference.
func (w *gitWriter) streamBlob(size int64, chunks []chunk.Ref) (plumbing.Hash, error) {
	ow, header, err := w.st.LazyWriter()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ok := false
	defer func() {
		if !ok {
			ow.Close()
		}
	}()
	if err := header(plumbing.BlobObject, size); err != nil {
		return plumbing.ZeroHash, err
	}
	var n int64
	for i, ref := range chunks {
		kind, b, err := w.sr.next()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if kind != recData {
			return plumbing.ZeroHash, formatf("%d of %d chunks before record %q", i, len(chunks), kind)
		}
		if len(b) != int(ref.Size) || chunk.Sum(b) != ref.Hash {
			return plumbing.ZeroHash, mismatchf("chunk %d does not hash to %s", i, ref.Hash)
		}
		if _, err := ow.Write(b); err != nil {
			return plumbing.ZeroHash, err
		}
		n += int64(len(b))
	}
	if n != size {
		return plumbing.ZeroHash, mismatchf("chunks hold %d bytes, the entry says %d", n, size)
	}
	ok = true
	if err := ow.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	hw, isHasher := ow.(interface{ Hash() plumbing.Hash })
	if !isHasher {
		return plumbing.ZeroHash, fmt.Errorf("git object writer %T does not report its hash", ow)
	}
	return hw.Hash(), nil
}

// blobAt finds the blob of the key with segments segs in a commit
// written earlier.
func (w *gitWriter) blobAt(id manifest.CommitID, segs []string) (plumbing.Hash, error) {
	th, ok := w.trees[id]
	if !ok {
		return plumbing.ZeroHash, formatf("content said to be in commit %s, which was not written", id)
	}
	for i, s := range segs {
		t, err := w.cache.get(w.st, th)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		name := EncodeSegment(s, i == 0)
		if i < len(segs)-1 {
			e, ok := findEntry(t, name)
			if !ok || e.Mode != filemode.Dir {
				break
			}
			th = e.Hash
			continue
		}
		for _, n := range []string{name, name + fileSuffix} {
			if e, ok := findEntry(t, n); ok && e.Mode != filemode.Dir {
				return e.Hash, nil
			}
		}
	}
	return plumbing.ZeroHash, formatf("content said to be in commit %s, which has no file for the key", id)
}

func findEntry(t *object.Tree, name string) (object.TreeEntry, bool) {
	i := sort.Search(len(t.Entries), func(i int) bool { return treeSortName(&t.Entries[i]) >= name })
	for ; i < len(t.Entries) && strings.HasPrefix(treeSortName(&t.Entries[i]), name); i++ {
		if t.Entries[i].Name == name {
			return t.Entries[i], true
		}
	}
	return object.TreeEntry{}, false
}

func treeSortName(e *object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func (w *gitWriter) blob(b []byte) (plumbing.Hash, error) {
	o := w.st.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	o.SetSize(int64(len(b)))
	ow, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := ow.Write(b); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := ow.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.store(o)
}

func (w *gitWriter) tree(entries []object.TreeEntry) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(entries))
	o := w.st.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.store(o)
}

func (w *gitWriter) encode(c *object.Commit) (plumbing.Hash, error) {
	o := w.st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.store(o)
}

// store writes o unless the repository has it already.
func (w *gitWriter) store(o plumbing.EncodedObject) (plumbing.Hash, error) {
	h := o.Hash()
	if w.st.HasEncodedObject(h) == nil {
		return h, nil
	}
	return w.st.SetEncodedObject(o)
}

func readBlob(st storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(st, h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// treeCache keeps recently decoded trees (large directories are decoded
// once per commit, not once per key).
type treeCache struct {
	max   int
	m     map[plumbing.Hash]*object.Tree
	order []plumbing.Hash
}

func newTreeCache(n int) *treeCache { return &treeCache{max: n, m: map[plumbing.Hash]*object.Tree{}} }

func (c *treeCache) get(st storer.EncodedObjectStorer, h plumbing.Hash) (*object.Tree, error) {
	if t, ok := c.m[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[h] = t
	c.order = append(c.order, h)
	return t, nil
}
