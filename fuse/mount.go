package fuse

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/chunkcache"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
)

// Options configure a mount.
type Options struct {
	// Client reaches the gateway with the mount's credentials.
	Client *client.Client
	// Repo and Branch name what is mounted.
	Repo, Branch string
	// ReadOnly refuses every change with EROFS.
	ReadOnly bool
	// At, a commit ID, mounts the branch as of that commit of its
	// history; it makes the mount read-only.
	At string
	// Prefix, when set, mounts the subtree under Prefix+"/": the mount's
	// root is that directory, keys above it are unreachable and writes
	// land under it.
	Prefix string
	// CacheDir holds the host-wide chunk cache (CacheDir/chunks) and the
	// staging area of unsaved changes (CacheDir/staging).
	CacheDir string
	// CacheLimit bounds the chunk cache in bytes (0: 10 GiB).
	CacheLimit int64
	// CommitAfter commits the branch after this long without changes
	// (0: 5 s; negative: never, only fsync of the root commits).
	CommitAfter time.Duration
	// TTL is how long the kernel and the mount trust what they learnt of
	// names and attributes (0: 1 s). Negative lookups are kept as long.
	TTL time.Duration
	// UID and GID own every file (default: the mounting process's).
	UID, GID uint32
	// Log receives the mount's own messages.
	Log *slog.Logger
	// Debug logs every FUSE request.
	Debug bool
	// Stream sends a new file written at its end to the gateway while it
	// is written (a multipart upload), so close waits only for its tail.
	Stream bool
	// Writeback makes close return once a file is staged locally, and
	// uploads it in the background; fsync and unmount still wait for the
	// gateway (see writeback).
	Writeback bool
}

// Mount is a mounted branch.
type Mount struct {
	opts  Options
	r     *remote
	cache *chunkcache.Cache
	stage string // directory of staging files
	// stageMem is the memory staged files may hold (see backing).
	stageMem stageBudget
	log      *slog.Logger
	server   *gofuse.Server
	dir      string
	root     *dirNode
	ttl      time.Duration
	start    time.Time // the mount's start: the time of what has no other

	// ns orders renames (write) against uploads and name resolution
	// (read), so no upload lands at a name a concurrent rename left.
	ns sync.RWMutex

	noBatch   atomic.Bool // the gateway has no object/put-batch: files go one by one
	readOnly  atomic.Bool // set by Options.ReadOnly or when the lease ends
	stale     atomic.Bool // the lease ended: writes are EROFS, reads fail
	staleTold atomic.Bool // a program was told ESTALE: changes are EROFS from now on

	// mu guards dirty, changed, lease and leaseAt.
	mu      sync.Mutex
	dirty   map[*fileNode]struct{} // files with unsaved changes
	changed bool                   // uncommitted changes since the last commit
	lease   *leaseInfo             // nil for the owner
	leaseAt time.Time              // when lease was fetched

	fw follower // following the gateway's change journal (follow.go)

	commitTimer *time.Timer
	commitMu    sync.Mutex // serializes commits
	closed      chan struct{}
	closeOnce   sync.Once
	wb          *writeback // nil unless Options.Writeback
}

// leaseInfo is what the mount knows of its lease (lease/get).
type leaseInfo struct {
	raw       json.RawMessage
	ID        string
	ExpiresAt time.Time
	// dirs are the directories the lease's path globs name (their literal
	// prefixes), which exist in the mount even when they hold nothing.
	dirs map[string]bool
	// remaining bytes the lease may still write (-1: unlimited).
	writeLeft int64
	// doc is the lease as the gateway states it (view, grants).
	doc *lease.Lease
}

// setDefaults fills in what o leaves unset.
func (o *Options) setDefaults() {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		o.CacheDir = filepath.Join(d, "nas")
	}
	if o.CacheLimit == 0 {
		o.CacheLimit = 10 << 30
	}
	if o.CommitAfter == 0 {
		o.CommitAfter = 5 * time.Second
	}
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	if o.UID == 0 && o.GID == 0 {
		o.UID, o.GID = uint32(os.Getuid()), uint32(os.Getgid())
	}
}

// fsOptions are go-fuse's options for a mount with o: the kernel trusts
// entries, attributes and absences for the TTL.
func (o *Options) fsOptions() *fs.Options {
	ttl := o.TTL
	mo := gofuse.MountOptions{
		FsName: "nas:" + o.Repo + "@" + cmp.Or(o.At, o.Branch), Name: "nas",
		MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, MaxBackground: 32,
		DisableXAttrs: false, Debug: o.Debug, DirectMount: os.Geteuid() == 0,
	}
	if o.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	return &fs.Options{MountOptions: mo, EntryTimeout: &ttl, AttrTimeout: &ttl, NegativeTimeout: &ttl,
		UID: o.UID, GID: o.GID}
}

// New mounts opts.Repo@opts.Branch at dir and serves it until Unmount.
func New(ctx context.Context, dir string, opts Options) (*Mount, error) {
	if opts.Client == nil || opts.Repo == "" || opts.Branch == "" {
		return nil, errors.New("mount: a client, a repository and a branch are required")
	}
	opts.setDefaults()
	prefix, err := mountPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if opts.At != "" {
		opts.ReadOnly = true
	}
	cache, err := chunkcache.Open(filepath.Join(opts.CacheDir, "chunks"), opts.CacheLimit, opts.Log)
	if err != nil {
		return nil, err
	}
	cache.KeepSmall(chunkcache.MemChunkMax, chunkcache.MemLimit)
	stage := filepath.Join(opts.CacheDir, "staging")
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return nil, fmt.Errorf("mount: staging area: %w", err)
	}
	m := &Mount{opts: opts, r: &remote{c: opts.Client, repo: opts.Repo, branch: opts.Branch, prefix: prefix, at: opts.At}, cache: cache, stage: stage,
		log: opts.Log, dir: dir, ttl: opts.TTL, start: time.Now(), dirty: map[*fileNode]struct{}{}, closed: make(chan struct{})}
	m.stageMem.limit = memStageTotal
	m.readOnly.Store(opts.ReadOnly)
	// One call before mounting: wrong credentials or a missing branch
	// fail here, not as EIO on the first ls.
	if _, _, _, err := m.r.lookup(ctx, ".nas-mount-probe"); err != nil {
		return nil, fmt.Errorf("mount %s@%s: %w", opts.Repo, opts.Branch, err)
	}
	if opts.Client.Temporary() {
		if err := m.refreshLease(ctx); err != nil {
			return nil, fmt.Errorf("mount: read the lease: %w", err)
		}
	}
	if opts.Writeback {
		m.wb = newWriteback(m)
	}
	m.root = &dirNode{m: m}
	server, err := fs.Mount(dir, m.root, opts.fsOptions())
	if err != nil {
		if m.wb != nil {
			m.wb.stop()
		}
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m.server = server
	if m.lease != nil {
		go m.watchExpiry()
	}
	if opts.At == "" {
		go m.follow()
	}
	return m, nil
}

// mountPrefix is the key prefix of a subtree mount of p ("a/b" or "a/b/"
// give "a/b/"; "" gives ""). It is a key prefix, never cleaned: a p that
// starts with "/" or holds an empty, "." or ".." segment is refused.
func mountPrefix(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("mount: prefix %q: segments must be names (no empty, '.' or '..')", p)
		}
	}
	return p + "/", nil
}

// Wait blocks until the file system is unmounted.
func (m *Mount) Wait() { m.server.Wait() }

// Dir returns the mount point.
func (m *Mount) Dir() string { return m.dir }

// Unmount uploads what is unsaved, commits if commits are automatic, and
// unmounts (lazily, if a process still uses the mount).
func (m *Mount) Unmount(ctx context.Context) error {
	if m.wb != nil {
		m.wb.stop() // first: later closes upload themselves, and flushAll sees every background failure
	}
	var err error
	if !m.readOnly.Load() {
		if ferr := m.flushAll(ctx); ferr != nil {
			err = ferr
		}
		if m.opts.CommitAfter > 0 {
			if cerr := m.commitNow(ctx); cerr != nil && err == nil {
				err = cerr
			}
		}
	}
	m.closeOnce.Do(func() { close(m.closed) })
	m.mu.Lock()
	if m.commitTimer != nil {
		m.commitTimer.Stop()
	}
	m.mu.Unlock()
	if uerr := m.server.Unmount(); uerr != nil {
		if derr := syscall.Unmount(m.dir, syscall.MNT_DETACH); derr != nil && err == nil {
			err = fmt.Errorf("unmount %s: %w", m.dir, uerr)
		}
	}
	return err
}

func (m *Mount) started() time.Time { return m.start }

// Settle is for after an unmount that did not go through Unmount (the
// kernel's, or `nas unmount`): every file was closed, so everything was
// uploaded; what is left is the commit a quiet period would have made.
func (m *Mount) Settle(ctx context.Context) error {
	m.closeOnce.Do(func() { close(m.closed) })
	m.mu.Lock()
	if m.commitTimer != nil {
		m.commitTimer.Stop()
	}
	m.mu.Unlock()
	if m.readOnly.Load() {
		return nil
	}
	if m.wb != nil {
		m.wb.stop() // with write-back, closed files may still be queued
	}
	err := m.flushAll(ctx)
	if err != nil || m.opts.CommitAfter < 0 {
		return err
	}
	return m.commitNow(ctx)
}

// writable refuses a change on a read-only or stale mount: once the
// lease has ended the first refusal says why (ESTALE), every later one
// that the mount is now read-only (EROFS).
func (m *Mount) writable() error {
	m.mu.Lock()
	expired := m.lease != nil && !time.Now().Before(m.lease.ExpiresAt)
	m.mu.Unlock()
	if expired {
		m.goStale("the lease expired") // even before watchExpiry's timer fires
	}
	if m.stale.Load() {
		if !m.staleTold.Swap(true) {
			return errStale
		}
		return errReadOnly
	}
	if m.readOnly.Load() {
		return errReadOnly
	}
	return nil
}

// fail translates err for the kernel, and notices a lease that ended.
func (m *Mount) fail(err error) syscall.Errno {
	var ce *client.Error
	if errors.As(err, &ce) && deadLease(ce) && m.opts.Client.Temporary() {
		m.goStale("the gateway refused the lease: " + ce.Code)
	}
	e := errno(err)
	switch e {
	case syscall.EIO:
		m.log.Warn("gateway call failed", "err", err)
	case syscall.ESTALE:
		m.staleTold.Store(true)
	}
	return e
}

// mayWrite refuses at once, with the errno the gateway would answer, a
// change the lease does not allow on key (ENOENT outside its view, EACCES
// without write), so that creat(2) and open(2) for writing fail then
// rather than at close(2), after the program believed its writes were
// taken. It only ever refuses, and only what the gateway's own lease
// document says the gateway will refuse; the gateway still authorizes
// every change. A refusal reads the lease again first (a grant may have
// been added since).
func (m *Mount) mayWrite(ctx context.Context, key string) error {
	if !m.opts.Client.Temporary() {
		return nil
	}
	for fresh := false; ; fresh = true {
		m.mu.Lock()
		li := m.lease
		m.mu.Unlock()
		if li == nil || li.doc == nil {
			return nil
		}
		v := li.doc.Check(lease.Write, m.opts.Repo, m.opts.Branch, key, time.Now())
		switch {
		case v.Decision == lease.Allow:
			return nil
		case !fresh:
			if err := m.refreshLease(ctx); err != nil {
				return err
			}
		case v.Decision == lease.NotFound:
			return syscall.ENOENT
		default:
			return syscall.EACCES
		}
	}
}

// goStale turns the mount read-only once the lease has ended.
func (m *Mount) goStale(why string) {
	if m.stale.Swap(true) {
		return
	}
	m.readOnly.Store(true)
	m.mu.Lock()
	n := len(m.dirty)
	m.mu.Unlock()
	m.log.Warn("lease ended: the mount is now read-only", "why", why, "unsaved_files", n, "staging", m.stage)
}

// watchExpiry turns the mount read-only when the lease expires, even if
// no request notices first.
func (m *Mount) watchExpiry() {
	for {
		m.mu.Lock()
		exp := m.lease.ExpiresAt
		m.mu.Unlock()
		t := time.NewTimer(time.Until(exp))
		select {
		case <-m.closed:
			t.Stop()
			return
		case <-t.C:
		}
		m.mu.Lock()
		exp = m.lease.ExpiresAt
		m.mu.Unlock()
		if !time.Now().Before(exp) {
			m.goStale("the lease expired at " + exp.Format(time.RFC3339))
			return
		}
	}
}

// refreshLease reads the lease (paths, expiry, budgets) from the gateway.
func (m *Mount) refreshLease(ctx context.Context) error {
	var raw json.RawMessage
	if err := m.r.c.Do(ctx, apiv1.LeaseGetRequest{}, &raw); err != nil {
		return err
	}
	var doc apiv1.LeaseGetResponse
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("the gateway's lease document: %w", err)
	}
	l := &doc.Lease.Lease
	li := &leaseInfo{raw: raw, ID: l.ID, ExpiresAt: l.ExpiresAt, dirs: map[string]bool{}, writeLeft: doc.Remaining.BytesWritten, doc: l}
	globs := []string{}
	for _, r := range l.View {
		globs = append(globs, r.Path)
	}
	for _, g := range l.Grants {
		if !g.Used && time.Now().Before(g.ExpiresAt) {
			globs = append(globs, g.Path)
		}
	}
	for _, g := range globs {
		addViewDirs(li.dirs, g)
	}
	m.mu.Lock()
	m.lease, m.leaseAt = li, time.Now()
	m.mu.Unlock()
	return nil
}

// addViewDirs adds the directories a path glob names literally:
// "shared/launch/**" names "shared" and "shared/launch".
func addViewDirs(dirs map[string]bool, glob string) {
	g := strings.TrimPrefix(glob, "/")
	if i := strings.IndexAny(g, "*?["); i >= 0 {
		g = g[:i]
	}
	for {
		i := strings.LastIndexByte(g, '/')
		if i <= 0 {
			return
		}
		g = g[:i]
		dirs[g+"/"] = true
	}
}

// viewDir reports whether the lease's globs name the directory prefix
// ("a/b/") literally. The owner's mount has no such directories.
func (m *Mount) viewDir(ctx context.Context, prefix string) bool {
	li := m.leaseNow(ctx)
	return li != nil && li.dirs[m.r.prefix+prefix]
}

// mayList reports whether the mount's listings show everything it can
// see: always for the owner, for a lease that may list.
func (m *Mount) mayList() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease == nil || m.lease.doc != nil && m.lease.doc.AllowsAnywhere(lease.List, time.Now())
}

// viewChildren returns the names of the directories the lease's globs
// name directly under prefix.
func (m *Mount) viewChildren(ctx context.Context, prefix string) []string {
	li := m.leaseNow(ctx)
	if li == nil {
		return nil
	}
	var out []string
	for d := range li.dirs {
		if rest, ok := strings.CutPrefix(d, m.r.prefix+prefix); ok && strings.Count(rest, "/") == 1 {
			out = append(out, strings.TrimSuffix(rest, "/"))
		}
	}
	return out
}

// leaseNow returns the lease, read again when it is older than a few
// seconds (grants come and go).
func (m *Mount) leaseNow(ctx context.Context) *leaseInfo {
	m.mu.Lock()
	li, at := m.lease, m.leaseAt
	m.mu.Unlock()
	if li == nil {
		return nil
	}
	if time.Since(at) > 10*time.Second && !m.stale.Load() {
		if err := m.refreshLease(ctx); err != nil {
			m.fail(err)
		}
		m.mu.Lock()
		li = m.lease
		m.mu.Unlock()
	}
	return li
}

// markDirty and markClean track files with unsaved changes.
func (m *Mount) markDirty(f *fileNode) {
	m.mu.Lock()
	m.dirty[f] = struct{}{}
	m.mu.Unlock()
}

func (m *Mount) markClean(f *fileNode) {
	m.mu.Lock()
	delete(m.dirty, f)
	m.mu.Unlock()
}

// flushAll uploads every file's unsaved changes: small whole files in
// batches, the others on their own, several at once. The first failure
// is returned, and with write-back a background upload's failure too.
func (m *Mount) flushAll(ctx context.Context) error {
	delErr := m.flushDeletes(ctx)
	m.mu.Lock()
	files := make([]*fileNode, 0, len(m.dirty))
	for f := range m.dirty {
		files = append(files, f)
	}
	m.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(writebackWorkers)
	var p pending
	send := func() {
		batch := p.files
		p = pending{}
		g.Go(func() error {
			for _, err := range m.flushBatch(ctx, batch) {
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, f := range files {
		ok, size := f.mayBatch()
		switch {
		case !ok:
			g.Go(func() error { return f.flush(ctx) })
			continue
		case len(p.files) > 0 && p.bytes+size > apiv1.MaxBatchData:
			send()
		}
		p.files, p.bytes = append(p.files, f), p.bytes+size
		if p.full() {
			send()
		}
	}
	if len(p.files) > 0 {
		send()
	}
	err := cmp.Or(g.Wait(), delErr)
	if m.wb != nil && err == nil {
		err = m.wb.failures()
	}
	return err
}

// changedNow notes an acknowledged change and (re)arms the quiet-period
// commit.
func (m *Mount) changedNow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changed = true
	if m.opts.CommitAfter < 0 {
		return
	}
	if m.commitTimer == nil {
		m.commitTimer = time.AfterFunc(m.opts.CommitAfter, m.autoCommit)
		return
	}
	m.commitTimer.Reset(m.opts.CommitAfter)
}

func (m *Mount) autoCommit() {
	select {
	case <-m.closed:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.commitNow(ctx); err != nil {
		m.log.Warn("automatic commit failed; the changes stay staged on the branch", "err", err)
	}
}

// commitNow commits the branch if anything changed since the last commit.
func (m *Mount) commitNow(ctx context.Context) error {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	m.mu.Lock()
	changed := m.changed
	m.changed = false
	m.mu.Unlock()
	if !changed {
		return nil
	}
	id, err := m.r.commit(ctx, "nas mount: changes at "+time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		m.mu.Lock()
		m.changed = true
		m.mu.Unlock()
		return err
	}
	if id != "" {
		m.log.Info("committed", "commit", id)
	}
	return nil
}
