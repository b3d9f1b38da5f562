package fuse

import (
	"bytes"
	"context"
	"mime"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/agentnas/nas/client"
)

// dirNode is a directory: the key prefix key+"/" ("" for the root).
type dirNode struct {
	fs.Inode
	m   *Mount
	key string // guarded by m.ns

	// mu guards marker, meta and names.
	mu     sync.Mutex
	marker bool   // an object key+"/" exists (mkdir made it, or it has metadata)
	meta   *entry // the marker, when known
	names  *names // what the last complete listing saw, while fresh
	// listed says a complete listing was seen, of listedSize names (or
	// the directory was made here, empty), so relisting it is cheap.
	listed     bool
	listedSize int
	misses     int // names asked one by one since the listing went stale
}

// names is a complete listing of a directory, kept for TTL so lookups in a
// directory just listed (ls -l, git status) cost no round trip.
type names struct {
	at   time.Time
	ents map[string]info
}

// info is what a listing or lookup said a name is.
type info struct {
	kind   uint32 // S_IFDIR, S_IFREG or S_IFLNK
	e      *entry // the object (nil for a directory without a marker)
	marker bool
}

var (
	_ fs.NodeLookuper       = (*dirNode)(nil)
	_ fs.NodeOpendirHandler = (*dirNode)(nil)
	_ fs.NodeGetattrer      = (*dirNode)(nil)
	_ fs.NodeSetattrer      = (*dirNode)(nil)
	_ fs.NodeMkdirer        = (*dirNode)(nil)
	_ fs.NodeRmdirer        = (*dirNode)(nil)
	_ fs.NodeCreater        = (*dirNode)(nil)
	_ fs.NodeUnlinker       = (*dirNode)(nil)
	_ fs.NodeRenamer        = (*dirNode)(nil)
	_ fs.NodeSymlinker      = (*dirNode)(nil)
	_ fs.NodeLinker         = (*dirNode)(nil)
	_ fs.NodeMknoder        = (*dirNode)(nil)
	_ fs.NodeFsyncer        = (*dirNode)(nil)
	_ fs.NodeStatfser       = (*dirNode)(nil)
	_ fs.NodeAccesser       = (*dirNode)(nil)
	_ fs.FileReaddirenter   = (*dirHandle)(nil)
	_ fs.FileLookuper       = (*dirHandle)(nil)
	_ fs.FileSeekdirer      = (*dirHandle)(nil)
	_ fs.FileFsyncdirer     = (*dirHandle)(nil)
	_ fs.FileReleasedirer   = (*dirHandle)(nil)
)

// prefix is the directory's key prefix ("" for the root, else "a/b/").
func (d *dirNode) prefix() string {
	if d.key == "" {
		return ""
	}
	return d.key + "/"
}

// childKey is the key of name in d; the caller holds m.ns.
func (d *dirNode) childKey(name string) string { return d.prefix() + name }

func (d *dirNode) isRoot() bool { return d.key == "" && d.IsRoot() }

// validName refuses names no key can carry as one path segment.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 && !strings.ContainsAny(name, "/\x00")
}

func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	d.fillAttr(&out.Attr)
	out.SetTimeout(d.m.ttl)
	return 0
}

func (d *dirNode) fillAttr(a *gofuse.Attr) {
	d.mu.Lock()
	meta := d.meta
	d.mu.Unlock()
	mode, mt := uint32(syscall.S_IFDIR|0o755), d.m.started()
	if meta != nil {
		mode, mt = meta.mode(mode)&^syscall.S_IFMT|syscall.S_IFDIR, meta.mtime()
	}
	a.Mode, a.Nlink = mode, 2
	a.Owner = gofuse.Owner{Uid: d.m.opts.UID, Gid: d.m.opts.GID}
	a.Blksize = 4096
	a.SetTimes(&mt, &mt, &mt)
}

func (d *dirNode) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&2 != 0 && d.m.readOnly.Load() { // W_OK
		return syscall.EROFS
	}
	return 0
}

func (d *dirNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

// Lookup resolves name: a file, a directory, or nothing (ENOENT, which
// the kernel remembers for the TTL).
func (d *dirNode) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.isRoot() && name == ctlName {
		return d.ctlDir(ctx, out), 0
	}
	if !validName(name) {
		return nil, syscall.ENOENT
	}
	if ch := d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && f.localOnly() {
			f.fillEntry(out)
			return ch, 0
		}
		if d.m.stale.Load() && d.knownEntry(ch, out) {
			return ch, 0
		}
	}
	in, ok := d.cachedName(name)
	if !ok && d.relist(ctx) {
		in, ok = d.cachedName(name)
	}
	if !ok {
		var err error
		if in, err = d.resolve(ctx, name); err != nil {
			return nil, d.m.fail(err)
		}
	}
	if in.kind == 0 {
		return nil, syscall.ENOENT
	}
	return d.childFor(ctx, name, in, out), 0
}

// knownEntry fills out from what the mount knows of ch. Once the lease has
// ended, a name the mount knows resolves from memory, so a change to it is
// EROFS like on any read-only mount rather than ESTALE from the gateway;
// its contents stay unreadable (ESTALE).
func (d *dirNode) knownEntry(ch *fs.Inode, out *gofuse.EntryOut) bool {
	switch n := ch.Operations().(type) {
	case *dirNode:
		n.fillAttr(&out.Attr)
	case *fileNode:
		n.fillAttr(&out.Attr)
	case *linkNode:
		n.fillAttr(&out.Attr)
	default:
		return false
	}
	d.setTimeouts(out)
	return true
}

// resolve asks the gateway what name is (kind 0: nothing).
func (d *dirNode) resolve(ctx context.Context, name string) (info, error) {
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	obj, dir, marker, err := d.m.r.lookup(ctx, key)
	if err != nil {
		return info{}, err
	}
	if !dir && d.m.viewDir(ctx, key+"/") {
		dir = true
	}
	switch {
	case dir:
		in := info{kind: syscall.S_IFDIR, marker: marker}
		return in, nil
	case obj != nil:
		return fileInfo(obj), nil
	}
	return info{}, nil
}

// fileInfo classifies an object: a symbolic link by its mode, else a file.
func fileInfo(e *entry) info {
	if e.mode(syscall.S_IFREG)&syscall.S_IFMT == syscall.S_IFLNK {
		return info{kind: syscall.S_IFLNK, e: e}
	}
	return info{kind: syscall.S_IFREG, e: e}
}

// cachedName answers from the last complete listing, if it is fresh.
func (d *dirNode) cachedName(name string) (info, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil || time.Since(d.names.at) > d.m.ttl {
		d.names = nil
		return info{}, false
	}
	in, ok := d.names.ents[name]
	if !ok {
		return info{}, true // listed, absent
	}
	return in, true
}

// relistMax is the size up to which a directory whose listing went stale
// is listed again (one call) rather than asked about name by name: a
// loop creating or reading files in it then costs a listing a TTL.
const relistMax = pageSize

// relistLimit bounds the directories relisted at all; between relistMax
// and it, a directory is relisted once the names asked of it one by one
// since its listing went stale cost more calls than listing it again.
const relistLimit = 200000

// relist lists a directory again when its listing went stale, if that is
// cheaper than asking name by name, and reports whether a fresh listing
// is kept.
func (d *dirNode) relist(ctx context.Context) bool {
	d.mu.Lock()
	worth := d.listed && (d.listedSize <= relistMax ||
		d.listedSize <= relistLimit && d.misses > 2*(d.listedSize/pageSize+1))
	if d.listed && !worth {
		d.misses++
	}
	d.mu.Unlock()
	if !worth {
		return false
	}
	d.m.ns.RLock()
	prefix := d.prefix()
	d.m.ns.RUnlock()
	h := &dirHandle{d: d, prefix: prefix}
	if err := h.fetch(ctx); err != nil {
		return false
	}
	for {
		e, errno := h.Readdirent(ctx)
		if errno != 0 {
			return false
		}
		if e == nil {
			return true
		}
	}
}

// noteName records a change this mount made to the directory, so a
// fresh listing stays true (kind 0 removes name).
func (d *dirNode) noteName(name string, in info) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		return
	}
	if in.kind == 0 {
		delete(d.names.ents, name)
	} else {
		d.names.ents[name] = in
	}
	d.listedSize = len(d.names.ents)
}

// forgetNames drops the listing (after a change the mount cannot describe).
func (d *dirNode) forgetNames() {
	d.mu.Lock()
	d.names = nil
	d.mu.Unlock()
}

// childFor returns the inode for name as in describes it, reusing the
// existing one when it has the same type, and fills out.
func (d *dirNode) childFor(ctx context.Context, name string, in info, out *gofuse.EntryOut) *fs.Inode {
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if in.kind == syscall.S_IFREG && in.e == nil && d.GetChild(name) == nil {
		// A name this mount created and no longer holds: ask the gateway.
		if r, err := d.resolve(ctx, name); err == nil && r.kind != 0 {
			in = r
		}
	}
	if ch := d.GetChild(name); ch != nil && ch.StableAttr().Mode == in.kind {
		switch n := ch.Operations().(type) {
		case *dirNode:
			n.setMarker(in)
			n.fillAttr(&out.Attr)
		case *fileNode:
			n.refresh(in.e)
			n.fillAttr(&out.Attr)
		case *linkNode:
			n.refresh(in.e)
			n.fillAttr(&out.Attr)
		}
		d.setTimeouts(out)
		return ch
	}
	var ops fs.InodeEmbedder
	switch in.kind {
	case syscall.S_IFDIR:
		n := &dirNode{m: d.m, key: key}
		n.setMarker(in)
		n.fillAttr(&out.Attr)
		ops = n
	case syscall.S_IFLNK:
		n := &linkNode{m: d.m, key: key, e: in.e}
		n.fillAttr(&out.Attr)
		ops = n
	default:
		n := &fileNode{m: d.m, key: key, e: in.e}
		n.fillAttr(&out.Attr)
		ops = n
	}
	d.setTimeouts(out)
	return d.NewInode(ctx, ops, fs.StableAttr{Mode: in.kind})
}

func (d *dirNode) setTimeouts(out *gofuse.EntryOut) {
	out.SetEntryTimeout(d.m.ttl)
	out.SetAttrTimeout(d.m.ttl)
}

func (d *dirNode) setMarker(in info) {
	d.mu.Lock()
	d.marker = in.marker
	if in.e != nil {
		d.meta = in.e
	}
	d.mu.Unlock()
}

// OpendirHandle starts a listing; entries stream page by page.
func (d *dirNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	d.m.ns.RLock()
	prefix := d.prefix()
	d.m.ns.RUnlock()
	h := &dirHandle{d: d, prefix: prefix}
	// The first page now: a directory the lease may not list fails
	// opendir (EACCES) rather than looking empty.
	if err := h.fetch(ctx); err != nil {
		return nil, 0, d.m.fail(err)
	}
	return h, 0, 0
}

// dirHandle is one open directory: a listing streamed in pages, then the
// names only this mount knows (new files not yet uploaded, directories
// the lease's globs name).
type dirHandle struct {
	d      *dirNode
	prefix string

	ents    []dirent // the current page, not yet returned
	cursor  string   // where the next page starts
	more    bool     // more pages follow
	started bool
	extras  bool // the local names were appended
	done    bool // the listing ended and was kept
	seen    map[string]info
	off     uint64
	last    dirent
}

// dirent is one name of a listing.
type dirent struct {
	name string
	in   info
}

// pageSize is the number of names one listing call asks for.
const pageSize = 5000

// fetch reads the next page of the listing into h.ents.
func (h *dirHandle) fetch(ctx context.Context) error {
	p, err := h.d.m.r.list(ctx, h.prefix, h.cursor, pageSize)
	if err != nil {
		return err
	}
	h.started = true
	h.cursor, h.more = p.Next, p.Next != ""
	prefixes := map[string]bool{}
	for _, pr := range p.Prefixes {
		prefixes[pr] = true
	}
	oi, pi := 0, 0
	for oi < len(p.Objects) || pi < len(p.Prefixes) {
		if pi >= len(p.Prefixes) || oi < len(p.Objects) && p.Objects[oi].Key < p.Prefixes[pi] {
			o := &p.Objects[oi]
			oi++
			name := strings.TrimPrefix(o.Key, h.prefix)
			if !validName(name) || prefixes[o.Key+"/"] {
				continue // the marker of this directory, or shadowed by a directory
			}
			h.ents = append(h.ents, dirent{name, fileInfo(o)})
			continue
		}
		pr := p.Prefixes[pi]
		pi++
		name := strings.TrimSuffix(strings.TrimPrefix(pr, h.prefix), "/")
		if !validName(name) {
			continue
		}
		h.ents = append(h.ents, dirent{name, info{kind: syscall.S_IFDIR}})
	}
	return nil
}

// addExtras appends the names the gateway's listing cannot know.
func (h *dirHandle) addExtras(ctx context.Context) {
	h.extras = true
	var add []dirent
	for name, ch := range h.d.Children() {
		if f, ok := ch.Operations().(*fileNode); ok && f.localOnly() {
			if _, dup := h.seen[name]; !dup {
				add = append(add, dirent{name, info{kind: syscall.S_IFREG}})
			}
		}
	}
	for _, name := range h.d.m.viewChildren(ctx, h.prefix) {
		if _, dup := h.seen[name]; !dup {
			add = append(add, dirent{name, info{kind: syscall.S_IFDIR}})
		}
	}
	// .nas is not listed, only looked up: tools that walk the mount (git
	// status, cp -a, rsync, find) must not take it for the run's files.
	h.ents = append(h.ents, add...)
}

// Readdirent returns the next name: ".", "..", then the listing.
func (h *dirHandle) Readdirent(ctx context.Context) (*gofuse.DirEntry, syscall.Errno) {
	h.off++
	switch h.off {
	case 1:
		return &gofuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Off: h.off}, 0
	case 2:
		return &gofuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Off: h.off}, 0
	}
	for len(h.ents) == 0 {
		switch {
		case h.more:
			if err := h.fetch(ctx); err != nil {
				h.off--
				return nil, h.d.m.fail(err)
			}
		case !h.extras:
			h.addExtras(ctx)
		default:
			h.finish()
			return nil, 0
		}
	}
	e := h.ents[0]
	h.ents = h.ents[1:]
	if h.seen == nil {
		h.seen = map[string]info{}
	}
	if _, dup := h.seen[e.name]; dup {
		return h.Readdirent(ctx)
	}
	h.seen[e.name] = e.in
	h.last = e
	return &gofuse.DirEntry{Name: e.name, Mode: e.in.kind, Off: h.off}, 0
}

// finish keeps a complete listing for lookups within the TTL.
func (h *dirHandle) finish() {
	if h.done {
		// Reading past the end again (getdents does) must not replace
		// the kept listing with an empty one, which would make every
		// name of the directory ENOENT for the TTL.
		return
	}
	h.done = true
	if h.seen == nil {
		h.seen = map[string]info{}
	}
	h.d.keepNames(h.seen)
	h.seen = map[string]info{} // the kept map is no longer ours
}

// keepNames keeps ents as the directory's complete listing, as of now.
func (d *dirNode) keepNames(ents map[string]info) {
	d.mu.Lock()
	d.names = &names{at: time.Now(), ents: ents}
	d.listed, d.listedSize, d.misses = true, len(ents), 0
	d.mu.Unlock()
}

// Lookup answers READDIRPLUS for the name Readdirent just returned, from
// the listing itself.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name == ctlName && h.d.isRoot() {
		return h.d.ctlDir(ctx, out), 0
	}
	if h.last.name != name {
		return h.d.Lookup(ctx, name, out)
	}
	if ch := h.d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && f.localOnly() {
			f.fillEntry(out)
			return ch, 0
		}
	}
	return h.d.childFor(ctx, name, h.last.in, out), 0
}

// Seekdir restarts the listing and skips to off (rewinddir is off 0).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	*h = dirHandle{d: h.d, prefix: h.prefix}
	if err := h.fetch(ctx); err != nil {
		return h.d.m.fail(err)
	}
	for h.off < off {
		if _, e := h.Readdirent(ctx); e != 0 {
			return e
		}
	}
	return 0
}

func (h *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return h.d.Fsync(ctx, nil, flags)
}

func (h *dirHandle) Releasedir(ctx context.Context, flags uint32) {}

// Mkdir makes an empty directory: a marker object key+"/".
func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.isRoot() && name == ctlName {
		return nil, syscall.EEXIST
	}
	if err := d.m.writable(); err != nil {
		return nil, errno(err)
	}
	if !validName(name) {
		return nil, syscall.EINVAL
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	now := time.Now()
	e, err := d.m.putMarker(ctx, key, mode, now)
	if err != nil {
		return nil, d.m.fail(err)
	}
	in := info{kind: syscall.S_IFDIR, e: e, marker: true}
	d.noteName(name, in)
	d.m.changedNow()
	ch := d.childFor(ctx, name, in, out)
	if nd, ok := ch.Operations().(*dirNode); ok && d.m.mayList() {
		nd.keepNames(map[string]info{}) // made here: nothing is in it yet
	}
	return ch, 0
}

// putMarker stores the marker object of directory key.
func (m *Mount) putMarker(ctx context.Context, key string, mode uint32, mt time.Time) (*entry, error) {
	meta := map[string]string{metaMode: itoa(syscall.S_IFDIR | mode&0o7777), metaMtime: formatMtime(mt)}
	inf, err := m.r.c.Put(ctx, m.r.obj(key+"/"), bytes.NewReader(nil), 0, client.PutOptions{ContentType: "application/x-directory", Meta: meta})
	if err != nil {
		return nil, err
	}
	return &entry{Key: key + "/", ETag: inf.ETag, VersionID: inf.VersionID, ModTime: mt, ContentType: "application/x-directory", Meta: meta}, nil
}

// Rmdir removes an empty directory (ENOTEMPTY otherwise).
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if d.isRoot() && name == ctlName {
		return syscall.EACCES
	}
	if err := d.m.writable(); err != nil {
		return errno(err)
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if ch := d.GetChild(name); ch != nil {
		for _, g := range ch.Children() {
			if f, ok := g.Operations().(*fileNode); ok && f.localOnly() {
				return syscall.ENOTEMPTY
			}
		}
	}
	empty, err := d.m.emptyDir(ctx, key+"/")
	if err != nil {
		return d.m.fail(err)
	}
	if !empty {
		return syscall.ENOTEMPTY
	}
	if _, err := d.m.r.c.Delete(ctx, d.m.r.obj(key+"/")); err != nil {
		return d.m.fail(err)
	}
	d.noteName(name, info{})
	d.m.changedNow()
	return 0
}

// emptyDir reports whether nothing (but its own marker) lies under prefix.
func (m *Mount) emptyDir(ctx context.Context, prefix string) (bool, error) {
	p, err := m.r.list(ctx, prefix, "", 2)
	if err != nil {
		return false, err
	}
	for _, o := range p.Objects {
		if o.Key != prefix {
			return false, nil
		}
	}
	return len(p.Prefixes) == 0, nil
}

// Create makes a new file. It exists on this mount at once and on the
// gateway from its first flush (close or fsync).
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if err := d.m.writable(); err != nil {
		return nil, nil, 0, errno(err)
	}
	if !validName(name) {
		return nil, nil, 0, syscall.EINVAL
	}
	if d.isRoot() && name == ctlName {
		return nil, nil, 0, syscall.EACCES
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if err := d.m.mayWrite(ctx, key); err != nil {
		return nil, nil, 0, d.m.fail(err)
	}
	st, err := d.m.newStaged(nil)
	if err != nil {
		return nil, nil, 0, d.m.fail(err)
	}
	now := time.Now()
	f := &fileNode{m: d.m, key: key, local: true, staged: st,
		mode: syscall.S_IFREG | mode&0o7777, mtime: now, contentType: contentTypeOf(name)}
	d.m.markDirty(f)
	f.fillAttr(&out.Attr)
	d.setTimeouts(out)
	ch := d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG})
	// Listed as present-but-unknown until its upload says what it is.
	d.noteName(name, info{kind: syscall.S_IFREG})
	h := &handle{f: f, flags: flags}
	f.opened()
	return ch, h, 0, 0
}

// contentTypeOf guesses a new object's content type from its name, as
// S3 tools do.
func contentTypeOf(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "binary/octet-stream"
}

// Unlink removes a file or symbolic link. An open file stays readable
// (at the version it was opened at) and writable, but is not uploaded.
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if err := d.m.writable(); err != nil {
		return errno(err)
	}
	if d.isRoot() && name == ctlName {
		return syscall.EACCES
	}
	d.m.ns.RLock()
	defer d.m.ns.RUnlock()
	key := d.childKey(name)
	var f *fileNode
	if ch := d.GetChild(name); ch != nil {
		f, _ = ch.Operations().(*fileNode)
	}
	if f == nil || !f.localOnly() {
		if _, err := d.m.r.c.Delete(ctx, d.m.r.obj(key)); err != nil {
			return d.m.fail(err)
		}
		d.m.changedNow()
	}
	if f != nil {
		f.unlink()
	}
	d.noteName(name, info{})
	d.keepImplicit(ctx)
	return 0
}

// keepImplicit keeps a directory that exists only through its keys
// (no marker) from vanishing when its last key goes: POSIX keeps an
// empty directory until rmdir. The caller holds m.ns.
func (d *dirNode) keepImplicit(ctx context.Context) {
	d.mu.Lock()
	marker := d.marker
	d.mu.Unlock()
	if marker || d.key == "" || d.m.viewDir(ctx, d.prefix()) {
		return
	}
	empty, err := d.m.emptyDir(ctx, d.prefix())
	if err != nil || !empty {
		return
	}
	e, err := d.m.putMarker(ctx, d.key, 0o755, time.Now())
	if err != nil {
		d.m.log.Warn("keeping an emptied directory", "dir", d.key, "err", err)
		return
	}
	d.setMarker(info{kind: syscall.S_IFDIR, e: e, marker: true})
}

// Rename moves a file or a whole directory without copying bytes.
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if err := d.m.writable(); err != nil {
		return errno(err)
	}
	const noReplace, exchange = 1, 2 // RENAME_NOREPLACE, RENAME_EXCHANGE
	if flags&^noReplace != 0 {
		return syscall.EINVAL
	}
	np, ok := newParent.(*dirNode)
	if !ok || !validName(newName) || (d.isRoot() && name == ctlName) || (np.isRoot() && newName == ctlName) {
		return syscall.EACCES
	}
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if f, ok := ch.Operations().(*fileNode); ok && !f.localOnly() {
		// What is unsaved goes to the old name first; the rename moves it.
		if err := f.flush(ctx); err != nil {
			return d.m.fail(err)
		}
	}
	m := d.m
	m.ns.Lock()
	defer m.ns.Unlock()
	from, to := d.childKey(name), np.childKey(newName)
	if from == to {
		return 0
	}
	target, err := np.describe(ctx, newName)
	if err != nil {
		return m.fail(err)
	}
	// What a successful rename replaces must never upload over it later.
	done := false
	defer func(replaced *fs.Inode) {
		if !done || replaced == nil || replaced == ch {
			return
		}
		if f, ok := replaced.Operations().(*fileNode); ok {
			f.unlink()
		}
	}(np.GetChild(newName))
	if target.kind != 0 && flags&noReplace != 0 {
		return syscall.EEXIST
	}
	switch n := ch.Operations().(type) {
	case *dirNode:
		if target.kind != 0 && target.kind != syscall.S_IFDIR {
			return syscall.ENOTDIR
		}
		if strings.HasPrefix(to+"/", from+"/") {
			return syscall.EINVAL
		}
		if target.kind == syscall.S_IFDIR {
			empty, err := m.emptyDir(ctx, to+"/")
			if err != nil {
				return m.fail(err)
			}
			if !empty {
				return syscall.ENOTEMPTY
			}
			if _, err := m.r.c.Delete(ctx, m.r.obj(to+"/")); err != nil {
				return m.fail(err)
			}
		}
		if _, err := m.r.rename(ctx, from+"/", to+"/", true, false); err != nil {
			return m.fail(err)
		}
		n.mu.Lock()
		hasMarker := n.marker
		n.mu.Unlock()
		if !hasMarker {
			// A directory that held nothing the gateway knows (a view
			// directory, say) must still exist at its new name.
			// When that marker is refused (a name outside the lease),
			// the rename fails: nothing moved.
			if empty, err := m.emptyDir(ctx, to+"/"); err == nil && empty {
				e, err := m.putMarker(ctx, to, 0o755, time.Now())
				if err != nil {
					return m.fail(err)
				}
				n.setMarker(info{kind: syscall.S_IFDIR, e: e, marker: true})
			}
		}
		n.rekey(to)
		np.noteName(newName, info{kind: syscall.S_IFDIR, marker: true})
	case *fileNode:
		if target.kind == syscall.S_IFDIR {
			return syscall.EISDIR
		}
		if n.localOnly() {
			// Not on the gateway yet: it will be uploaded at its new name.
			n.rekey(to)
		} else {
			vid, err := m.r.rename(ctx, from, to, false, flags&noReplace != 0)
			if err != nil {
				return m.fail(err)
			}
			n.renamed(to, vid)
		}
		n.mu.Lock()
		moved := n.e
		n.mu.Unlock()
		if moved != nil && !n.localOnly() {
			np.noteName(newName, fileInfo(moved))
		} else {
			np.forgetNames()
		}
	case *linkNode:
		if target.kind == syscall.S_IFDIR {
			return syscall.EISDIR
		}
		vid, err := m.r.rename(ctx, from, to, false, flags&noReplace != 0)
		if err != nil {
			return m.fail(err)
		}
		n.renamed(to, vid)
		np.forgetNames()
	default:
		return syscall.EACCES
	}
	d.noteName(name, info{})
	m.changedNow()
	d.keepImplicit(ctx)
	done = true
	return 0
}

// describe says what name is in d now: this mount's own knowledge first,
// then the gateway's.
func (d *dirNode) describe(ctx context.Context, name string) (info, error) {
	if ch := d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && f.localOnly() {
			return info{kind: syscall.S_IFREG}, nil
		}
	}
	key := d.childKey(name)
	obj, dir, marker, err := d.m.r.lookup(ctx, key)
	if err != nil {
		return info{}, err
	}
	switch {
	case dir || d.m.viewDir(ctx, key+"/"):
		return info{kind: syscall.S_IFDIR, marker: marker}, nil
	case obj != nil:
		return fileInfo(obj), nil
	}
	return info{}, nil
}

// rekey gives a renamed directory and everything loaded under it their
// new keys; the caller holds m.ns.
func (d *dirNode) rekey(key string) {
	d.key = key
	d.forgetNames()
	for name, ch := range d.Children() {
		switch n := ch.Operations().(type) {
		case *dirNode:
			n.rekey(key + "/" + name)
		case *fileNode:
			n.rekey(key + "/" + name)
		case *linkNode:
			n.renamed(key+"/"+name, "")
		}
	}
}

// Symlink stores a symbolic link: an object holding the target.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := d.m.writable(); err != nil {
		return nil, errno(err)
	}
	if !validName(name) || (d.isRoot() && name == ctlName) {
		return nil, syscall.EINVAL
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	now := time.Now()
	meta := map[string]string{metaMode: itoa(syscall.S_IFLNK | 0o777), metaMtime: formatMtime(now)}
	inf, err := d.m.r.c.Put(ctx, d.m.r.obj(key), bytes.NewReader([]byte(target)), int64(len(target)),
		client.PutOptions{ContentType: "application/x-symlink", Meta: meta})
	if err != nil {
		return nil, d.m.fail(err)
	}
	e := &entry{Key: key, Size: int64(len(target)), ETag: inf.ETag, VersionID: inf.VersionID, ModTime: now, Meta: meta}
	in := info{kind: syscall.S_IFLNK, e: e}
	d.noteName(name, in)
	d.m.changedNow()
	ch := d.childFor(ctx, name, in, out)
	ch.Operations().(*linkNode).setTarget(target)
	return ch, 0
}

// Link refuses hard links: an object has one name.
func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Mknod refuses device files, FIFOs and sockets.
func (d *dirNode) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Setattr keeps a directory's mode and times in its marker object.
func (d *dirNode) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	mode, setMode := in.GetMode()
	mt, setTime := in.GetMTime()
	if uid, ok := in.GetUID(); ok && uid != d.m.opts.UID {
		return syscall.EPERM
	}
	if gid, ok := in.GetGID(); ok && gid != d.m.opts.GID {
		return syscall.EPERM
	}
	if (setMode || setTime) && !d.isRoot() {
		if err := d.m.writable(); err != nil {
			return errno(err)
		}
		var cur gofuse.Attr
		d.fillAttr(&cur)
		if !setMode {
			mode = cur.Mode & 0o7777
		}
		if !setTime {
			mt = time.Unix(int64(cur.Mtime), int64(cur.Mtimensec))
		}
		d.m.ns.RLock()
		e, err := d.m.putMarker(ctx, d.key, mode, mt)
		d.m.ns.RUnlock()
		if err != nil {
			return d.m.fail(err)
		}
		d.setMarker(info{kind: syscall.S_IFDIR, e: e, marker: true})
		d.m.changedNow()
	}
	d.fillAttr(&out.Attr)
	out.SetTimeout(d.m.ttl)
	return 0
}

// Fsync of a directory uploads every unsaved file; of the root, it also
// commits the branch.
func (d *dirNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if d.m.readOnly.Load() {
		return 0
	}
	if err := d.m.flushAll(ctx); err != nil {
		return d.m.fail(err)
	}
	if d.isRoot() {
		d.m.mu.Lock()
		d.m.changed = true
		d.m.mu.Unlock()
		if err := d.m.commitNow(ctx); err != nil {
			return d.m.fail(err)
		}
	}
	return 0
}

// Statfs reports the lease's remaining write budget as free space.
func (d *dirNode) Statfs(ctx context.Context, out *gofuse.StatfsOut) syscall.Errno {
	const bsize = 4096
	total := uint64(1) << 50 / bsize
	free := total
	if li := d.m.leaseNow(ctx); li != nil && li.writeLeft >= 0 {
		free = uint64(li.writeLeft) / bsize
		if free < total {
			total = free
		}
	}
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, 255
	out.Blocks, out.Bfree, out.Bavail = total, free, free
	out.Files, out.Ffree = 1<<32, 1<<32
	return 0
}
