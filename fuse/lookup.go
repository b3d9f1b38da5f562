package fuse

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// Lookup resolves name: a file, a directory, or nothing (ENOENT, which
// the kernel remembers for the TTL).
func (d *dirNode) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	g := d.m.fw.gen.Load()
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
		if d.m.stale.Load() && d.knownEntry(ch, out, g) {
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
	return d.childFor(ctx, name, in, out, g), 0
}

// knownEntry fills out from what the mount knows of ch. Once the lease has
// ended, a name the mount knows resolves from memory, so a change to it is
// EROFS like on any read-only mount rather than ESTALE from the gateway;
// its contents stay unreadable (ESTALE).
func (d *dirNode) knownEntry(ch *fs.Inode, out *gofuse.EntryOut, g uint64) bool {
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
	d.setTimeouts(out, g)
	return true
}

// resolve asks the gateway what name is (kind 0: nothing).
func (d *dirNode) resolve(ctx context.Context, name string) (info, error) {
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	return d.m.lookupKey(ctx, key)
}

// lookupKey asks the gateway what key is: a directory (a key lies under
// it, its marker exists, or the lease's globs name it), an object, or
// nothing (kind 0).
func (m *Mount) lookupKey(ctx context.Context, key string) (info, error) {
	obj, dir, marker, err := m.r.lookup(ctx, key)
	if err != nil {
		return info{}, err
	}
	if obj != nil && m.pendingDelete(key) {
		obj = nil // unlinked here; the gateway hears of it soon
	}
	switch {
	case dir || m.viewDir(ctx, key+"/"):
		return info{kind: syscall.S_IFDIR, marker: marker}, nil
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
	if d.names == nil || !d.m.fresh(d.names.at, d.names.gen) {
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
	defer h.end()
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
	if d.listings > 0 {
		if d.notes == nil {
			d.notes = map[string]info{}
		}
		d.notes[name] = in
	}
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
	d.forgets++
	d.mu.Unlock()
}

// childFor returns the inode for name as in describes it, reusing the
// existing one when it has the same type, and fills out; in was learnt
// when the follower's gen was g.
func (d *dirNode) childFor(ctx context.Context, name string, in info, out *gofuse.EntryOut, g uint64) *fs.Inode {
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
			n.refresh(in.e, g)
			n.fillAttr(&out.Attr)
		case *linkNode:
			n.refresh(in.e)
			n.fillAttr(&out.Attr)
		}
		d.setTimeouts(out, g)
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
	d.setTimeouts(out, g)
	return d.NewInode(ctx, ops, fs.StableAttr{Mode: in.kind})
}

// setTimeouts sets the kernel's cache times of an entry learnt when the
// follower's gen was g (see cacheTTL).
func (d *dirNode) setTimeouts(out *gofuse.EntryOut, g uint64) {
	ttl := d.m.cacheTTL(g)
	out.SetEntryTimeout(ttl)
	out.SetAttrTimeout(ttl)
}

// setMarker records what a listing or lookup said of d's marker object.
func (d *dirNode) setMarker(in info) {
	d.mu.Lock()
	d.marker = in.marker
	if in.e != nil {
		d.meta = in.e
	}
	d.mu.Unlock()
}

// hasMarker reports whether d's marker object exists.
func (d *dirNode) hasMarker() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.marker
}
