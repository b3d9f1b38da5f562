package fuse

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// dirNode is a directory: the key prefix key+"/" ("" for the root).
type dirNode struct {
	fs.Inode
	noXattrs
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
	// listings counts listings in flight; notes holds what this mount
	// changed meanwhile (a listing may have been read before the change
	// reached the gateway), applied to each listing kept; forgets counts
	// changes it cannot describe, after which a listing begun before one
	// is not kept.
	listings int
	notes    map[string]info
	forgets  uint64
}

// names is a complete listing of a directory, kept for TTL so lookups in a
// directory just listed (ls -l, git status) cost no round trip.
type names struct {
	at   time.Time
	gen  uint64 // the follower's gen when the listing began (see fresh)
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

// isRoot reports whether d is the mount's root directory.
func (d *dirNode) isRoot() bool { return d.key == "" && d.IsRoot() }

// validName refuses names no key can carry as one path segment.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 && !strings.ContainsAny(name, "/\x00")
}

// creatable reports whether name may be given to a new file or directory:
// a valid name that is also UTF-8, as the gateway requires of new keys.
func creatable(name string) bool { return validName(name) && utf8.ValidString(name) }

// Getattr answers stat from memory: a directory's attributes are its
// marker's, or the mount's defaults.
func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	g := d.m.fw.gen.Load()
	d.fillAttr(&out.Attr)
	out.SetTimeout(d.m.cacheTTL(g))
	return 0
}

// fillAttr fills a with d's mode and times (from its marker, if any).
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

// Access refuses W_OK on a read-only mount; everything else the gateway
// decides when it is tried.
func (d *dirNode) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&2 != 0 && d.m.readOnly.Load() { // W_OK
		return syscall.EROFS
	}
	return 0
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
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
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
