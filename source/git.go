package source

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Git is the tree of one revision of a Git repository on the gateway's
// host as a Source: `git:/PATH@REV`, where REV is anything `git
// rev-parse` takes (a branch, a tag, a commit ID; HEAD when omitted). A
// branch or tag is resolved again by every listing, so a refresh follows
// it and shows where it moved as a diff; a commit ID never moves.
//
// Entries are pinned to their blob: ETag and version ID are its object
// ID. A blob is immutable, so a pinned read stays exact however the
// revision moves, and a whole-object read is checked against the object
// ID (Git's SHA-1 of the blob) before it counts. A pin without a version
// ID (none of ours) is read only while REV's tree still holds it.
//
// What the tree holds is listed as what it is:
//   - regular and executable files as their bytes;
//   - a symbolic link as a file holding its target (Git's own form of it;
//     the target is never followed);
//   - a submodule (gitlink) as a small text file, "Subproject commit
//     ID\n", since its tree lives in another repository;
//   - an LFS pointer as the pointer file (the large object is not
//     fetched).
//
// The repository is only ever read. go-git's handles are not safe for
// concurrent use, so each call takes one of a few handles of its own.
type Git struct {
	path, rev string
	url       string               // a mirrored remote: fetched before each listing ("": a local repository)
	handles   chan *git.Repository // idle handles
	slots     chan struct{}        // one per handle that may be opened
}

var _ Source = (*Git)(nil)

// gitHandles is how many handles of one repository may be open at once
// (concurrent reads beyond it wait).
const gitHandles = 4

// submoduleETag marks the pin of a submodule: its synthesised file is
// not a blob.
const submoduleETag = "-submodule"

// OpenGit opens the Git repository at path (a work tree or a bare
// repository) and checks that rev resolves to a commit.
func OpenGit(ctx context.Context, path, rev string) (*Git, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("git repository %q: the path must be absolute: %w", path, ErrInvalid)
	}
	g := &Git{path: path, rev: rev, handles: make(chan *git.Repository, gitHandles), slots: make(chan struct{}, gitHandles)}
	for range gitHandles {
		g.slots <- struct{}{}
	}
	r, err := g.take(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer g.give(r)
	if _, _, err := g.tree(r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return g, nil
}

// take returns an idle handle, opening one when a slot is free. A
// repository whose folder is gone is unavailable (not a source whose
// objects changed: it may come back).
func (g *Git) take(ctx context.Context) (*git.Repository, error) {
	if _, err := os.Stat(g.path); err != nil {
		return nil, fmt.Errorf("git repository %s: %v: %w", g.path, err, ErrUnavailable)
	}
	select {
	case r := <-g.handles:
		return r, nil
	default:
	}
	select {
	case r := <-g.handles:
		return r, nil
	case <-g.slots:
		r, _, err := openGit(g.path, filesystem.Options{})
		if err != nil {
			g.slots <- struct{}{}
			return nil, err
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// openGit opens the repository at p (a work tree's .git, or p itself when
// bare) on storage with options o, returned to be closed. A linked work
// tree (.git is a file) is opened the way go-git opens it, without o.
func openGit(p string, o filesystem.Options) (*git.Repository, *filesystem.Storage, error) {
	fail := func(err error) error { return fmt.Errorf("git repository %s: %v: %w", p, err, ErrUnavailable) }
	dot := p
	if fi, err := os.Stat(filepath.Join(p, ".git")); err == nil && !fi.IsDir() {
		r, err := git.PlainOpenWithOptions(p, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if err != nil {
			return nil, nil, fail(err)
		}
		return r, nil, nil
	} else if err == nil {
		dot = filepath.Join(p, ".git")
	}
	st := filesystem.NewStorageWithOptions(osfs.New(dot), cache.NewObjectLRUDefault(), o)
	r, err := git.Open(st, nil)
	if err != nil {
		st.Close()
		return nil, nil, fail(err)
	}
	return r, st, nil
}

// give returns a handle taken.
func (g *Git) give(r *git.Repository) { g.handles <- r }

// tree resolves the revision to its commit's tree and time.
func (g *Git) tree(r *git.Repository) (*object.Tree, time.Time, error) {
	h, err := r.ResolveRevision(plumbing.Revision(g.rev))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("git revision %q of %s does not resolve: %v: %w", g.rev, g.path, err, ErrUnavailable)
	}
	c, err := r.CommitObject(*h)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("git revision %q of %s is not a commit: %v: %w", g.rev, g.path, err, ErrUnavailable)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, time.Time{}, gitError(g.rev, err)
	}
	return t, c.Committer.When, nil
}

// gitError maps a go-git error about what.
func gitError(what string, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, object.ErrFileNotFound) ||
		errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return fmt.Errorf("git %s: gone: %w", what, ErrChanged)
	}
	return fmt.Errorf("git %s: %v: %w", what, err, ErrUnavailable)
}

// List walks the revision's tree in byte order of keys (Git orders a
// tree's entries as if a folder's name ended in "/", which is that
// order), skipping whole folders at or before after.
//
// A listing reads the size of every blob, so it opens a handle of its own
// that keeps its files open and lists the object folders once (the
// repository may change meanwhile: the listing is of what it held when
// it started, and a refresh sees the rest).
func (g *Git) List(ctx context.Context, after string, fn func(Object) error) error {
	if _, err := os.Stat(g.path); err != nil {
		return fmt.Errorf("git repository %s: %v: %w", g.path, err, ErrUnavailable)
	}
	if g.url != "" {
		if err := g.fetch(ctx); err != nil {
			return err
		}
	}
	r, st, err := openGit(g.path, filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
	}
	t, at, err := g.tree(r)
	if err != nil {
		return err
	}
	w := gitWalk{ctx: ctx, r: r, at: at, after: after, fn: fn}
	return w.walk(t, "")
}

// gitWalk is one listing's walk of a tree.
type gitWalk struct {
	ctx   context.Context
	r     *git.Repository
	at    time.Time // the commit's
	after string
	last  string
	fn    func(Object) error
}

func (w *gitWalk) walk(t *object.Tree, dir string) error {
	for _, e := range t.Entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		key := dir + e.Name
		if e.Mode == filemode.Dir {
			// Every key below is in [key/, key0): skip it when all are
			// at or before after.
			if w.after >= key+"0" {
				continue
			}
			sub, err := w.r.TreeObject(e.Hash)
			if err != nil {
				return gitError("tree "+key, err)
			}
			if err := w.walk(sub, key+"/"); err != nil {
				return err
			}
			continue
		}
		if key <= w.after {
			continue
		}
		if key <= w.last {
			return fmt.Errorf("git tree %s lists %q after %q: %w", dir, key, w.last, ErrCorrupt)
		}
		w.last = key
		o, err := entryObject(w.r, key, e, w.at)
		if err != nil {
			return err
		}
		if err := w.fn(o); err != nil {
			return err
		}
	}
	return nil
}

// entryObject is what a tree entry lists as.
func entryObject(r *git.Repository, key string, e object.TreeEntry, at time.Time) (Object, error) {
	if e.Mode == filemode.Submodule {
		id := e.Hash.String() + submoduleETag
		return Object{Key: key, Size: int64(len(submoduleText(e.Hash))), ETag: id, VersionID: id, ModTime: at}, nil
	}
	size, err := r.Storer.EncodedObjectSize(e.Hash)
	if err != nil {
		return Object{}, gitError("blob "+key, err)
	}
	id := e.Hash.String()
	return Object{Key: key, Size: size, ETag: id, VersionID: id, ModTime: at}, nil
}

func submoduleText(h plumbing.Hash) string { return "Subproject commit " + h.String() + "\n" }

// Stat returns what key is in the revision's tree now.
func (g *Git) Stat(ctx context.Context, key string) (Object, error) {
	for fresh := false; ; fresh = true {
		r, err := g.take(ctx)
		if err != nil {
			return Object{}, err
		}
		o, err := g.stat(r, key)
		if err == nil || !errors.Is(err, ErrChanged) || fresh {
			g.give(r)
			return o, err
		}
		g.drop(r)
		g.flush()
	}
}

func (g *Git) stat(r *git.Repository, key string) (Object, error) {
	e, at, err := g.entry(r, key)
	if err != nil {
		return Object{}, err
	}
	return entryObject(r, key, *e, at)
}

// entry finds key's entry in the revision's tree (a file, not a folder).
func (g *Git) entry(r *git.Repository, key string) (*object.TreeEntry, time.Time, error) {
	if key == "" || path.Clean(key) != key || strings.HasPrefix(key, "/") {
		return nil, time.Time{}, fmt.Errorf("git key %q: %w", key, ErrChanged)
	}
	t, at, err := g.tree(r)
	if err != nil {
		return nil, at, err
	}
	e, err := t.FindEntry(key)
	if err != nil {
		return nil, at, gitError("file "+key, err)
	}
	if e.Mode == filemode.Dir {
		return nil, at, fmt.Errorf("git %s is a folder: %w", key, ErrChanged)
	}
	return e, at, nil
}

// ReadRange returns bytes [off, off+n) of the pinned blob.
func (g *Git) ReadRange(ctx context.Context, p Pin, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > p.Size || n > p.Size-off {
		return nil, fmt.Errorf("range %d+%d of %s (%d bytes): %w", off, n, p.Key, p.Size, ErrInvalid)
	}
	for fresh := false; ; fresh = true {
		r, err := g.take(ctx)
		if err != nil {
			return nil, err
		}
		rc, err := g.open(r, p, off, n)
		if err == nil {
			return &gitReader{ReadCloser: rc, give: func() { g.give(r) }}, nil
		}
		if !errors.Is(err, ErrChanged) || fresh {
			g.give(r)
			return nil, err
		}
		g.drop(r)
		g.flush()
	}
}

// A handle knows the packs that were there when it first looked, so an
// object packed since (a fetch, git gc) is looked for again through new
// handles: drop discards one taken, flush the idle ones.

// drop discards a handle taken, freeing its slot for a new one.
func (g *Git) drop(*git.Repository) { g.slots <- struct{}{} }

// flush discards every idle handle.
func (g *Git) flush() {
	for {
		select {
		case <-g.handles:
			g.slots <- struct{}{}
		default:
			return
		}
	}
}

// open opens the pinned object at off, for n bytes, checked.
func (g *Git) open(r *git.Repository, p Pin, off, n int64) (io.ReadCloser, error) {
	id := p.VersionID
	if id == "" {
		// Not pinned to a version: only while the tree still holds it.
		e, _, err := g.entry(r, p.Key)
		if err != nil {
			return nil, err
		}
		if id = e.Hash.String(); e.Mode == filemode.Submodule {
			id += submoduleETag
		}
	}
	if id != p.ETag {
		return nil, fmt.Errorf("git %s: now %s: %w", p, id, ErrChanged)
	}
	if hexID, ok := strings.CutSuffix(id, submoduleETag); ok {
		text := submoduleText(plumbing.NewHash(hexID))
		if plumbing.NewHash(hexID).String() != hexID || int64(len(text)) != p.Size {
			return nil, fmt.Errorf("git %s: %w", p, ErrChanged)
		}
		return io.NopCloser(strings.NewReader(text[off : off+n])), nil
	}
	h := plumbing.NewHash(id)
	if h.String() != id {
		return nil, fmt.Errorf("git %s: not an object ID: %w", p, ErrChanged)
	}
	b, err := r.BlobObject(h)
	if err != nil {
		return nil, gitError("blob "+p.Key, err)
	}
	if b.Size != p.Size {
		return nil, fmt.Errorf("git %s: %d bytes, pinned %d: %w", p, b.Size, p.Size, ErrCorrupt)
	}
	body, err := b.Reader()
	if err != nil {
		return nil, gitError("blob "+p.Key, err)
	}
	if off == 0 && n == p.Size {
		v := newVerifier(body, n, "git "+p.Key)
		sum := sha1.New()
		sum.Write([]byte("blob " + strconv.FormatInt(p.Size, 10) + "\x00"))
		want, _ := hex.DecodeString(id)
		v.sums = append(v.sums, digest{name: "Git object ID", h: sum, want: want})
		return v, nil
	}
	if _, err := io.CopyN(io.Discard, body, off); err != nil {
		body.Close()
		return nil, fmt.Errorf("git %s: %v: %w", p, err, ErrCorrupt)
	}
	part := struct {
		io.Reader
		io.Closer
	}{io.LimitReader(body, n), body}
	return newVerifier(part, n, "git "+p.Key), nil
}

// gitReader gives its handle back when closed.
type gitReader struct {
	io.ReadCloser
	once sync.Once
	give func()
}

func (r *gitReader) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(r.give)
	return err
}

// OpenGitURL mirrors the repository at url (https:// or file://) into a
// folder of cache named by the URL, cloning it the first time, and opens
// rev of the mirror. Every listing (an attach, a refresh) fetches first,
// so a refresh follows the remote; reads use the mirror, so a remote that
// is down fails listings, not reads of what was mirrored.
func OpenGitURL(ctx context.Context, url, rev, cache string) (*Git, error) {
	if cache == "" {
		return nil, fmt.Errorf("git %s: this gateway keeps no mirror folder for remote repositories: %w", url, ErrInvalid)
	}
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(cache, hex.EncodeToString(sum[:12])+".git")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return nil, fmt.Errorf("git mirror folder: %w", err)
		}
		tmp, err := os.MkdirTemp(cache, "clone-")
		if err != nil {
			return nil, fmt.Errorf("git mirror folder: %w", err)
		}
		if _, err := git.PlainCloneContext(ctx, tmp, true, &git.CloneOptions{URL: url, Mirror: true}); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("git clone %s: %v: %w", url, err, ErrInvalid)
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp)
			if _, serr := os.Stat(dir); serr != nil { // not another attach's clone of the same URL
				return nil, fmt.Errorf("git mirror folder: %w", err)
			}
		}
	}
	g, err := OpenGit(ctx, dir, rev)
	if err != nil {
		return nil, err
	}
	g.url = url
	return g, nil
}

// fetch brings the mirror up to date with its remote.
func (g *Git) fetch(ctx context.Context) error {
	r, _, err := openGit(g.path, filesystem.Options{})
	if err != nil {
		return err
	}
	err = r.FetchContext(ctx, &git.FetchOptions{RefSpecs: []config.RefSpec{"+refs/*:refs/*"}, Force: true, Prune: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("git fetch %s: %v: %w", g.url, err, ErrUnavailable)
	}
	return nil
}
