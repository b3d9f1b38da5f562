package fuse

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// renameNoReplace is RENAME_NOREPLACE, the one rename flag a mount
// honours; RENAME_EXCHANGE (2) and RENAME_WHITEOUT are refused.
const renameNoReplace = 1

// Rename moves a file or a whole directory without copying bytes.
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
	np, ch, e := d.renameArgs(name, newParent, newName, flags)
	if e != 0 {
		return e
	}
	if err := d.m.flushDeletes(ctx); err != nil { // a rename on the gateway must not move what was unlinked
		return d.m.fail(err)
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
	mv := move{m: m, dst: np, name: newName, from: d.childKey(name), to: np.childKey(newName), noReplace: flags&renameNoReplace != 0}
	if mv.from == mv.to {
		return 0
	}
	if e := mv.lookTarget(ctx); e != 0 {
		return e
	}
	replaced := np.GetChild(newName)
	switch n := ch.Operations().(type) {
	case *dirNode:
		e = mv.dir(ctx, n)
	case *fileNode:
		e = mv.file(ctx, n)
	case *linkNode:
		e = mv.link(ctx, n)
	default:
		e = syscall.EACCES
	}
	if e != 0 {
		return e
	}
	d.noteName(name, info{})
	m.changedNow()
	d.keepImplicit(ctx)
	dropReplaced(replaced, ch)
	return 0
}

// renameArgs refuses a rename before anything moves: a read-only mount,
// flags other than RENAME_NOREPLACE, names no key can carry or .nas, and
// a name d does not hold. It returns the new parent and the inode moved.
func (d *dirNode) renameArgs(name string, newParent fs.InodeEmbedder, newName string, flags uint32) (*dirNode, *fs.Inode, syscall.Errno) {
	if err := d.m.writable(); err != nil {
		return nil, nil, errno(err)
	}
	if flags&^renameNoReplace != 0 {
		return nil, nil, syscall.EINVAL
	}
	np, ok := newParent.(*dirNode)
	if !ok || !creatable(newName) || (d.isRoot() && name == ctlName) || (np.isRoot() && newName == ctlName) {
		return nil, nil, syscall.EACCES
	}
	ch := d.GetChild(name)
	if ch == nil {
		return nil, nil, syscall.ENOENT
	}
	return np, ch, 0
}

// move is one rename under way; the mount's ns lock is held throughout.
type move struct {
	m         *Mount
	dst       *dirNode // the new parent
	name      string   // the new name
	from, to  string   // the old and new keys
	target    info     // what the new name is before the move (kind 0: nothing)
	noReplace bool     // RENAME_NOREPLACE
}

// lookTarget finds what the new name is now; with RENAME_NOREPLACE,
// anything there is EEXIST.
func (mv *move) lookTarget(ctx context.Context) syscall.Errno {
	target, err := mv.dst.describe(ctx, mv.name)
	if err != nil {
		return mv.m.fail(err)
	}
	if target.kind != 0 && mv.noReplace {
		return syscall.EEXIST
	}
	mv.target = target
	return 0
}

// dir moves directory n, its whole prefix in one gateway call, over
// nothing or an empty directory.
func (mv *move) dir(ctx context.Context, n *dirNode) syscall.Errno {
	m := mv.m
	if mv.target.kind != 0 && mv.target.kind != syscall.S_IFDIR {
		return syscall.ENOTDIR
	}
	if strings.HasPrefix(mv.to+"/", mv.from+"/") {
		return syscall.EINVAL
	}
	if mv.target.kind == syscall.S_IFDIR {
		if e := m.removeDir(ctx, mv.to); e != 0 {
			return e
		}
	}
	if _, err := m.r.rename(ctx, mv.from+"/", mv.to+"/", true, false); err != nil {
		return m.fail(err)
	}
	if !n.hasMarker() {
		// A directory that held nothing the gateway knows (a view
		// directory, say) must still exist at its new name.
		// When that marker is refused (a name outside the lease),
		// the rename fails: nothing moved.
		if err := n.markIfEmpty(ctx, mv.to); err != nil {
			return m.fail(err)
		}
	}
	n.rekey(mv.to)
	mv.dst.noteName(mv.name, info{kind: syscall.S_IFDIR, marker: true})
	return 0
}

// file moves file n: on the gateway, or only here while it was never
// uploaded.
func (mv *move) file(ctx context.Context, n *fileNode) syscall.Errno {
	if mv.target.kind == syscall.S_IFDIR {
		return syscall.EISDIR
	}
	if n.localOnly() {
		// Not on the gateway yet: it will be uploaded at its new name.
		n.rekey(mv.to)
	} else {
		vid, err := mv.m.r.rename(ctx, mv.from, mv.to, false, mv.noReplace)
		if err != nil {
			return mv.m.fail(err)
		}
		n.renamed(mv.to, vid)
	}
	n.mu.Lock()
	moved := n.e
	n.mu.Unlock()
	if moved != nil && !n.localOnly() {
		mv.dst.noteName(mv.name, fileInfo(moved))
	} else {
		mv.dst.forgetNames()
	}
	return 0
}

// link moves symbolic link n on the gateway.
func (mv *move) link(ctx context.Context, n *linkNode) syscall.Errno {
	if mv.target.kind == syscall.S_IFDIR {
		return syscall.EISDIR
	}
	vid, err := mv.m.r.rename(ctx, mv.from, mv.to, false, mv.noReplace)
	if err != nil {
		return mv.m.fail(err)
	}
	n.renamed(mv.to, vid)
	mv.dst.forgetNames()
	return 0
}

// dropReplaced keeps the file a successful rename replaced from ever
// uploading over the name later.
func dropReplaced(replaced, moved *fs.Inode) {
	if replaced == nil || replaced == moved {
		return
	}
	if f, ok := replaced.Operations().(*fileNode); ok {
		f.unlink()
	}
}

// describe says what name is in d now: this mount's own knowledge first,
// then the gateway's. The caller holds m.ns.
func (d *dirNode) describe(ctx context.Context, name string) (info, error) {
	if ch := d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && f.localOnly() {
			return info{kind: syscall.S_IFREG}, nil
		}
	}
	return d.m.lookupKey(ctx, d.childKey(name))
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
