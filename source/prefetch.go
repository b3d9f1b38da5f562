package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/branch"
)

// PrefetchOptions is what the owner asks of a prefetch.
type PrefetchOptions struct {
	// Prefix narrows the prefetch to the repository keys under it ("": the
	// whole attachment). It must overlap the attachment's prefix.
	Prefix string
	// Parallel is how many entries are fetched at once (0 means 4; at most
	// MaxPrefetchParallel).
	Parallel int
	// Rate bounds the bytes a second fetched over all workers (0: no
	// limit).
	Rate int64
	// Principal is who starts it.
	Principal string
}

// MaxPrefetchParallel bounds PrefetchOptions.Parallel.
const MaxPrefetchParallel = 64

// Prefetch job states.
const (
	PrefetchRunning     = "running"
	PrefetchDone        = "done"
	PrefetchFailed      = "failed"      // Error says why
	PrefetchInterrupted = "interrupted" // by a gateway restart or shutdown
	PrefetchCancelled   = "cancelled"
)

// maxListedKeys bounds the drifted and unavailable keys a job lists.
const maxListedKeys = 10

// outageRun is how many entries in a row must fail with ErrUnavailable
// (each after the materializer's retries) for a prefetch to take the
// remote for down and stop; a single failing object is only counted.
const outageRun = 3

// PrefetchInfo describes a source's prefetch job: what it was asked and
// how far it got. The last job is kept in the attachment record
// (Info.Prefetch), written when it starts, about once a second while it
// runs, and when it ends. Byte counts are of object bytes.
type PrefetchInfo struct {
	// State is running, done, failed, interrupted or cancelled. A job
	// that did not finish resumes by prefetching again: what is local
	// is skipped, so no block is fetched twice.
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
	Prefix   string `json:"prefix"`   // repository keys it covers
	Parallel int    `json:"parallel"` // entries fetched at once
	Rate     int64  `json:"rate"`     // bytes a second, 0: no limit
	// TotalEntries and TotalBytes are the source's entries under Prefix,
	// counted before fetching.
	TotalEntries int64 `json:"total_entries"`
	TotalBytes   int64 `json:"total_bytes"`
	// Entries is how many it has handled; LocalEntries of them were
	// already local, LocalBytes the bytes it found local.
	Entries        int64 `json:"entries"`
	LocalEntries   int64 `json:"local_entries"`
	LocalBytes     int64 `json:"local_bytes"`
	FetchedEntries int64 `json:"fetched_entries"`
	// FetchedBytes were fetched, verified and recorded by this job;
	// ReceivedBytes came from the remote, including fetches under way
	// and those that failed.
	FetchedBytes  int64 `json:"fetched_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
	// Drifted entries' remote objects changed since they were pinned
	// (`nas source refresh` re-pins them); Unavailable ones the remote
	// could not serve. The keys are the first few of each.
	Drifted         int64     `json:"drifted"`
	Unavailable     int64     `json:"unavailable"`
	DriftedKeys     []string  `json:"drifted_keys,omitempty"`
	UnavailableKeys []string  `json:"unavailable_keys,omitempty"`
	Started         time.Time `json:"started"`
	Ended           time.Time `json:"ended,omitzero"`
	Principal       string    `json:"started_by,omitempty"`
}

// prefetchJob is a prefetch of one source under way.
type prefetchJob struct {
	id       string
	prefix   string
	parallel int
	rate     int64
	done     chan struct{} // closed once its outcome is stored
	received atomic.Int64  // bytes that passed its sinks

	mu        sync.Mutex // guards info, outage, cancelled and stop
	info      PrefetchInfo
	outage    int                // entries in a row that failed with ErrUnavailable
	cancelled bool               // the owner asked it to stop
	stop      context.CancelFunc // ends its context once it runs
}

// snapshot returns the job's progress so far.
func (j *prefetchJob) snapshot() *PrefetchInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	info := j.info
	info.ReceivedBytes = j.received.Load()
	info.DriftedKeys = slices.Clone(info.DriftedKeys)
	info.UnavailableKeys = slices.Clone(info.UnavailableKeys)
	return &info
}

// begin hands the job its cancel function; false if it was cancelled
// before it started.
func (j *prefetchJob) begin(stop context.CancelFunc) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stop = stop
	return !j.cancelled
}

// cancel asks the job to stop.
func (j *prefetchJob) cancel() {
	j.mu.Lock()
	j.cancelled = true
	stop := j.stop
	j.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// prefetchPrefix returns the repository prefix a prefetch of rec covers.
func prefetchPrefix(rec *record, p string) (string, error) {
	switch {
	case p == "" || strings.HasPrefix(rec.Prefix, p):
		return rec.Prefix, nil
	case strings.HasPrefix(p, rec.Prefix):
		return p, nil
	}
	return "", fmt.Errorf("prefix %q is outside source %s's %q: %w", p, rec.ID, rec.Prefix, ErrInvalid)
}

// newPrefetchJob checks o against rec and returns the job it asks for.
func newPrefetchJob(rec *record, o PrefetchOptions) (*prefetchJob, error) {
	prefix, err := prefetchPrefix(rec, o.Prefix)
	if err != nil {
		return nil, err
	}
	if o.Parallel < 0 || o.Parallel > MaxPrefetchParallel {
		return nil, fmt.Errorf("parallel %d: want 1 to %d: %w", o.Parallel, MaxPrefetchParallel, ErrInvalid)
	}
	if o.Parallel == 0 {
		o.Parallel = 4
	}
	if o.Rate < 0 {
		return nil, fmt.Errorf("rate %d: %w", o.Rate, ErrInvalid)
	}
	if rec.State == "importing" {
		return nil, fmt.Errorf("source %s is still being attached; prefetch once it is ready: %w", rec.ID, ErrConflict)
	}
	j := &prefetchJob{id: rec.ID, prefix: prefix, parallel: o.Parallel, rate: o.Rate, done: make(chan struct{})}
	j.info = PrefetchInfo{State: PrefetchRunning, Prefix: prefix, Parallel: o.Parallel, Rate: o.Rate,
		Started: time.Now().UTC(), Principal: o.Principal}
	return j, nil
}

// Prefetch starts making a source's entries on its branch local in the
// background and returns the job as it starts; Status shows its
// progress. A prefetch already under way is returned instead of a second
// (whatever o asks). A prefetch may run beside an attach's refresh: it
// fetches the entries it finds as it lists the branch.
func (r *Registry) Prefetch(ctx context.Context, id string, o PrefetchOptions) (*PrefetchInfo, error) {
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if j := r.prefetchOf(id); j != nil {
		return j.snapshot(), nil
	}
	j, err := newPrefetchJob(rec, o)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if old := r.prefetches[id]; old != nil {
		r.mu.Unlock()
		return old.snapshot(), nil
	}
	r.prefetches[id] = j
	r.mu.Unlock()
	if err := r.savePrefetch(ctx, j); err != nil {
		r.dropPrefetch(j)
		return nil, err
	}
	select {
	case r.pqueue <- j:
	case <-ctx.Done():
		r.endPrefetch(ctx, j, ctx.Err())
		return nil, ctx.Err()
	}
	return j.snapshot(), nil
}

// CancelPrefetch stops the prefetch of id under way and returns it once
// it stopped; without one it returns the last prefetch as it ended
// (ErrNotFound when there was none). What was fetched stays local.
func (r *Registry) CancelPrefetch(ctx context.Context, id string) (*PrefetchInfo, error) {
	if j := r.prefetchOf(id); j != nil {
		j.cancel()
		select {
		case <-j.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Prefetch == nil {
		return nil, fmt.Errorf("source %s was never prefetched: %w", id, ErrNotFound)
	}
	return rec.Prefetch, nil
}

// prefetchOf returns the prefetch of id under way, or nil.
func (r *Registry) prefetchOf(id string) *prefetchJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prefetches[id]
}

// dropPrefetch forgets a job and tells its waiters it ended.
func (r *Registry) dropPrefetch(j *prefetchJob) {
	r.mu.Lock()
	delete(r.prefetches, j.id)
	r.mu.Unlock()
	close(j.done)
}

// savePrefetch stores the job's progress in the attachment record.
func (r *Registry) savePrefetch(ctx context.Context, j *prefetchJob) error {
	info := j.snapshot()
	return r.update(ctx, j.id, func(rec *record) { rec.Prefetch = info })
}

// runPrefetch runs a job and stores its outcome. It stops when ctx (the
// registry's) ends, as interrupted.
func (r *Registry) runPrefetch(ctx context.Context, j *prefetchJob) {
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	if !j.begin(stop) {
		r.endPrefetch(ctx, j, context.Canceled)
		return
	}
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-t.C:
				if err := r.savePrefetch(jctx, j); err != nil && jctx.Err() == nil {
					r.log.Warn("saving prefetch progress", "source", j.id, "err", err)
				}
			}
		}
	}()
	err := r.fetchAll(jctx, j)
	stop()
	<-saved // the last word is endPrefetch's
	r.endPrefetch(ctx, j, err)
}

// endPrefetch stores how job j ended (err nil: done) and ends it.
func (r *Registry) endPrefetch(ctx context.Context, j *prefetchJob, err error) {
	j.mu.Lock()
	switch {
	case err == nil:
		j.info.State = PrefetchDone
	case j.cancelled:
		j.info.State, j.info.Error = PrefetchCancelled, "cancelled; `nas source prefetch` resumes it"
	case ctx.Err() != nil:
		j.info.State, j.info.Error = PrefetchInterrupted, "interrupted by a gateway shutdown; `nas source prefetch` resumes it"
	default:
		j.info.State, j.info.Error = PrefetchFailed, err.Error()
	}
	j.info.Ended = time.Now().UTC()
	state := j.info.State
	j.mu.Unlock()
	if err := r.savePrefetch(context.WithoutCancel(ctx), j); err != nil && !errors.Is(err, ErrNotFound) {
		r.log.Warn("saving prefetch outcome", "source", j.id, "err", err)
	}
	if state == PrefetchFailed {
		r.log.Warn("prefetch failed", "source", j.id, "err", err)
	}
	r.dropPrefetch(j)
}

// fetchAll counts the job's entries, then makes them local with
// j.parallel workers fed by one lister.
func (r *Registry) fetchAll(ctx context.Context, j *prefetchJob) error {
	rec, err := r.get(ctx, j.id)
	if err != nil {
		return err
	}
	entries, size, err := r.countOwned(ctx, rec, j.prefix)
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.info.TotalEntries, j.info.TotalBytes = entries, size
	j.mu.Unlock()
	lim, burst := newLimiter(j.rate)
	var w waiter
	if lim != nil {
		w = lim
	}
	g, gctx := errgroup.WithContext(ctx)
	pace := newPacer(gctx, w, burst, &j.received)
	ch := make(chan branch.Object, 2*j.parallel)
	g.Go(func() error {
		defer close(ch) // the producer closes
		return r.walkOwned(gctx, rec, j.prefix, func(page []branch.Object) error {
			for _, o := range page {
				select {
				case ch <- o:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	})
	for range j.parallel {
		g.Go(func() error {
			for o := range ch {
				n, err := r.m.fill(gctx, o.Entry, pace)
				if err := j.account(gctx, o, n, err); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// account adds one entry's outcome to the job. It returns the error that
// stops the job: the job's context ending, the source detached or
// refusing the gateway's credentials, outageRun entries in a row the
// remote could not serve, or a local failure. Drift and a single
// unavailable or corrupt object are only counted.
func (j *prefetchJob) account(ctx context.Context, o branch.Object, fetched int64, err error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.info.FetchedBytes += fetched
	switch {
	case err == nil:
		j.outage = 0
		if fetched == 0 {
			j.info.LocalEntries++
		} else {
			j.info.FetchedEntries++
		}
		j.info.LocalBytes += o.Entry.Size - fetched
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrRemoved), errors.Is(err, ErrDenied):
		return err
	case errors.Is(err, ErrChanged):
		j.outage = 0
		j.info.Drifted++
		j.info.DriftedKeys = appendKey(j.info.DriftedKeys, o.Key)
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrCorrupt):
		j.info.Unavailable++
		j.info.UnavailableKeys = appendKey(j.info.UnavailableKeys, o.Key)
		if errors.Is(err, ErrUnavailable) {
			if j.outage++; j.outage >= outageRun {
				return fmt.Errorf("the remote failed %d entries in a row, the last with: %w", j.outage, err)
			}
		}
	default:
		return fmt.Errorf("prefetch %s: %w", o.Key, err)
	}
	j.info.Entries++
	return nil
}

// appendKey adds key to the first maxListedKeys keys.
func appendKey(keys []string, key string) []string {
	if len(keys) >= maxListedKeys {
		return keys
	}
	return append(keys, key)
}

// countOwned counts the source's lazy entries on its branch under prefix
// and their bytes (a listing, no side-index read).
func (r *Registry) countOwned(ctx context.Context, rec *record, prefix string) (entries, size int64, err error) {
	err = r.walkOwned(ctx, rec, prefix, func(page []branch.Object) error {
		for _, o := range page {
			entries, size = entries+1, size+o.Entry.Size
		}
		return nil
	})
	return entries, size, err
}

// walkOwned calls fn with the source's lazy entries on its branch under
// prefix, a page (of up to 1,000 listed keys) at a time, in key order.
func (r *Registry) walkOwned(ctx context.Context, rec *record, prefix string, fn func([]branch.Object) error) error {
	after := ""
	for {
		res, err := r.b.List(ctx, rec.Repo, rec.Branch, branch.ListOptions{Prefix: prefix, After: after, MaxKeys: 1000})
		if err != nil {
			return err
		}
		page := res.Objects[:0:0]
		for _, o := range res.Objects {
			if ownedBy(o.Entry, rec.ID) {
				page = append(page, o)
			}
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if !res.Truncated || len(res.Objects) == 0 {
			return nil
		}
		after = res.Objects[len(res.Objects)-1].Key
	}
}
