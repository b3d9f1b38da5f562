package fuse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// ctlName is the mount root's read-only control directory, where a run
// inspects its own world with cat: its lease, its changes, and the gates
// it waits for.
const ctlName = ".nas"

// ctlFiles are the control directory's files and what makes each.
var ctlFiles = map[string]func(m *Mount, ctx context.Context) ([]byte, error){
	"lease.json": (*Mount).leaseJSON,
	"changes":    (*Mount).changesText,
	"pending":    (*Mount).pendingText,
}

// ctlDir is the control directory.
type ctlDir struct {
	fs.Inode
	noXattrs
	m *Mount
}

var (
	_ fs.NodeLookuper  = (*ctlDir)(nil)
	_ fs.NodeReaddirer = (*ctlDir)(nil)
	_ fs.NodeGetattrer = (*ctlDir)(nil)
	_ fs.NodeOpener    = (*ctlFile)(nil)
	_ fs.NodeGetattrer = (*ctlFile)(nil)
	_ fs.FileReader    = (*ctlHandle)(nil)
)

// ctlDir returns the control directory's inode, filling out.
func (d *dirNode) ctlDir(ctx context.Context, out *gofuse.EntryOut) *fs.Inode {
	c := &ctlDir{m: d.m}
	c.fill(&out.Attr)
	out.SetEntryTimeout(d.m.ttl)
	out.SetAttrTimeout(d.m.ttl)
	if ch := d.GetChild(ctlName); ch != nil {
		return ch
	}
	return d.NewInode(ctx, c, fs.StableAttr{Mode: syscall.S_IFDIR})
}

func (c *ctlDir) fill(a *gofuse.Attr) {
	t := c.m.started()
	a.Mode, a.Nlink = syscall.S_IFDIR|0o555, 2
	a.Owner = gofuse.Owner{Uid: c.m.opts.UID, Gid: c.m.opts.GID}
	a.SetTimes(&t, &t, &t)
}

func (c *ctlDir) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	c.fill(&out.Attr)
	return 0
}

func (c *ctlDir) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if _, ok := ctlFiles[name]; !ok {
		return nil, syscall.ENOENT
	}
	if ch := c.GetChild(name); ch != nil {
		ch.Operations().(*ctlFile).fill(&out.Attr)
		return ch, 0
	}
	f := &ctlFile{m: c.m, name: name}
	f.fill(&out.Attr)
	return c.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG}), 0
}

func (c *ctlDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	names := make([]string, 0, len(ctlFiles))
	for n := range ctlFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	ents := []gofuse.DirEntry{{Name: ".", Mode: syscall.S_IFDIR}, {Name: "..", Mode: syscall.S_IFDIR}}
	for _, n := range names {
		ents = append(ents, gofuse.DirEntry{Name: n, Mode: syscall.S_IFREG})
	}
	return fs.NewListDirStream(ents), 0
}

// ctlFile is one control file; its contents are made at each open.
type ctlFile struct {
	fs.Inode
	noXattrs
	m    *Mount
	name string

	mu   sync.Mutex // guards size
	size int        // of the last contents made
}

func (f *ctlFile) fill(a *gofuse.Attr) {
	f.mu.Lock()
	a.Size = uint64(f.size)
	f.mu.Unlock()
	t := time.Now()
	a.Mode, a.Nlink = syscall.S_IFREG|0o444, 1
	a.Owner = gofuse.Owner{Uid: f.m.opts.UID, Gid: f.m.opts.GID}
	a.SetTimes(&t, &t, &t)
}

func (f *ctlFile) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	f.fill(&out.Attr)
	return 0
}

// Open makes the contents (read-only, uncached: each open is fresh).
func (f *ctlFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EACCES
	}
	b, err := ctlFiles[f.name](f.m, ctx)
	if err != nil {
		return nil, 0, f.m.fail(err)
	}
	f.mu.Lock()
	f.size = len(b)
	f.mu.Unlock()
	return &ctlHandle{data: b}, gofuse.FOPEN_DIRECT_IO, 0
}

// ctlHandle serves one open control file's contents.
type ctlHandle struct{ data []byte }

func (h *ctlHandle) Read(ctx context.Context, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return gofuse.ReadResultData(nil), 0
	}
	return gofuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

// leaseDoc is .nas/lease.json: the gateway's lease document (apiv1's
// lease/get answer, as it came) and the mount's state.
type leaseDoc struct {
	Mount     mountState      `json:"mount"`
	Owner     bool            `json:"owner,omitempty"`
	Lease     json.RawMessage `json:"lease,omitempty"`
	Remaining json.RawMessage `json:"remaining,omitempty"`
	Taint     json.RawMessage `json:"session_taint,omitempty"`
}

type mountState struct {
	Repo       string `json:"repo"`
	Branch     string `json:"branch"`
	ReadOnly   bool   `json:"read_only"`
	LeaseEnded bool   `json:"lease_ended"`
	MountPoint string `json:"mount_point"`
	At         string `json:"at,omitempty"`     // the commit a mount --at shows
	Prefix     string `json:"prefix,omitempty"` // the subtree a mount --prefix shows
}

// leaseJSON is the lease as the gateway sees it now (paths, actions,
// expiry, remaining budgets), with the mount's own state; the owner's
// mount says it is the owner's.
func (m *Mount) leaseJSON(ctx context.Context) ([]byte, error) {
	out := leaseDoc{Mount: mountState{Repo: m.opts.Repo, Branch: m.opts.Branch, ReadOnly: m.readOnly.Load(), MountPoint: m.dir,
		At: m.r.at, Prefix: m.r.prefix}}
	if !m.opts.Client.Temporary() {
		out.Owner = true
	} else {
		if !m.stale.Load() {
			if err := m.refreshLease(ctx); err != nil {
				m.fail(err)
			}
		}
		m.mu.Lock()
		raw := m.lease.raw
		m.mu.Unlock()
		var doc struct {
			Lease     json.RawMessage `json:"lease"`
			Remaining json.RawMessage `json:"remaining"`
			Taint     json.RawMessage `json:"session_taint"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		out.Lease, out.Remaining, out.Taint = doc.Lease, doc.Remaining, doc.Taint
	}
	out.Mount.LeaseEnded = m.stale.Load()
	b, err := json.MarshalIndent(out, "", "  ")
	return append(b, '\n'), err
}

// changesText lists the branch's changes since its fork point, one
// "A|M|D key" line each, as `nas changes` prints them.
func (m *Mount) changesText(ctx context.Context) ([]byte, error) {
	if m.wb != nil && !m.readOnly.Load() {
		// What this mount has closed and unlinked is among the changes
		// (write-back has not sent all of it yet).
		if err := m.flushAll(ctx); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	cursor := ""
	for {
		var p apiv1.ChangesResponse
		req := apiv1.ChangesListRequest{Repo: m.r.repo, Branch: m.r.branch, Page: apiv1.Page{Cursor: cursor, Limit: 1000}}
		if err := m.r.c.Do(ctx, req, &p); err != nil {
			return nil, err
		}
		for _, c := range p.Changes {
			if strings.HasPrefix(c.Key, m.r.prefix) {
				fmt.Fprintf(&buf, "%s %s\n", c.Kind, m.r.strip(c.Key))
			}
		}
		if p.NextCursor == "" {
			return buf.Bytes(), nil
		}
		cursor = p.NextCursor
	}
}

// pendingText says which proposals of this branch wait for a person, so
// an agent stops retrying and waits (empty when nothing waits).
func (m *Mount) pendingText(ctx context.Context) ([]byte, error) {
	var out apiv1.GateListResponse
	err := m.r.c.Do(ctx, apiv1.GateListRequest{Status: "pending"}, &out)
	if code := errCode(err); code == apiv1.CodeNotFound || code == apiv1.CodeNotImplemented {
		return nil, nil // this gateway runs without gates
	} else if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, g := range out.Gates {
		a := g.Card.Action
		if g.Repo != m.r.repo || a.From != m.r.branch {
			continue
		}
		fmt.Fprintf(&buf, "gate %s waiting for approval: %s %s into %s (%d files), since %s, until %s\n",
			g.ID, a.Op, a.From, a.Into, a.FilesChanged, g.Created.UTC().Format(time.RFC3339), g.Card.ExpiresAt.UTC().Format(time.RFC3339))
		if g.Card.Why != "" {
			fmt.Fprintf(&buf, "  why: %s\n", g.Card.Why)
		}
		fmt.Fprintf(&buf, "  a person must decide (nas gate approve|deny %s); retrying will not help\n", g.ID)
	}
	return buf.Bytes(), nil
}

// The control directory takes no changes: every one answers EACCES (it
// is visible, and not the run's to change), whatever go-fuse's defaults.

func (c *ctlDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EACCES
}

func (c *ctlDir) Mkdir(ctx context.Context, name string, mode uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EACCES
}

func (c *ctlDir) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EACCES
}

func (c *ctlDir) Symlink(ctx context.Context, target, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EACCES
}

func (c *ctlDir) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EACCES
}

func (c *ctlDir) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EACCES }

func (c *ctlDir) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EACCES }

func (c *ctlDir) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EACCES
}

func (c *ctlDir) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	return syscall.EACCES
}

func (f *ctlFile) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	return syscall.EACCES
}

var (
	_ fs.NodeCreater   = (*ctlDir)(nil)
	_ fs.NodeMkdirer   = (*ctlDir)(nil)
	_ fs.NodeMknoder   = (*ctlDir)(nil)
	_ fs.NodeSymlinker = (*ctlDir)(nil)
	_ fs.NodeLinker    = (*ctlDir)(nil)
	_ fs.NodeUnlinker  = (*ctlDir)(nil)
	_ fs.NodeRmdirer   = (*ctlDir)(nil)
	_ fs.NodeRenamer   = (*ctlDir)(nil)
	_ fs.NodeSetattrer = (*ctlDir)(nil)
	_ fs.NodeSetattrer = (*ctlFile)(nil)
)
