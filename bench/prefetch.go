package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/source"
)

// The source-prefetch workload: a remote bucket of new objects (gofakes3
// in memory, on loopback) attached to a new repository of the in-process
// gateway, made local by a prefetch job, beside plain parallel GETs of
// the same objects from the remote by the load generator, with as many
// workers. Each run uses new objects, so every prefetch fetches them all.

// init registers the source-prefetch workload.
func init() {
	Register(Workload{Name: "source-prefetch", Doc: "a prefetch of an attached bucket against a plain parallel GET of the same objects from the remote", Run: runSourcePrefetch})
}

// prefetchSizes are the objects of one run and the workers, by mode.
func prefetchSizes(mode string) (objects int, size int64, parallel int) {
	switch mode {
	case "tiny":
		return 8, 1 << 20, 4
	case "quick":
		return 32, 1 << 20, 4
	}
	return 64, 4 << 20, 4
}

// Subjects of the source-prefetch workload.
const (
	pfPrefetch = "nas, prefetch --parallel 4"
	pfDirect   = "remote, 4 parallel GETs"
)

// runSourcePrefetch runs the source-prefetch workload.
func runSourcePrefetch(ctx context.Context, e *Env) ([]*Result, error) {
	k, size, par := prefetchSizes(e.Profile.Mode)
	rm, err := startSrcRemote(ctx)
	if err != nil {
		return nil, err
	}
	defer rm.close()
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	p := &prefetchRun{t: t, rm: rm, k: k, size: size, par: par, ids: map[int]string{}}
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: pfPrefetch, Note: "owner's prefetch of the whole attachment, from its start to its end (polled every 5 ms): fetch, verify the MD5, chunk and store every object",
			Measure: p.prefetch},
		{Name: pfDirect, Baseline: true, Note: "the same objects GET from the remote by the load generator's client, read and discarded",
			Measure: p.direct},
	}, ByThroughput)
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("%d new objects of %s a run, in a bucket attached to a new repository before the clock starts; %d workers on both sides.",
		k, FormatSize(size), par)}
	return []*Result{{Case: fmt.Sprintf("prefetch of %d x %s", k, FormatSize(size)), Reference: pfPrefetch, Rows: rows, Notes: notes}}, nil
}

// prefetchRun is the workload's state: the bucket of each run, attached.
type prefetchRun struct {
	t    *Target
	rm   *srcRemote
	k    int
	size int64
	par  int
	ids  map[int]string // run -> attachment
}

// prepare puts run rep's objects on the remote and attaches them, once.
func (p *prefetchRun) prepare(ctx context.Context, rep int) (string, error) {
	if id, ok := p.ids[rep]; ok {
		return id, nil
	}
	bucket := fmt.Sprintf("prefetch-%d", rep)
	if err := p.rm.mem.CreateBucket(bucket); err != nil {
		return "", err
	}
	r := rand.New(rand.NewChaCha8([32]byte{byte(rep), 7}))
	body := make([]byte, p.size)
	for i := range p.k {
		for j := range body {
			body[j] = byte(r.Uint32())
		}
		if err := p.rm.put(bucket, fmt.Sprintf("obj-%04d", i), body); err != nil {
			return "", err
		}
	}
	info, err := p.rm.attach(ctx, p.t, bucket, bucket)
	if err != nil {
		return "", err
	}
	p.ids[rep] = info.ID
	return info.ID, nil
}

// prefetch prefetches run rep's attachment and waits for it to end.
func (p *prefetchRun) prefetch(ctx context.Context, rep int) (Sample, error) {
	id, err := p.prepare(ctx, rep)
	if err != nil {
		return Sample{}, err
	}
	reg := p.t.Gateway.Sources
	start := time.Now()
	if _, err := reg.Prefetch(ctx, id, source.PrefetchOptions{Parallel: p.par}); err != nil {
		return Sample{}, err
	}
	for {
		st, err := reg.Status(ctx, id, false)
		if err != nil {
			return Sample{}, err
		}
		if pf := st.Prefetch; pf != nil && pf.State != source.PrefetchRunning {
			d := time.Since(start)
			if pf.State != source.PrefetchDone || pf.FetchedBytes != int64(p.k)*p.size {
				return Sample{}, fmt.Errorf("prefetch %s: %s, %d bytes fetched: %s", id, pf.State, pf.FetchedBytes, pf.Error)
			}
			return Sample{Ops: p.k, Bytes: pf.FetchedBytes, Elapsed: d}, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// direct GETs run rep's objects from the remote with p.par workers.
func (p *prefetchRun) direct(ctx context.Context, rep int) (Sample, error) {
	if _, err := p.prepare(ctx, rep); err != nil {
		return Sample{}, err
	}
	bucket := fmt.Sprintf("prefetch-%d", rep)
	defer p.rm.mem.ForceDeleteBucket(bucket) // both subjects of the run are done with it
	next := make(chan int, p.k)
	for i := range p.k {
		next <- i
	}
	close(next)
	lat := make([][]time.Duration, p.par)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for w := range p.par {
		g.Go(func() error {
			for i := range next {
				t0 := time.Now()
				n, err := p.rm.client.Get(gctx, bucket, fmt.Sprintf("obj-%04d", i))
				if err != nil {
					return err
				}
				if n != p.size {
					return fmt.Errorf("GET obj-%04d: %d bytes", i, n)
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Sample{}, err
	}
	s := Sample{Ops: p.k, Bytes: int64(p.k) * p.size, Elapsed: time.Since(start)}
	for _, l := range lat {
		s.Latency = append(s.Latency, l...)
	}
	return s, nil
}
