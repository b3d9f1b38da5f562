package fuse

import (
	"context"
	"sync"
	"time"

	"github.com/agentnas/nas/apiv1"
)

// writeback uploads closed files in the background when the mount runs
// with Options.Writeback: close returns once the bytes are staged (in
// memory or the staging area), small whole files go to the gateway in
// batches (object/put-batch: one round trip and one sync for many files),
// the others a few at once, so a loop writing many small files is not
// held to one round trip and one fsync of the gateway per file. fsync
// (of the file or the mount root) and unmount still wait for the
// gateway, and report what failed in the background.
//
// The trade: between close and the upload, the bytes exist only in the
// mount (a crash of the mount loses them; a crash of the gateway does
// not), and a refusal (EACCES, EDQUOT) reaches the program at fsync, not
// at close.
type writeback struct {
	m       *Mount
	queue   chan *fileNode // closed files, in order
	singles chan *fileNode // files that go on their own
	slots   chan struct{}  // batches in flight
	dels    *deletes       // unlinks answered and not yet sent
	wg      sync.WaitGroup

	// mu guards queued, failed, stopped and sends on queue.
	mu      sync.Mutex
	queued  map[*fileNode]bool
	failed  map[*fileNode]error // a background upload's failure, for the next fsync
	stopped bool
}

// How many uploads run at once: files on their own, and batches (each
// batch takes what queued up while the others were in flight, so batches
// grow with the load and a lone file still goes at once).
const (
	writebackWorkers = 8
	batchesInFlight  = 2
)

// uploadTimeout bounds one background upload.
const uploadTimeout = 10 * time.Minute

func newWriteback(m *Mount) *writeback {
	w := &writeback{m: m, queue: make(chan *fileNode, 4096), singles: make(chan *fileNode, 1024),
		slots: make(chan struct{}, batchesInFlight), queued: map[*fileNode]bool{}, failed: map[*fileNode]error{}}
	for range writebackWorkers {
		w.wg.Add(1)
		go w.single()
	}
	w.wg.Add(1)
	go w.dispatch()
	w.dels = newDeletes(m)
	return w
}

// enqueue schedules f's upload; false means the queue is full and the
// caller uploads itself.
func (w *writeback) enqueue(f *fileNode) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	if w.queued[f] {
		return true
	}
	select {
	case w.queue <- f:
		w.queued[f] = true
		return true
	default:
		return false
	}
}

// pending is a batch being gathered.
type pending struct {
	files []*fileNode
	bytes int64
}

// full reports whether p holds as much as one put-batch may.
func (p *pending) full() bool {
	return len(p.files) >= apiv1.MaxBatchObjects || p.bytes >= apiv1.MaxBatchData
}

// dispatch takes closed files off the queue: small whole files gather
// into a batch, sent as soon as a batch slot is free; the others go to
// the workers of single files. It ends once the queue is closed and
// every batch it sent is done.
func (w *writeback) dispatch() {
	defer w.wg.Done()
	defer close(w.singles)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var p pending
	for {
		if len(p.files) == 0 {
			f, ok := <-w.queue
			if !ok {
				return
			}
			w.route(f, &p, &inflight)
			continue
		}
		if p.full() {
			w.slots <- struct{}{}
			w.send(&p, &inflight)
			continue
		}
		select {
		case f, ok := <-w.queue:
			if !ok {
				w.slots <- struct{}{}
				w.send(&p, &inflight)
				return
			}
			w.route(f, &p, &inflight)
		case w.slots <- struct{}{}:
			w.send(&p, &inflight)
		}
	}
}

// route puts f in the batch being gathered, or, when it cannot go in a
// batch, hands it to the single workers; a batch that f would take past
// the data bound is sent first.
func (w *writeback) route(f *fileNode, p *pending, inflight *sync.WaitGroup) {
	w.mu.Lock()
	delete(w.queued, f)
	w.mu.Unlock()
	ok, size := f.mayBatch()
	if !ok {
		w.singles <- f
		return
	}
	if len(p.files) > 0 && p.bytes+size > apiv1.MaxBatchData {
		w.slots <- struct{}{}
		w.send(p, inflight)
	}
	p.files, p.bytes = append(p.files, f), p.bytes+size
}

// send uploads p's files in the background in a slot the caller took,
// and starts a new batch.
func (w *writeback) send(p *pending, inflight *sync.WaitGroup) {
	files := p.files
	*p = pending{}
	inflight.Add(1)
	go func() {
		defer inflight.Done()
		defer func() { <-w.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
		defer cancel()
		for i, err := range w.m.flushBatch(ctx, files) {
			if err != nil {
				w.failedNow(files[i], err)
			}
		}
	}()
}

// single uploads the files that go on their own.
func (w *writeback) single() {
	defer w.wg.Done()
	for f := range w.singles {
		ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
		err := f.flush(ctx)
		cancel()
		if err != nil {
			w.failedNow(f, err)
		}
	}
}

// failedNow keeps a background upload's failure for the next fsync.
func (w *writeback) failedNow(f *fileNode, err error) {
	w.m.fail(err)
	w.m.log.Warn("background upload failed; fsync or unmount reports it", "err", err)
	w.mu.Lock()
	w.failed[f] = err
	w.mu.Unlock()
}

// failure returns (and forgets) the last background failure of f.
func (w *writeback) failure(f *fileNode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.failed[f]
	delete(w.failed, f)
	return err
}

// failures forgets every background failure and returns one of them.
func (w *writeback) failures() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for _, err := range w.failed {
		first = err
		break
	}
	clear(w.failed)
	return first
}

// stop ends the workers once the queue is drained, and sends the
// unlinks not yet sent; later closes upload themselves, later unlinks go
// at once.
func (w *writeback) stop() {
	w.mu.Lock()
	first := !w.stopped
	if first {
		w.stopped = true
		close(w.queue)
	}
	w.mu.Unlock()
	w.wg.Wait()
	if first {
		ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
		defer cancel()
		w.dels.stop(ctx) // a failure is kept for flushAll
	}
}

// deferDelete notes an unlink of key to send later, and reports whether
// it did: not once stopped, nor when the lease may not delete key.
func (w *writeback) deferDelete(key string) bool {
	w.mu.Lock()
	stopped := w.stopped
	w.mu.Unlock()
	if stopped || !w.dels.mayDefer(key) {
		return false
	}
	w.dels.add(key)
	return true
}
