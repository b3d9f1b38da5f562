package fuse

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
)

// deletes are the unlinks a write-back mount answered but has not sent
// yet: unlink returns once the mount notes the name gone, and the notes go
// to the gateway in DeleteObjects calls of up to 1,000 keys (gathered
// while the previous call is in flight), as close's uploads do. Until a
// key is sent, the mount's own listings and lookups leave it out, and
// whatever must see the gateway without it waits for it first: fsync of
// the root (and so commits by it) and unmount, a new file at the same
// name, a rename, an rmdir. A refused delete reaches the program at the
// next fsync of the root, and the name comes back.
type deletes struct {
	m *Mount

	// mu guards pending and order.
	mu      sync.Mutex
	pending map[string]bool // the mount's keys, unlinked and not yet deleted
	order   []string        // pending, in the order of the unlinks

	sendMu sync.Mutex // one DeleteObjects call at a time
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func newDeletes(m *Mount) *deletes {
	d := &deletes{m: m, pending: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	d.wg.Add(1)
	go d.loop()
	return d
}

// mayDefer reports whether an unlink of key may be answered before the
// gateway has it: when the lease's document allows the delete (else the
// gateway's refusal must reach unlink itself).
func (d *deletes) mayDefer(key string) bool {
	d.m.mu.Lock()
	li := d.m.lease
	d.m.mu.Unlock()
	return li == nil || li.doc == nil ||
		li.doc.Check(lease.Delete, d.m.opts.Repo, d.m.opts.Branch, d.m.r.prefix+key, time.Now()).Decision == lease.Allow
}

// add notes key unlinked, to be deleted on the gateway soon.
func (d *deletes) add(key string) {
	d.mu.Lock()
	if !d.pending[key] {
		d.pending[key] = true
		d.order = append(d.order, key)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// has reports whether key is unlinked and not yet deleted on the gateway.
func (d *deletes) has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending[key]
}

// any reports whether some unlink is not yet sent.
func (d *deletes) any() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.order) > 0
}

// loop sends what is pending whenever something is added.
func (d *deletes) loop() {
	defer d.wg.Done()
	for {
		select {
		case <-d.done:
			return
		case <-d.wake:
			ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
			if err := d.flush(ctx); err != nil {
				d.m.log.Warn("background delete failed; fsync of the root or unmount reports it", "err", err)
			}
			cancel()
		}
	}
}

// flush sends every pending delete and returns once the gateway answered
// them all: the first failure (the call's, or a key the gateway refused),
// which is also kept for the next fsync of the root.
func (d *deletes) flush(ctx context.Context) error {
	d.sendMu.Lock()
	defer d.sendMu.Unlock()
	var first error
	for {
		d.mu.Lock()
		keys := d.order[:min(len(d.order), client.MaxDeleteKeys)]
		d.mu.Unlock()
		if len(keys) == 0 {
			return first
		}
		if err := d.send(ctx, keys); err != nil && first == nil {
			first = err
		}
		d.mu.Lock()
		for _, k := range keys {
			delete(d.pending, k)
		}
		d.order = d.order[len(keys):]
		d.mu.Unlock()
	}
}

// send deletes keys on the gateway; the caller holds sendMu.
func (d *deletes) send(ctx context.Context, keys []string) error {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = d.m.r.prefix + k
	}
	failed, err := d.m.r.c.DeleteObjects(ctx, d.m.r.repo, d.m.r.branch, full)
	if err == nil && len(failed) > 0 {
		f := failed[0]
		err = &client.Error{Op: "DeleteObjects " + f.Key, Status: 400, Code: f.Code, Message: fmt.Sprintf("%s (and %d more keys refused)", f.Message, len(failed)-1)}
	}
	if err != nil {
		d.m.wb.failedNow(nil, err) // for the next fsync of the root
		return err
	}
	d.m.changedNow()
	return nil
}

// stop ends the loop and sends what is pending.
func (d *deletes) stop(ctx context.Context) error {
	close(d.done)
	d.wg.Wait()
	return d.flush(ctx)
}

// pendingDelete reports whether key was unlinked and is not yet deleted
// on the gateway: the mount's listings and lookups leave it out.
func (m *Mount) pendingDelete(key string) bool {
	return m.wb != nil && m.wb.dels.has(key)
}

// flushDeletes sends the unlinks not yet sent, and returns the first
// failure.
func (m *Mount) flushDeletes(ctx context.Context) error {
	if m.wb == nil || !m.wb.dels.any() {
		return nil
	}
	return m.wb.dels.flush(ctx)
}

// flushDeleteOf sends the pending unlinks when one of them is key, which
// is about to be written again: the delete must reach the gateway first.
func (m *Mount) flushDeleteOf(ctx context.Context, key string) error {
	if !m.pendingDelete(key) {
		return nil
	}
	return m.wb.dels.flush(ctx)
}
