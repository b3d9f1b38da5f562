package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one operation of a Load: worker is the worker's index (0 to
// Concurrency-1) and seq the operation's number, unique across workers and
// counting from 0 (warm-up operations are numbered too, so an Op may use seq
// to name a new object). It returns the payload bytes it moved.
type Op func(ctx context.Context, worker, seq int) (bytes int64, err error)

// Load is the load generator: Concurrency workers run an Op in a loop until
// Ops operations have been measured or Duration has passed, whichever comes
// first (a zero limit is no limit; at least one must be set). Each worker
// first runs Warmup operations that are not measured, so connections are
// open and caches are warm before the clock starts.
type Load struct {
	Concurrency int
	Ops         int
	Duration    time.Duration
	Warmup      int
	// MinOps keeps a Duration-bound run going until this many operations
	// are measured, so a slow subject still yields percentiles.
	MinOps int
	// WarmupOp, when set, replaces the Op during warm-up (a small PUT that
	// opens the connection, instead of another 64 MiB object on disk).
	WarmupOp Op
}

// Sample is one measured run of a Load.
type Sample struct {
	Ops     int
	Bytes   int64
	Elapsed time.Duration   // from the first measured operation's start to the last one's end
	Latency []time.Duration // one per operation, in completion order
}

// MiBps is the payload throughput of the sample in MiB/s.
func (s Sample) MiBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / (1 << 20) / s.Elapsed.Seconds()
}

// OpsPerSec is the operation rate of the sample.
func (s Sample) OpsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}

// Run runs the load once. The first error of any operation stops every
// worker and is returned.
func (l Load) Run(ctx context.Context, op Op) (Sample, error) {
	if l.Concurrency < 1 {
		l.Concurrency = 1
	}
	if l.Ops <= 0 && l.Duration <= 0 {
		return Sample{}, errors.New("bench: a Load needs Ops or Duration")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &loadRun{l: l, op: op, cancel: cancel, start: make(chan struct{})}
	var wg sync.WaitGroup
	r.ready.Add(l.Concurrency)
	for w := 0; w < l.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(ctx, w)
		}()
	}
	r.ready.Wait()
	r.t0 = time.Now()
	close(r.start)
	wg.Wait()
	s := r.s
	s.Elapsed = time.Since(r.t0)
	if r.first != nil {
		return s, r.first
	}
	if err := ctx.Err(); err != nil && s.Ops == 0 {
		return s, err
	}
	return s, nil
}

// loadRun is one Run of a Load, shared by its workers.
type loadRun struct {
	l      Load
	op     Op
	cancel context.CancelFunc // stops every worker

	seq     atomic.Int64   // next operation number
	counted atomic.Int64   // measured operations claimed so far
	ready   sync.WaitGroup // workers done warming up
	start   chan struct{}  // closed when the clock starts
	t0      time.Time      // when the clock started; set before start is closed

	mu    sync.Mutex // guards first and s
	first error      // the first error of any operation
	s     Sample     // the workers' samples, merged
}

// next is the number of the next operation, warm-up or measured.
func (r *loadRun) next() int { return int(r.seq.Add(1) - 1) }

// fail records err if it is the first and stops every worker.
func (r *loadRun) fail(err error) {
	r.mu.Lock()
	if r.first == nil {
		r.first = err
	}
	r.mu.Unlock()
	r.cancel()
}

// worker is worker w: its warm-up, then, once the clock starts, measured
// operations, merged into the run's sample at the end.
func (r *loadRun) worker(ctx context.Context, w int) {
	warm := r.op
	if r.l.WarmupOp != nil {
		warm = r.l.WarmupOp
	}
	for i := 0; i < r.l.Warmup; i++ {
		if _, err := warm(ctx, w, r.next()); err != nil {
			r.fail(fmt.Errorf("warm-up: %w", err))
			break
		}
	}
	r.ready.Done()
	<-r.start
	lat, bytes := r.measure(ctx, w)
	r.mu.Lock()
	r.s.Ops += len(lat)
	r.s.Bytes += bytes
	r.s.Latency = append(r.s.Latency, lat...)
	r.mu.Unlock()
}

// measure runs worker w's measured operations until the Load's limit,
// an error or the end of ctx, and returns their latencies and bytes.
func (r *loadRun) measure(ctx context.Context, w int) (lat []time.Duration, bytes int64) {
	l := r.l
	for ctx.Err() == nil {
		n := r.counted.Add(1)
		if l.Ops > 0 && n > int64(l.Ops) {
			break
		}
		if l.Duration > 0 && time.Since(r.t0) >= l.Duration && (l.MinOps <= 0 || n > int64(l.MinOps)) {
			break
		}
		begin := time.Now()
		b, err := r.op(ctx, w, r.next())
		if err != nil {
			if ctx.Err() == nil {
				r.fail(err)
			}
			break
		}
		lat = append(lat, time.Since(begin))
		bytes += b
	}
	return lat, bytes
}

// Once measures a single operation as a Sample, for workloads whose unit is
// one expensive call (a fork, a commit, a copy).
func Once(ctx context.Context, bytes int64, fn func(ctx context.Context) error) (Sample, error) {
	begin := time.Now()
	if err := fn(ctx); err != nil {
		return Sample{}, err
	}
	d := time.Since(begin)
	return Sample{Ops: 1, Bytes: bytes, Elapsed: d, Latency: []time.Duration{d}}, nil
}

// Stat is a figure measured over repeated runs: the median and the range.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"runs"`
}

// Spread is half the range relative to the median (0.05 is ±5%); 0 for a
// single run.
func (s Stat) Spread() float64 {
	if s.N < 2 || s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / 2 / math.Abs(s.Median)
}

// StatOf summarises values.
func StatOf(vals []float64) Stat {
	if len(vals) == 0 {
		return Stat{}
	}
	v := slices.Clone(vals)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Stat{Median: m, Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// Summary condenses the samples of repeated runs: throughput and rate per
// run (median and range), and latency percentiles over the operations of all
// runs pooled.
type Summary struct {
	MiBps     Stat          `json:"mib_per_s"`
	OpsPerSec Stat          `json:"ops_per_s"`
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	Ops       int           `json:"ops"`
}

// Summarize condenses samples.
func Summarize(samples []Sample) Summary {
	var mib, ops []float64
	var lat []time.Duration
	total := 0
	for _, s := range samples {
		mib = append(mib, s.MiBps())
		ops = append(ops, s.OpsPerSec())
		lat = append(lat, s.Latency...)
		total += s.Ops
	}
	slices.Sort(lat)
	return Summary{MiBps: StatOf(mib), OpsPerSec: StatOf(ops), P50: percentile(lat, 0.50), P99: percentile(lat, 0.99), Ops: total}
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
