package fuse

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

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
	begun   bool   // counted among the directory's listings in flight
	forgets uint64 // the directory's forgets when the listing began
	gen     uint64 // the follower's gen when the listing began
	extras  bool   // the local names were appended
	done    bool   // the listing ended and was kept
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
	if !h.begun {
		h.gen = h.d.m.fw.gen.Load()
		h.begun, h.forgets = true, h.d.beginListing()
	}
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
			if !validName(name) || prefixes[o.Key+"/"] || h.d.m.pendingDelete(o.Key) {
				continue // the marker of this directory, shadowed by a directory, or unlinked here
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
	h.d.keepNames(h.seen, h.forgets, h.gen)
	h.seen = map[string]info{} // the kept map is no longer ours
	h.end()
}

// end takes the listing out of the directory's listings in flight.
func (h *dirHandle) end() {
	if h.begun {
		h.begun = false
		h.d.endListing()
	}
}

// beginListing counts a listing in flight and returns the forgets so far.
func (d *dirNode) beginListing() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.listings++
	return d.forgets
}

// endListing ends a listing in flight; the notes kept for listings in
// flight go with the last.
func (d *dirNode) endListing() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listings--; d.listings == 0 {
		d.notes = nil
	}
}

// keepEmpty keeps an empty listing of a directory just made.
func (d *dirNode) keepEmpty() {
	d.mu.Lock()
	f := d.forgets
	d.mu.Unlock()
	d.keepNames(map[string]info{}, f, 0) // trusted for the TTL only
}

// keepNames keeps ents, a complete listing begun when the directory had
// seen forgets, with the changes this mount made since applied: a change
// that reached the gateway after the listing read that part of it would
// otherwise be lost for the TTL (a file just written looking absent).
func (d *dirNode) keepNames(ents map[string]info, forgets, gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, in := range d.notes {
		if in.kind == 0 {
			delete(ents, name)
		} else {
			ents[name] = in
		}
	}
	d.listed, d.listedSize, d.misses = true, len(ents), 0
	if forgets != d.forgets {
		return // changed in a way the notes cannot replay
	}
	d.names = &names{at: time.Now(), gen: gen, ents: ents}
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
	return h.d.childFor(ctx, name, h.last.in, out, h.gen), 0
}

// Seekdir restarts the listing and skips to off (rewinddir is off 0).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.end()
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

// Fsyncdir is fsync of the directory (see dirNode.Fsync).
func (h *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return h.d.Fsync(ctx, nil, flags)
}

// Releasedir ends a listing closed before its end.
func (h *dirHandle) Releasedir(ctx context.Context, flags uint32) { h.end() }
