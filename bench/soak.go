package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The soak workload: 8 clients keep a server busy for Profile.SoakDuration
// (--soak) with a mix of PUTs and GETs of 4 KiB objects, then with rounds
// of a 64 MiB (Profile.SoakLarge) multipart PUT, its GET and its DELETE,
// while the server's
// resident set is sampled every second. It answers "is memory bounded
// whatever the load": start, peak and end resident set, how much the
// second half's peak grew over the first half's, and the ops/s the server
// sustained meanwhile. Each server runs in a process of its own (a spawned
// child for nas and gofakes3, an endpoint with --target-pid), one after
// the other in the order of the targets.

// soakClients is the number of concurrent clients of both phases.
const soakClients = 8

// soakPartSize is the part size of the multipart phase (64 MiB objects
// in 8 parts, the part size of the AWS CLI).
const soakPartSize = 8 << 20

// MemPoint is one sample of a process's memory: T after the first.
type MemPoint struct {
	T    time.Duration
	RSS  int64 // VmRSS in bytes
	Anon int64 // RssAnon in bytes: private memory, not mapped files
}

// MemTrace samples a process's memory at a fixed interval until Stop.
type MemTrace struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex // guards pts
	pts  []MemPoint
}

// TraceMemory starts sampling pid every interval, the first sample now.
func TraceMemory(pid int, interval time.Duration) *MemTrace {
	t := &MemTrace{stop: make(chan struct{})}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		start := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			rss, anon := memStatus(pid)
			t.mu.Lock()
			t.pts = append(t.pts, MemPoint{T: time.Since(start), RSS: rss, Anon: anon})
			t.mu.Unlock()
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// Stop ends sampling and returns the samples.
func (t *MemTrace) Stop() []MemPoint {
	close(t.stop)
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pts
}

// memStatus returns VmRSS and RssAnon of pid in bytes (0 if unknown).
func memStatus(pid int) (rss, anon int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	kb := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return n << 10
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	return rss, anon
}

// MemSummary sums up a memory trace.
type MemSummary struct {
	Start, Peak, End int64 // VmRSS at the first sample, its highest, at the last
	PeakAnon         int64 // highest RssAnon
	// Growth is the peak VmRSS of the trace's second half over that of its
	// first half, minus one: 0 is flat, 0.5 grew by half. A bounded
	// server reaches its plateau in the first half.
	Growth float64
}

// FlatGrowth is the Growth up to which a trace counts as flat.
const FlatGrowth = 0.10

// Flat reports whether the trace's memory stayed flat (Growth within
// FlatGrowth).
func (s MemSummary) Flat() bool { return s.Growth <= FlatGrowth }

// SummarizeMemory sums up pts (in time order); an empty trace is zero.
func SummarizeMemory(pts []MemPoint) MemSummary {
	if len(pts) == 0 {
		return MemSummary{}
	}
	s := MemSummary{Start: pts[0].RSS, End: pts[len(pts)-1].RSS}
	half := pts[len(pts)-1].T / 2
	var first, second int64
	for _, p := range pts {
		s.Peak = max(s.Peak, p.RSS)
		s.PeakAnon = max(s.PeakAnon, p.Anon)
		if p.T <= half {
			first = max(first, p.RSS)
		} else {
			second = max(second, p.RSS)
		}
	}
	if first > 0 && second > 0 {
		s.Growth = float64(second)/float64(first) - 1
	}
	return s
}

// soakPhase is one load of the soak workload.
type soakPhase struct {
	name, title string
	// op is the operation of a run against bucket; the bytes it reports
	// count toward MiB/s.
	op Op
}

// soakPhases are the soak's loads: 4 KiB objects (unless
// Profile.SoakLargeOnly), then objects of large bytes (Profile.SoakLarge:
// 64 MiB, less in the tiny mode of tests; 0 leaves that phase out).
func soakPhases(cl *Client, bucket string, p Profile) []soakPhase {
	var phases []soakPhase
	if !p.SoakLargeOnly || p.SoakLarge <= 0 {
		phases = append(phases, soakPhase{name: "soak-4k", title: "4 KiB PUT/GET, 8 clients", op: smallSoakOp(cl, bucket)})
	}
	large := p.SoakLarge
	if large <= 0 {
		return phases
	}
	return append(phases, soakPhase{name: fmt.Sprintf("soak-%dm", large>>20), op: largeSoakOp(cl, bucket, large),
		title: FormatSize(large) + " multipart PUT, GET and DELETE, 8 clients"})
}

// smallSoakOp alternates, per client, a PUT of a new 4 KiB object and a
// GET of one of the objects the client put before, chosen at random.
func smallSoakOp(cl *Client, bucket string) Op {
	const size = 4 << 10
	keys := make([][]string, soakClients) // keys[w] is written by worker w only
	return func(ctx context.Context, w, seq int) (int64, error) {
		if len(keys[w]) == 0 || seq%2 == 0 {
			k := fmt.Sprintf("small/%d/%d", w, seq)
			if err := cl.Put(ctx, bucket, k, DefaultContent().Reader(uint64(seq), size), size); err != nil {
				return 0, err
			}
			keys[w] = append(keys[w], k)
			return size, nil
		}
		return cl.Get(ctx, bucket, keys[w][rand.IntN(len(keys[w]))])
	}
}

// largeSoakOp is one round: a multipart PUT of a new object of size bytes
// (new content, so nothing deduplicates) in parts of soakPartSize, its GET
// and its DELETE, so a long soak does not fill the disk of a server that
// frees space on delete.
func largeSoakOp(cl *Client, bucket string, size int64) Op {
	parts := int(max(size/soakPartSize, 1))
	return func(ctx context.Context, w, seq int) (int64, error) {
		k := fmt.Sprintf("large/%d/%d", w, seq)
		id, err := cl.CreateUpload(ctx, bucket, k)
		if err != nil {
			return 0, err
		}
		etags := make([]string, parts)
		for i := range parts {
			n := min(soakPartSize, size-int64(i)*soakPartSize)
			body := DefaultContent().Section(uint64(seq), int64(i)*soakPartSize, n)
			if etags[i], err = cl.UploadPart(ctx, bucket, k, id, i+1, body, n); err != nil {
				return 0, err
			}
		}
		if err := cl.CompleteUpload(ctx, bucket, k, id, etags); err != nil {
			return 0, err
		}
		n, err := cl.Get(ctx, bucket, k)
		if err == nil && n != size {
			err = fmt.Errorf("GET %s: %d bytes, want %d", k, n, size)
		}
		if err != nil {
			return 0, err
		}
		return 2 * size, cl.Delete(ctx, bucket, k)
	}
}

func runSoak(ctx context.Context, e *Env) ([]*Result, error) {
	d := e.Profile.SoakDuration
	var out []*Result
	for i, ph := range soakPhases(nil, "", e.Profile) {
		res := &Result{Case: ph.title, Curve: &Curve{Name: ph.name, Title: "Resident set during the soak: " + ph.title,
			XLabel: "seconds", YLabel: "VmRSS and RssAnon (MiB)", Linear: true}}
		for _, s := range e.Specs {
			if why := soakSkip(e, s); why != "" {
				res.Rows = append(res.Rows, Row{Subject: s.Name, Skipped: why})
				continue
			}
			e.Logf("  soak: %s, %s for %s", s.Name, ph.title, d)
			row, pts, err := soakTarget(ctx, e, s, i, d)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				row = Row{Subject: s.Name, Skipped: "failed: " + err.Error()}
			}
			res.Rows = append(res.Rows, row)
			if len(pts) > 0 {
				res.Curve.Series = append(res.Curve.Series, memSeries(s.Name, pts, false), memSeries(s.Name+" RssAnon", pts, true))
			}
		}
		res.Notes = append(soakNotes(res.Rows, e.Reference),
			fmt.Sprintf("VmRSS of each server process, sampled every second for %s under load; growth is the second half's peak over the first half's (flat: at most %.0f%%); peak anon is RssAnon, the part that is not mapped files. One run; the servers ran one after the other in the order of the rows.", d, 100*FlatGrowth))
		out = append(out, res)
	}
	return out, nil
}

// soakSkip says why s cannot be soaked here ("" if it can): its process
// must be known to sample it.
func soakSkip(e *Env, s TargetSpec) string {
	switch {
	case s.Kind == KindEndpoint && s.PID <= 0:
		return "give the endpoint's server process (--target-pid NAME=PID) to sample its resident set"
	case s.Kind != KindEndpoint && e.Spawn == nil:
		return "no way to start a server process here (Env.Spawn is unset)"
	}
	return ""
}

// memSeries is a trace's VmRSS, or its RssAnon, as a curve's series in
// seconds and MiB.
func memSeries(name string, pts []MemPoint, anon bool) Series {
	s := Series{Name: name}
	for _, p := range pts {
		v := p.RSS
		if anon {
			v = p.Anon
		}
		s.Points = append(s.Points, Point{X: p.T.Seconds(), Y: float64(v) / (1 << 20)})
	}
	return s
}

// soakNotes states each target's ops/s against the reference's.
func soakNotes(rows []Row, reference string) []string {
	rate := func(r Row) float64 {
		m, _ := metric(r.Metrics, "rate")
		return m.Value
	}
	var ref float64
	for _, r := range rows {
		if r.Subject == reference {
			ref = rate(r)
		}
	}
	var notes []string
	for _, r := range rows {
		if r.Subject != reference && ref > 0 && rate(r) > 0 {
			notes = append(notes, fmt.Sprintf("Throughput: %s / %s = %.2f (ops/s).", reference, r.Subject, ref/rate(r)))
		}
	}
	return notes
}

// soakTarget runs phase i against the server of s, in a process of its
// own, and returns its row and memory trace.
func soakTarget(ctx context.Context, e *Env, s TargetSpec, i int, d time.Duration) (Row, []MemPoint, error) {
	name := soakPhases(nil, "", e.Profile)[i].name
	cl, bucket, pid, done, err := soakServer(ctx, e, s, name)
	if err != nil {
		return Row{}, nil, err
	}
	defer done()
	ph := soakPhases(cl, bucket, e.Profile)[i]
	tr := TraceMemory(pid, time.Second)
	smp, err := Load{Concurrency: soakClients, Duration: d}.Run(ctx, ph.op)
	pts := tr.Stop()
	if err != nil {
		return Row{}, pts, err
	}
	m := SummarizeMemory(pts)
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	note := "resident memory flat"
	if !m.Flat() {
		note = fmt.Sprintf("resident memory still growing (+%.0f%%)", 100*m.Growth)
	}
	return Row{Subject: s.Name, Note: note, Metrics: []Metric{
		{Name: "peak RSS", Unit: "MiB", Value: mib(m.Peak), Better: Lower},
		{Name: "start", Unit: "MiB", Value: mib(m.Start), Better: Lower},
		{Name: "end", Unit: "MiB", Value: mib(m.End), Better: Lower},
		{Name: "growth", Unit: "%", Value: 100 * m.Growth, Better: Lower},
		{Name: "peak anon", Unit: "MiB", Value: mib(m.PeakAnon), Better: Lower},
		{Name: "rate", Unit: "ops/s", Value: smp.OpsPerSec()},
		{Name: "throughput", Unit: "MiB/s", Value: smp.MiBps()},
	}}, pts, nil
}

// soakServer readies the server of s for a soak: a fresh child process
// (nas, gofakes3) or the endpoint whose process --target-pid named. It
// returns a client, a bucket, the process to sample and how to clean up.
func soakServer(ctx context.Context, e *Env, s TargetSpec, name string) (*Client, string, int, func(), error) {
	if s.Kind == KindEndpoint {
		t, err := e.StartTarget(ctx, s)
		if err != nil {
			return nil, "", 0, nil, err
		}
		bucket, err := t.Bucket(ctx, name)
		if err != nil {
			t.Close()
			return nil, "", 0, nil, err
		}
		return t.Client, bucket, s.PID, func() { _ = t.Close() }, nil
	}
	dir, err := e.TempDir(name + "-" + s.Name)
	if err != nil {
		return nil, "", 0, nil, err
	}
	child, err := StartChild(ctx, e.Spawn, s.Kind, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", 0, nil, err
	}
	cl := NewClient(child.Endpoint, "us-east-1", BenchCredentials())
	done := func() {
		cl.Close()
		child.Stop()
		os.RemoveAll(dir)
	}
	if err := cl.CreateBucket(ctx, name); err != nil {
		done()
		return nil, "", 0, nil, err
	}
	return cl, name, child.Cmd.Process.Pid, done, nil
}
