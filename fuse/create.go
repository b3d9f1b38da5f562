package fuse

import (
	"bytes"
	"context"
	"mime"
	"path"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/agentnas/nas/client"
)

// Mkdir makes an empty directory: a marker object key+"/".
func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
	if d.isRoot() && name == ctlName {
		return nil, syscall.EEXIST
	}
	if err := d.m.writable(); err != nil {
		return nil, errno(err)
	}
	if !creatable(name) {
		return nil, syscall.EINVAL
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if err := d.m.flushDeleteOf(ctx, key); err != nil {
		return nil, d.m.fail(err)
	}
	g, now := d.m.fw.gen.Load(), time.Now()
	e, err := d.m.putMarker(ctx, key, mode, now)
	if err != nil {
		return nil, d.m.fail(err)
	}
	in := info{kind: syscall.S_IFDIR, e: e, marker: true}
	d.noteName(name, in)
	d.m.changedNow()
	ch := d.childFor(ctx, name, in, out, g)
	if nd, ok := ch.Operations().(*dirNode); ok && d.m.mayList() {
		nd.keepEmpty() // made here: nothing is in it yet
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

// Create makes a new file. It exists on this mount at once and on the
// gateway from its first flush (close or fsync).
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if err := d.m.writable(); err != nil {
		return nil, nil, 0, errno(err)
	}
	if !creatable(name) {
		return nil, nil, 0, syscall.EINVAL
	}
	if d.isRoot() && name == ctlName {
		return nil, nil, 0, syscall.EACCES
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if err := d.m.flushDeleteOf(ctx, key); err != nil {
		return nil, nil, 0, d.m.fail(err)
	}
	if err := d.m.mayWrite(ctx, key); err != nil {
		return nil, nil, 0, d.m.fail(err)
	}
	st := d.m.newStaged(nil)
	now := time.Now()
	f := &fileNode{m: d.m, key: key, local: true, staged: st,
		mode: syscall.S_IFREG | mode&0o7777, mtime: now, contentType: contentTypeOf(name)}
	d.m.markDirty(f)
	f.fillEntry(out) // for the TTL: a file made here is local until uploaded
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

// Symlink stores a symbolic link: an object holding the target.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, cancel := uninterrupted(ctx) // a change is not half made
	defer cancel()
	if err := d.m.writable(); err != nil {
		return nil, errno(err)
	}
	if !creatable(name) || (d.isRoot() && name == ctlName) {
		return nil, syscall.EINVAL
	}
	d.m.ns.RLock()
	key := d.childKey(name)
	d.m.ns.RUnlock()
	if err := d.m.flushDeleteOf(ctx, key); err != nil {
		return nil, d.m.fail(err)
	}
	g, now := d.m.fw.gen.Load(), time.Now()
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
	ch := d.childFor(ctx, name, in, out, g)
	ch.Operations().(*linkNode).setTarget(target)
	return ch, 0
}
