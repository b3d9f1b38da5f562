package fuse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/chunkcache"
	"github.com/agentnas/nas/client"
)

// fileNode is a regular file: an object of the branch, plus the changes
// this mount has not uploaded yet.
type fileNode struct {
	fs.Inode
	m   *Mount
	key string // guarded by m.ns

	// mu guards everything below.
	mu          sync.Mutex
	e           *entry    // the gateway's version (nil: not uploaded yet)
	seen        time.Time // when e was last confirmed
	seenGen     uint64    // the follower's gen before e was asked for (0: own change; see fresh)
	local       bool      // created here and not uploaded yet
	unlinked    bool      // removed: nothing is uploaded any more
	staged      *staged   // unsaved changes, nil when clean
	mode        uint32    // st_mode while staged (and after, until e says otherwise)
	mtime       time.Time // mtime while staged
	contentType string
	opens       int      // open handles
	content     *content // chunk map of e's version, once opened
	// kernelVer is the version whose bytes the kernel may hold in its page
	// cache from an earlier open or from this mount's own writes ("":
	// none). An owner's open of that same version keeps the cache
	// (keepCache); a lease's never does, since its reads are charged.
	kernelVer string

	// flushMu serializes uploads of this file.
	flushMu sync.Mutex
}

var (
	_ fs.NodeGetattrer     = (*fileNode)(nil)
	_ fs.NodeListxattrer   = (*fileNode)(nil)
	_ fs.NodeSetxattrer    = (*fileNode)(nil)
	_ fs.NodeRemovexattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer     = (*fileNode)(nil)
	_ fs.NodeOpener        = (*fileNode)(nil)
	_ fs.NodeFsyncer       = (*fileNode)(nil)
	_ fs.NodeAccesser      = (*fileNode)(nil)
	_ fs.NodeGetxattrer    = (*fileNode)(nil)
	_ fs.NodeReadlinker    = (*linkNode)(nil)
	_ fs.NodeGetattrer     = (*linkNode)(nil)
	_ fs.NodeSetattrer     = (*linkNode)(nil)
	_ fs.FileReader        = (*handle)(nil)
	_ fs.FileWriter        = (*handle)(nil)
	_ fs.FileFlusher       = (*handle)(nil)
	_ fs.FileFsyncer       = (*handle)(nil)
	_ fs.FileReleaser      = (*handle)(nil)
	_ fs.FileGetattrer     = (*handle)(nil)
	_ fs.FileSetattrer     = (*handle)(nil)
	_ fs.NodeOnForgetter   = (*fileNode)(nil)
)

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// localOnly reports whether the file exists only on this mount so far.
func (f *fileNode) localOnly() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.local && !f.unlinked
}

// refresh takes in a newer description of the object from a lookup or a
// listing; a file with unsaved changes keeps its own view.
func (f *fileNode) refresh(e *entry, g uint64) {
	if e == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staged != nil || f.local {
		return
	}
	if f.e == nil || f.e.VersionID != e.VersionID || f.e.ETag != e.ETag {
		f.content = nil
	}
	f.e, f.seen, f.seenGen = e, time.Now(), g
}

// attrLocked fills a with the file's attributes; the caller holds f.mu.
func (f *fileNode) attrLocked(a *gofuse.Attr) {
	var size int64
	mode, mt := uint32(syscall.S_IFREG|0o644), f.m.started()
	if f.e != nil {
		size, mode, mt = f.e.Size, f.e.mode(mode), f.e.mtime()
	}
	if f.staged != nil || f.local {
		mode, mt = f.mode, f.mtime
		if f.staged != nil {
			size = f.staged.size.Load()
		}
	}
	a.Mode = mode&^syscall.S_IFMT | syscall.S_IFREG
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	a.Nlink = 1
	if f.unlinked {
		a.Nlink = 0
	}
	a.Blksize = 1 << 20
	a.Owner = gofuse.Owner{Uid: f.m.opts.UID, Gid: f.m.opts.GID}
	a.SetTimes(&mt, &mt, &mt)
}

func (f *fileNode) fillAttr(a *gofuse.Attr) {
	f.mu.Lock()
	f.attrLocked(a)
	f.mu.Unlock()
}

func (f *fileNode) fillEntry(out *gofuse.EntryOut) {
	f.fillAttr(&out.Attr)
	out.SetEntryTimeout(f.m.ttl)
	out.SetAttrTimeout(f.m.ttl)
}

// Getattr answers from what the mount knows, asking the gateway again
// once that is older than the TTL (another client may have changed it)
// unless the mount follows the journal (see fresh).
func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	g := f.m.fw.gen.Load()
	f.mu.Lock()
	stale := f.staged == nil && !f.local && !f.unlinked && !f.m.fresh(f.seen, f.seenGen) && f.opens == 0
	f.mu.Unlock()
	if stale {
		obj, err := f.confirm(ctx)
		if err != nil {
			return f.m.fail(err)
		}
		if obj == nil {
			return syscall.ENOENT
		}
		f.refresh(obj, g)
	}
	f.fillAttr(&out.Attr)
	out.SetTimeout(f.m.cacheTTL(g))
	return 0
}

// confirm asks what the gateway holds for the file now (nil: nothing).
// A small directory is listed again instead of asked file by file, so a
// program that stats every file of a tree (git status) costs a listing a
// directory, not a call a file.
func (f *fileNode) confirm(ctx context.Context) (*entry, error) {
	if name, parent := f.Parent(); parent != nil {
		if d, ok := parent.Operations().(*dirNode); ok {
			in, ok := d.cachedName(name)
			if !ok && d.relist(ctx) {
				in, ok = d.cachedName(name)
			}
			if ok && in.kind == syscall.S_IFREG && in.e != nil {
				return in.e, nil
			}
			if ok && in.kind == 0 {
				return nil, nil
			}
		}
	}
	f.m.ns.RLock()
	key := f.key
	f.m.ns.RUnlock()
	obj, _, _, err := f.m.r.lookup(ctx, key)
	return obj, err
}

// Access answers access(2), so a shell's [ -w f ] tells the truth: W_OK
// is EROFS on a read-only mount and what the lease says of writing f.
func (f *fileNode) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&2 == 0 { // W_OK
		return 0
	}
	if f.m.readOnly.Load() {
		return syscall.EROFS
	}
	f.m.ns.RLock()
	key := f.key
	f.m.ns.RUnlock()
	if err := f.m.mayWrite(ctx, key); err != nil {
		return f.m.fail(err)
	}
	return 0
}

// The read-only extended attributes of a file: its trust labels, as the
// gateway last listed or looked it up (a file not uploaded yet has none).
var labelAttrs = []string{"user.nas.origin", "user.nas.sensitivity", "user.nas.reviewed"}

// Getxattr answers a label attribute; every other is ENODATA.
func (f *fileNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	f.mu.Lock()
	var l *apiv1.Labels
	if f.e != nil {
		l = f.e.Labels
	}
	f.mu.Unlock()
	if l == nil {
		return 0, syscall.ENODATA
	}
	var v string
	switch attr {
	case labelAttrs[0]:
		v = l.Origin
	case labelAttrs[1]:
		v = l.Sensitivity
	case labelAttrs[2]:
		v = strconv.FormatBool(l.Reviewed)
	default:
		return 0, syscall.ENODATA
	}
	return xattrValue(v, dest)
}

// Listxattr lists the label attributes of a file that has labels.
func (f *fileNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	f.mu.Lock()
	has := f.e != nil && f.e.Labels != nil
	f.mu.Unlock()
	if !has {
		return 0, 0
	}
	return xattrValue(strings.Join(labelAttrs, "\x00")+"\x00", dest)
}

// xattrValue copies v to dest as getxattr(2) does: its size when dest is
// empty, ERANGE when dest is too small.
func xattrValue(v string, dest []byte) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return uint32(len(v)), 0
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Setxattr refuses: labels are the gateway's (EPERM), and no other
// attribute is stored (ENOTSUP, which cp -a and rsync -X pass over).
func (f *fileNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return xattrRefusal(attr)
}

// Removexattr refuses, as Setxattr.
func (f *fileNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return xattrRefusal(attr)
}

// OnForget drops what a forgotten inode still holds.
func (f *fileNode) OnForget() {
	f.mu.Lock()
	st := f.staged
	drop := st != nil && f.unlinked
	if drop {
		f.staged = nil
	}
	f.mu.Unlock()
	if drop {
		st.close()
		f.m.markClean(f)
	}
}

// Open opens the file. Reading opens the object on the gateway (which
// authorizes and records it); O_TRUNC starts from an empty file.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout) // as in Read: no EINTR
	defer cancel()
	acc := flags & syscall.O_ACCMODE
	write := acc == syscall.O_WRONLY || acc == syscall.O_RDWR
	if write {
		if err := f.m.writable(); err != nil {
			return nil, 0, errno(err)
		}
		f.m.ns.RLock()
		key := f.key
		f.m.ns.RUnlock()
		if err := f.m.mayWrite(ctx, key); err != nil {
			return nil, 0, f.m.fail(err)
		}
	}
	h := &handle{f: f, flags: flags}
	if flags&syscall.O_TRUNC != 0 && write {
		if err := f.truncate(0); err != nil {
			return nil, 0, f.m.fail(err)
		}
	}
	if acc != syscall.O_WRONLY {
		if f.m.opts.Client.Temporary() {
			// Every open of a lease is authorized and recorded by the
			// gateway (object/stat), even of a file this mount has open.
			f.mu.Lock()
			if f.staged == nil && !f.local {
				f.content = nil
			}
			f.mu.Unlock()
		}
		c, inlined, err := f.openContent(ctx)
		if err != nil {
			return nil, 0, f.m.fail(err)
		}
		if inlined {
			// The gateway charged the open's inline bytes: reading them is
			// this handle's read.
			h.reader().charge(c.VersionID, span{0, c.Size})
		}
	}
	keep := f.keepCache(write) // before this handle counts as open
	f.opened()
	if !write {
		// Closing a handle that cannot write has nothing to make durable:
		// the kernel skips its FLUSH, a round trip per read-only open.
		keep |= gofuse.FOPEN_NOFLUSH
	}
	return h, keep, 0
}

// keepCache answers the open's flags: FOPEN_KEEP_CACHE when the kernel's
// cached pages of the file are the bytes of the version this open sees
// (the owner's mount, the file clean at the version the kernel last had),
// so reading a file again costs no READ; otherwise the kernel drops its
// pages and the version becomes the one it caches. A lease's open never
// keeps the cache: each of its reads is authorized and charged.
func (f *fileNode) keepCache(write bool) uint32 {
	if f.m.opts.Client.Temporary() {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staged != nil || f.local || f.e == nil || f.e.VersionID == "" {
		return 0
	}
	switch {
	case f.kernelVer == f.e.VersionID && !write:
		return gofuse.FOPEN_KEEP_CACHE
	case f.opens > 0:
		// A handle opened at another version may still be putting that
		// version's bytes in the kernel's pages after this open drops
		// them: what the kernel holds is known again once none is open.
		f.kernelVer = ""
	default:
		f.kernelVer = f.e.VersionID
	}
	return 0
}

// inlineOpen is the size up to which an open brings the file's bytes
// along (one call instead of an open and a GET).
const inlineOpen = 64 << 10

func (f *fileNode) opened() {
	f.mu.Lock()
	f.opens++
	f.mu.Unlock()
}

// openContent returns the chunk map of the version the file's clean
// bytes come from (nil when there is none), opening it on the gateway if
// the mount has not yet.
//
// A small file's bytes come along (inlined), verified against the chunk
// map and kept in the chunk cache.
func (f *fileNode) openContent(ctx context.Context) (c *content, inlined bool, err error) {
	f.mu.Lock()
	if f.content != nil || f.e == nil || f.local {
		c := f.content
		f.mu.Unlock()
		return c, false, nil
	}
	if f.staged != nil {
		c := f.staged.base
		f.mu.Unlock()
		return c, false, nil
	}
	version := f.e.VersionID
	f.mu.Unlock()
	f.m.ns.RLock()
	key := f.key
	f.m.ns.RUnlock()
	g := f.m.fw.gen.Load()
	c, data, err := f.m.r.stat(ctx, key, version, inlineOpen)
	if err != nil {
		return nil, false, err
	}
	c.Key = key
	if data != nil {
		for _, ch := range c.chunks {
			if err := f.m.cache.Put(ch.hash, data[ch.off:ch.off+ch.size]); err != nil {
				if errors.Is(err, chunkcache.ErrMismatch) {
					return nil, false, fmt.Errorf("%s@%s at %d: %w", key, c.VersionID, ch.off, errCorrupt)
				}
				f.m.log.Warn("chunk cache", "err", err)
			}
		}
		inlined = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.e != nil && f.staged == nil && (f.e.VersionID == c.VersionID || f.e.VersionID == "") {
		e := c.entry
		f.e, f.content, f.seen, f.seenGen = &e, c, time.Now(), g
	}
	return c, inlined, nil
}

// Setattr truncates, changes the mode or the times. On a file with
// unsaved changes they wait for the upload; on a clean one they are
// applied at once (a metadata-only copy, or a compose for truncation).
func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
	if uid, ok := in.GetUID(); ok && uid != f.m.opts.UID {
		return syscall.EPERM
	}
	if gid, ok := in.GetGID(); ok && gid != f.m.opts.GID {
		return syscall.EPERM
	}
	size, setSize := in.GetSize()
	mode, setMode := in.GetMode()
	mt, setTime := in.GetMTime()
	if setSize || setMode || setTime {
		if err := f.m.writable(); err != nil {
			return errno(err)
		}
	}
	if setSize {
		if err := f.truncate(int64(size)); err != nil {
			return f.m.fail(err)
		}
	}
	if setMode || setTime {
		f.mu.Lock()
		if f.staged == nil && !f.local {
			var a gofuse.Attr
			f.attrLocked(&a)
			f.mode, f.mtime = a.Mode, time.Unix(int64(a.Mtime), int64(a.Mtimensec))
		}
		if setMode {
			f.mode = syscall.S_IFREG | mode&0o7777
		}
		if setTime {
			f.mtime = mt
		}
		clean := f.staged == nil && !f.local
		f.mu.Unlock()
		if clean && !f.isUnlinked() {
			if err := f.setMeta(ctx); err != nil {
				return f.m.fail(err)
			}
		}
	}
	if setSize && (fh == nil || f.openCount() == 0) {
		// truncate(2) on a path: nobody will close it, upload now.
		if err := f.flush(ctx); err != nil {
			return f.m.fail(err)
		}
	}
	f.fillAttr(&out.Attr)
	out.SetTimeout(f.m.ttl)
	return 0
}

func (f *fileNode) openCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens
}

func (f *fileNode) isUnlinked() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unlinked
}

// setMeta stores the file's mode and mtime without rewriting its bytes.
func (f *fileNode) setMeta(ctx context.Context) error {
	f.m.ns.RLock()
	defer f.m.ns.RUnlock()
	f.mu.Lock()
	e := f.e
	meta := f.metaLocked()
	ct := f.contentType
	if e != nil && e.ContentType != "" {
		ct = e.ContentType
	}
	f.mu.Unlock()
	if e == nil {
		return nil
	}
	inf, err := f.m.r.c.SetMeta(ctx, f.m.r.obj(f.key), e.VersionID, client.PutOptions{ContentType: ct, Meta: meta})
	if err != nil {
		return err
	}
	ne := *e
	ne.VersionID, ne.Meta, ne.ModTime = inf.VersionID, meta, time.Now()
	if inf.ETag != "" {
		ne.ETag = inf.ETag
	}
	f.mu.Lock()
	f.e, f.seen, f.seenGen = &ne, time.Now(), 0
	f.content = nil
	f.mu.Unlock()
	f.m.changedNow()
	return nil
}

// metaLocked is the user metadata a new version of the file carries: the
// old version's, with mode and mtime set. The caller holds f.mu.
func (f *fileNode) metaLocked() map[string]string {
	meta := map[string]string{}
	if f.e != nil {
		for k, v := range f.e.Meta {
			meta[k] = v
		}
	}
	meta[metaMode] = itoa(syscall.S_IFREG | f.mode&0o7777)
	meta[metaMtime] = formatMtime(f.mtime)
	return meta
}

// truncate sets the file's size, staging the change.
func (f *fileNode) truncate(size int64) error {
	st, err := f.stage()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := st.truncate(size); err != nil {
		return err
	}
	f.mtime = time.Now()
	return nil
}

// stage returns the file's staged changes, starting them over the
// current version if there are none.
func (f *fileNode) stage() (*staged, error) {
	f.mu.Lock()
	if f.staged != nil {
		st := f.staged
		f.mu.Unlock()
		return st, nil
	}
	var base *content
	if f.e != nil && !f.local {
		base = f.content
		if base == nil {
			base = &content{entry: *f.e}
			base.chunks = nil // opened lazily (see staged.baseContent)
		}
	}
	var a gofuse.Attr
	f.attrLocked(&a)
	f.mu.Unlock()
	st := f.m.newStaged(base)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staged != nil { // another writer started first
		st.close()
		return f.staged, nil
	}
	f.staged = st
	f.kernelVer = "" // the kernel's pages are the edit's until it is uploaded
	f.mode, f.mtime = a.Mode, time.Unix(int64(a.Mtime), int64(a.Mtimensec))
	if f.e != nil && f.e.ContentType != "" {
		f.contentType = f.e.ContentType
	}
	f.m.markDirty(f)
	return st, nil
}

// unlink marks the file removed: its unsaved changes are never uploaded
// (an open handle keeps reading and writing them locally).
func (f *fileNode) unlink() {
	f.mu.Lock()
	f.unlinked = true
	st := f.staged
	open := f.opens > 0
	if !open {
		f.staged = nil
	}
	f.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	if open {
		st.endStream()
	} else {
		st.close()
	}
	st.mu.Unlock()
	if !open {
		f.m.markClean(f)
	}
}

// rekey gives the file a new key: a file only this mount knows, or one
// whose directory the gateway renamed (so its version there is new and
// unknown until the next stat). The caller holds m.ns.
func (f *fileNode) rekey(key string) { f.renamed(key, "") }

// renamed notes that the gateway moved the file to key, as a new
// version vid with the same bytes; the caller holds m.ns.
func (f *fileNode) renamed(key, vid string) {
	f.key = key
	f.mu.Lock()
	f.e = f.e.moved(key, vid)
	f.content = nil
	f.mu.Unlock()
}

// Fsync uploads the file's unsaved changes and returns once the gateway
// has them.
func (f *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	err := f.flush(ctx)
	if wb := f.m.wb; err == nil && wb != nil {
		err = wb.failure(f)
	}
	if err != nil {
		return f.m.fail(err)
	}
	return 0
}

// isDirty reports whether the file has changes to upload.
func (f *fileNode) isDirty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.staged != nil && !f.unlinked
}

// linkNode is a symbolic link.
type linkNode struct {
	fs.Inode
	noXattrs
	m   *Mount
	key string // guarded by m.ns

	mu     sync.Mutex // guards e and target
	e      *entry
	target *string
}

func (l *linkNode) refresh(e *entry) {
	if e == nil {
		return
	}
	l.mu.Lock()
	if l.e == nil || l.e.ETag != e.ETag {
		l.target = nil
	}
	l.e = e
	l.mu.Unlock()
}

// renamed notes the link's new key and version; the caller holds m.ns.
func (l *linkNode) renamed(key, vid string) {
	l.key = key
	l.mu.Lock()
	l.e = l.e.moved(key, vid)
	l.mu.Unlock()
}

func (l *linkNode) setTarget(t string) {
	l.mu.Lock()
	l.target = &t
	l.mu.Unlock()
}

func (l *linkNode) fillAttr(a *gofuse.Attr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mt := l.m.started()
	if l.e != nil {
		a.Size = uint64(l.e.Size)
		mt = l.e.mtime()
	}
	a.Mode, a.Nlink = syscall.S_IFLNK|0o777, 1
	a.Owner = gofuse.Owner{Uid: l.m.opts.UID, Gid: l.m.opts.GID}
	a.SetTimes(&mt, &mt, &mt)
}

func (l *linkNode) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	l.fillAttr(&out.Attr)
	out.SetTimeout(l.m.ttl)
	return 0
}

// Setattr accepts times on a link (lutimes) as a no-op: a link's object
// is rewritten only by replacing it.
func (l *linkNode) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		return syscall.EINVAL
	}
	l.fillAttr(&out.Attr)
	return 0
}

// Readlink reads the target (the object's body).
func (l *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	l.mu.Lock()
	t, e := l.target, l.e
	l.mu.Unlock()
	if t != nil {
		return []byte(*t), 0
	}
	if e == nil || e.Size > 4096 {
		return nil, syscall.EIO
	}
	l.m.ns.RLock()
	key := l.key
	l.m.ns.RUnlock()
	var buf []byte
	err := l.m.r.get(ctx, key, e.VersionID, 0, -1, func(r io.Reader, _ client.Info) error {
		b, err := io.ReadAll(io.LimitReader(r, 4096))
		buf = b
		return err
	})
	if err != nil {
		return nil, l.m.fail(err)
	}
	l.setTarget(string(buf))
	return buf, 0
}
