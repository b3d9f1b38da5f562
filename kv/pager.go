package kv

import (
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// pagerTick is how often the pager looks at the process's resident set.
var pagerTick = 100 * time.Millisecond

// pager keeps the store's mapped files from growing the process's
// resident set past a budget. Badger maps every table file (and its logs)
// into the address space and reads them through the mapping, so each page
// of a table written or read lately stays resident in the gateway until
// the kernel needs it back: a long run of small PUTs grew the resident set
// by about 260 MiB a minute (bench/RESULTS.md, "Memory under load"). The
// pager watches the process's resident file pages and, once they have
// grown by the budget since it last acted, asks the kernel to page out
// every mapping of a file in the store's directory. Those pages leave the
// resident set; a page needed again faults back in from the page cache or
// the disk. Paging out loses nothing: dirty pages stay in the page cache
// until written back, and it never touches anonymous memory, so a mapping
// Badger replaces meanwhile comes to no harm.
type pager struct {
	dir    string // absolute, symbolic links resolved: as the kernel names mappings
	budget int64
	tick   time.Duration
	log    *slog.Logger
	stop   chan struct{}
	done   sync.WaitGroup
}

// startPager watches the mappings of files under dir, or returns nil
// when this system cannot page out (then mapped pages stay resident until
// the kernel reclaims them).
func startPager(dir string, budget int64, log *slog.Logger) *pager {
	if budget <= 0 || !canPageOut() {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &pager{dir: abs, budget: budget, tick: pagerTick, log: log, stop: make(chan struct{})}
	p.done.Add(1)
	go p.run()
	return p
}

// run pages out whenever the resident file pages have grown by the
// budget since the last time, until close.
func (p *pager) run() {
	defer p.done.Done()
	tick := time.NewTicker(p.tick)
	defer tick.Stop()
	floor := residentFile()
	tables := map[string]int64{} // where each table's index starts (see pageOut)
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		if residentFile()-floor <= p.budget {
			continue
		}
		n, err := pageOut(p.dir, tables)
		if err != nil {
			p.log.Warn("kv: paging out mapped files", "dir", p.dir, "err", err)
		}
		floor = residentFile()
		p.log.Debug("kv: paged out mapped files", "dir", p.dir, "mappings", n, "resident_file", floor)
	}
}

// close stops the pager and waits for it (nil: nothing to stop).
func (p *pager) close() {
	if p == nil {
		return
	}
	close(p.stop)
	p.done.Wait()
}
