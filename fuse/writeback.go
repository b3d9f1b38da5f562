package fuse

import (
	"context"
	"sync"
	"time"
)

// writeback uploads closed files in the background when the mount runs
// with Options.Writeback: close returns once the bytes are staged on the
// local disk, and a few uploads run at once, so a loop writing many small
// files is not held to one round trip and one fsync of the gateway per
// file. fsync (of the file or the mount root) and unmount still wait for
// the gateway, and report what failed in the background.
//
// The trade: between close and the upload, the bytes exist only in the
// mount's staging area (a crash of the mount loses them; a crash of the
// gateway does not), and a refusal (EACCES, EDQUOT) reaches the program
// at fsync, not at close.
type writeback struct {
	m     *Mount
	queue chan *fileNode
	wg    sync.WaitGroup

	// mu guards queued, failed, stopped and sends on queue.
	mu      sync.Mutex
	queued  map[*fileNode]bool
	failed  map[*fileNode]error // a background upload's failure, for the next fsync
	stopped bool
}

// writebackWorkers is how many background uploads run at once.
const writebackWorkers = 8

func newWriteback(m *Mount) *writeback {
	w := &writeback{m: m, queue: make(chan *fileNode, 4096), queued: map[*fileNode]bool{}, failed: map[*fileNode]error{}}
	for range writebackWorkers {
		w.wg.Add(1)
		go w.work()
	}
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

func (w *writeback) work() {
	defer w.wg.Done()
	for f := range w.queue {
		w.mu.Lock()
		delete(w.queued, f)
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		err := f.flush(ctx)
		cancel()
		if err != nil {
			w.m.fail(err)
			w.m.log.Warn("background upload failed; fsync or unmount reports it", "err", err)
			w.mu.Lock()
			w.failed[f] = err
			w.mu.Unlock()
		}
	}
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

// stop ends the workers once the queue is drained; later closes upload
// themselves.
func (w *writeback) stop() {
	w.mu.Lock()
	if !w.stopped {
		w.stopped = true
		close(w.queue)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
