package fuse

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

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
