package fuse

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/hanwen/go-fuse/v2/fs"
)

// The mount follows the gateway's change journal (object/touched) twice a
// TTL (at most twice a second). While it does, and the gateway says the
// journal hears every write to the branch, the kernel may keep names and
// attributes for an hour instead of the TTL, and the mount trusts its
// listings and attributes whatever their age: every key another client changes is
// invalidated in the kernel and in the mount's own caches as soon as the
// journal names it, so what the mount shows is no staler than with the
// TTL. When following fails for longer than the TTL, everything the
// kernel holds is invalidated and the TTL applies again.
//
// Ordering, so no stale answer outlives an invalidation: the follower
// counts an invalidation (gen) before it drops the mount's caches, and
// drops them before it tells the kernel. A lookup trusts for long only if
// gen did not move while it ran; the kernel's entry invalidation waits
// for lookups in flight in the directory; a listing begun before a
// directory's names were dropped is not kept (forgets).

// followEvery is how often the mount asks what changed: twice a TTL, at
// most every half second.
func (m *Mount) followEvery() time.Duration { return min(m.ttl/2, 500*time.Millisecond) }

// followTTL is how long the kernel keeps names and attributes while the
// mount follows the journal.
const followTTL = time.Hour

// follower is the mount's state of following the journal.
type follower struct {
	// gen counts invalidations: an answer built while it moved is kept
	// only for the TTL.
	gen atomic.Uint64
	// trustUntil (unix nanoseconds) is until when the kernel may be told
	// followTTL: the start of the last answered call plus the TTL.
	trustUntil atomic.Int64
	// trustGen is gen when following last began: only what was asked
	// from then on is trusted past the TTL.
	trustGen atomic.Uint64

	// Owned by the follow goroutine.
	cursor   string
	trusting bool // the kernel may hold followTTL entries
	off      bool // the gateway refused: not asked again
}

// following reports whether the mount follows the journal now: then
// what it knows (listings, attributes) stays true until the follower
// forgets it, whatever its age.
func (m *Mount) following() bool { return time.Now().UnixNano() < m.fw.trustUntil.Load() }

// fresh reports whether what the mount learnt at t, having asked when
// the follower's gen was g, may still be trusted: within the TTL, or
// while following if it was asked after following began (what was asked
// before may predate the journal's first cursor).
func (m *Mount) fresh(t time.Time, g uint64) bool {
	return time.Since(t) <= m.ttl || m.following() && g >= m.fw.trustGen.Load() && g != 0
}

// cacheTTL is how long the kernel may keep an answer built from what the
// mount knew when gen was g.
func (m *Mount) cacheTTL(g uint64) time.Duration {
	if m.fw.gen.Load() == g && m.following() {
		return followTTL
	}
	return m.ttl
}

// follow asks the journal what changed, every followEvery, until the
// mount closes or the gateway refuses. A lease that may not list is
// never followed (the gateway would record a refusal twice a second).
func (m *Mount) follow() {
	if !m.mayList() {
		return
	}
	t := time.NewTicker(m.followEvery())
	defer t.Stop()
	for !m.fw.off {
		select {
		case <-m.closed:
			return
		case <-t.C:
		}
		m.followOnce()
	}
}

// followOnce asks once and invalidates what changed.
func (m *Mount) followOnce() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*m.followEvery())
	var out apiv1.ObjectTouchedResponse
	err := m.r.c.Do(ctx, apiv1.ObjectTouchedRequest{Repo: m.r.repo, Branch: m.r.branch, Cursor: m.fw.cursor}, &out)
	cancel()
	var ce *client.Error
	if errors.As(err, &ce) && deadLease(ce) && m.opts.Client.Temporary() {
		m.goStale("the gateway refused the lease: " + ce.Code)
	} else if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 && ce.Status != http.StatusTooManyRequests {
		// Refused for good (no list, a gateway without the journal): the
		// TTL applies from now on, and the refusal is not repeated.
		m.log.Info("not following the gateway's changes; names and attributes are trusted for the TTL", "err", err)
		m.fw.off = true
		m.untrust(true)
		return
	}
	if m.stale.Load() {
		// The lease ended: names the mount knows answer from memory
		// (knownEntry), nothing is asked of the gateway any more.
		m.fw.trustUntil.Store(0)
		m.fw.off = true
		return
	}
	if err != nil || !out.Coherent {
		if err != nil && m.fw.cursor != "" {
			m.log.Debug("following the gateway's changes", "err", err)
		}
		m.untrust(err == nil)
		return
	}
	m.fw.cursor = out.Cursor
	switch {
	case out.All && !m.fw.trusting:
		// The first answer: what the mount learnt before may be older
		// than the cursor, so it is trusted for the TTL only (the kernel
		// was told no more).
		m.fw.trustGen.Store(m.fw.gen.Add(1))
	case out.All:
		m.forgetAll()
	case len(out.Keys) > 0:
		m.forgetKeys(out.Keys)
	}
	m.fw.trustUntil.Store(start.Add(m.ttl).UnixNano())
	m.fw.trusting = true
}

// untrust stops long answers; once the last trust has lapsed (or at once
// when now), everything the kernel holds is invalidated.
func (m *Mount) untrust(now bool) {
	if now {
		m.fw.trustUntil.Store(0)
	}
	if m.fw.trusting && time.Now().UnixNano() >= m.fw.trustUntil.Load() {
		m.fw.trusting = false
		m.fw.cursor = ""
		m.forgetAll()
	}
}

// forgetAll invalidates every name and attribute the kernel and the
// mount's caches hold: in memory for every inode the mount knows, in the
// kernel by the root's entries (invalidating a directory's entry drops
// every entry under it, so this costs a call per top-level name, not per
// file) and the attributes of open files (fstat does not look up).
func (m *Mount) forgetAll() {
	m.fw.trustGen.Store(m.fw.gen.Add(1))
	root := m.root.EmbeddedInode()
	var walk func(dir *fs.Inode)
	walk = func(dir *fs.Inode) {
		if d, ok := dir.Operations().(*dirNode); ok {
			d.forgetNames()
		}
		for _, ch := range dir.Children() {
			switch n := ch.Operations().(type) {
			case *dirNode:
				walk(ch)
			case *fileNode:
				n.forget()
				if n.openCount() > 0 {
					ch.NotifyContent(-1, 0)
				}
			}
		}
	}
	walk(root)
	for name := range root.Children() {
		if name != ctlName {
			root.NotifyEntry(name)
		}
	}
}

// forgetKeys invalidates what the mount knows of keys, except where it
// already knows the version the journal names (its own writes).
func (m *Mount) forgetKeys(keys []apiv1.TouchedKey) {
	counted := false
	for _, k := range keys {
		rel, ok := strings.CutPrefix(k.Key, m.r.prefix)
		rel = strings.TrimSuffix(rel, "/") // a marker names its directory
		if !ok || rel == "" {
			continue
		}
		dir, name, child, leaf := m.known(rel)
		if m.agrees(dir, name, child, leaf, k) {
			continue
		}
		if !counted {
			m.fw.gen.Add(1)
			counted = true
		}
		if d, ok := dir.Operations().(*dirNode); ok {
			d.forgetNames()
		}
		if child == nil {
			continue // the kernel keeps an absence only for the TTL
		}
		if f, ok := child.Operations().(*fileNode); ok {
			f.forget()
			child.NotifyContent(-1, 0)
		}
		dir.NotifyEntry(name)
	}
}

// known walks rel as far as the mount knows it: the deepest directory
// known, the next name below it, that name's inode if known, and whether
// name is rel's last segment.
func (m *Mount) known(rel string) (dir *fs.Inode, name string, child *fs.Inode, leaf bool) {
	dir = m.root.EmbeddedInode()
	for {
		first, rest, more := strings.Cut(rel, "/")
		ch := dir.GetChild(first)
		if !more || ch == nil {
			return dir, first, ch, !more
		}
		if _, ok := ch.Operations().(*dirNode); !ok {
			return dir, first, ch, false // a file where a directory is now
		}
		dir, rel = ch, rest
	}
}

// agrees reports whether the mount already shows k as the journal names
// it: the file's version (or its own unsaved changes), an absence where k
// was deleted, a directory on the way to a key written under it.
func (m *Mount) agrees(dir *fs.Inode, name string, child *fs.Inode, leaf bool, k apiv1.TouchedKey) bool {
	if child != nil {
		f, ok := child.Operations().(*fileNode)
		if !ok || !leaf || k.Deleted || k.VersionID == "" {
			return false
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.staged != nil || f.local || f.e != nil && f.e.VersionID == k.VersionID
	}
	d, ok := dir.Operations().(*dirNode)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		return true // nothing listed to correct, no inode the kernel holds
	}
	in, listed := d.names.ents[name]
	switch {
	case !leaf:
		return listed && in.kind == syscall.S_IFDIR && !k.Deleted
	case k.Deleted:
		return !listed
	case listed && in.e != nil:
		return in.e.VersionID == k.VersionID
	}
	return false
}

// forget makes the next stat of f ask the gateway.
func (f *fileNode) forget() {
	f.mu.Lock()
	f.seen = time.Time{}
	f.mu.Unlock()
}
