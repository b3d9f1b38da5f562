package fuse

import (
	"context"
	"syscall"
	"time"
)

// Rmdir removes an empty directory (ENOTEMPTY otherwise).
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
	if d.isRoot() && name == ctlName {
		return syscall.EACCES
	}
	if err := d.m.writable(); err != nil {
		return errno(err)
	}
	if err := d.m.flushDeletes(ctx); err != nil { // the gateway's listing must not hold them
		return d.m.fail(err)
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
	if e := d.m.removeDir(ctx, key); e != 0 {
		return e
	}
	d.noteName(name, info{})
	d.m.changedNow()
	return 0
}

// removeDir deletes the marker of directory key when nothing else lies
// under it (ENOTEMPTY otherwise).
func (m *Mount) removeDir(ctx context.Context, key string) syscall.Errno {
	empty, err := m.emptyDir(ctx, key+"/")
	if err != nil {
		return m.fail(err)
	}
	if !empty {
		return syscall.ENOTEMPTY
	}
	if _, err := m.r.c.Delete(ctx, m.r.obj(key+"/")); err != nil {
		return m.fail(err)
	}
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

// Unlink removes a file or symbolic link. An open file stays readable
// (at the version it was opened at) and writable, but is not uploaded.
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
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
	switch {
	case f != nil && f.localOnly():
	case d.m.wb != nil && (d.hasMarker() || d.key == "") && d.m.wb.deferDelete(key):
		// Sent soon, with others (deletes): the directory stays (its
		// marker), so nothing here needs the gateway's answer.
	default:
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
	if d.hasMarker() || d.key == "" || d.holdsStored() || d.m.viewDir(ctx, d.prefix()) {
		return
	}
	if err := d.markIfEmpty(ctx, d.key); err != nil {
		d.m.log.Warn("keeping an emptied directory", "dir", d.key, "err", err)
	}
}

// holdsStored reports whether the directory's listing, while fresh (as
// lookups trust it, for the TTL), names an object the gateway described
// (a subdirectory may be only a lease's glob, a new file only local).
// Then the key just removed was not the last, and an unlink need not ask
// the gateway, whose answer costs more with every delete staged before
// it (its listing skips them).
func (d *dirNode) holdsStored() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil || !d.m.fresh(d.names.at, d.names.gen) {
		return false
	}
	for _, in := range d.names.ents {
		if in.e != nil {
			return true
		}
	}
	return false
}

// markIfEmpty stores a marker for d at key when nothing lies under key
// (a failed listing counts as not empty) and returns the store's error.
func (d *dirNode) markIfEmpty(ctx context.Context, key string) error {
	if empty, err := d.m.emptyDir(ctx, key+"/"); err != nil || !empty {
		return nil
	}
	e, err := d.m.putMarker(ctx, key, 0o755, time.Now())
	if err != nil {
		return err
	}
	d.setMarker(info{kind: syscall.S_IFDIR, e: e, marker: true})
	return nil
}
