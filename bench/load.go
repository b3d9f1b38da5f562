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
	var (
		seq     atomic.Int64 // next operation number
		counted atomic.Int64 // measured operations claimed so far
		mu      sync.Mutex   // guards firstErr and the merged sample
		first   error
		s       Sample
		wg      sync.WaitGroup
		ready   sync.WaitGroup
		start   = make(chan struct{})
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	var t0 time.Time
	ready.Add(l.Concurrency)
	for w := 0; w < l.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warm := op
			if l.WarmupOp != nil {
				warm = l.WarmupOp
			}
			for i := 0; i < l.Warmup; i++ {
				if _, err := warm(ctx, w, int(seq.Add(1)-1)); err != nil {
					fail(fmt.Errorf("warm-up: %w", err))
					break
				}
			}
			ready.Done()
			<-start
			var lat []time.Duration
			var bytes int64
			for ctx.Err() == nil {
				n := counted.Add(1)
				if l.Ops > 0 && n > int64(l.Ops) {
					break
				}
				if l.Duration > 0 && time.Since(t0) >= l.Duration && (l.MinOps <= 0 || n > int64(l.MinOps)) {
					break
				}
				begin := time.Now()
				b, err := op(ctx, w, int(seq.Add(1)-1))
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					break
				}
				lat = append(lat, time.Since(begin))
				bytes += b
			}
			mu.Lock()
			s.Ops += len(lat)
			s.Bytes += bytes
			s.Latency = append(s.Latency, lat...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	t0 = time.Now()
	close(start)
	wg.Wait()
	s.Elapsed = time.Since(t0)
	if first != nil {
		return s, first
	}
	if err := ctx.Err(); err != nil && s.Ops == 0 {
		return s, err
	}
	return s, nil
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
