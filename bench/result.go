package bench

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Better says which direction of a metric is an improvement.
type Better int

// Directions of a metric.
const (
	Higher Better = iota // throughput, rates
	Lower                // times, bytes, memory
)

// Metric is one figure of a Row. Value is the median over the runs; Spread
// is half their range relative to the median (0 when measured once).
type Metric struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Spread float64 `json:"spread,omitempty"`
	Better Better  `json:"better"` // 0 higher, 1 lower
}

// Row is one subject's figures in a Result: a target, or a baseline
// measured in the same run. The first metric is the primary one, from which
// the ratio to the reference is taken.
type Row struct {
	Subject  string   `json:"subject"`
	Baseline bool     `json:"baseline,omitempty"`
	Metrics  []Metric `json:"metrics,omitempty"`
	// Skipped, when set, says why the subject has no figures here.
	Skipped string `json:"skipped,omitempty"`
	// Note qualifies the figures (what the subject did differently).
	Note string `json:"note,omitempty"`
	// NoRatio marks a row whose work differs from the reference's (fewer
	// parts, say), so no ratio is taken.
	NoRatio bool `json:"no_ratio,omitempty"`
	// Runs is the primary figure of each run, in the order they ran (the
	// JSON report's; a spread shows which run it came from).
	Runs []float64 `json:"runs,omitempty"`
	// Ratio is the reference's primary figure relative to this row's,
	// oriented so that above 1 means the reference is better. Report fills
	// it in; it is 0 when either side has no figure.
	Ratio float64 `json:"ratio,omitempty"`
}

// Primary returns the row's first metric.
func (r Row) Primary() (Metric, bool) {
	if len(r.Metrics) == 0 {
		return Metric{}, false
	}
	return r.Metrics[0], true
}

// Point is one point of a Curve.
type Point struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Spread float64 `json:"spread,omitempty"`
}

// Series is one line of a Curve.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
	// Slope, filled in by Report, is the least-squares slope of log Y over
	// log X: 0 is flat, 1 is linear. Nil with fewer than two points.
	Slope *float64 `json:"slope,omitempty"`
}

// Curve is a scaling curve: how a cost grows with a size.
type Curve struct {
	Name   string   `json:"name"` // file name of the plot, without .png
	Title  string   `json:"title"`
	XLabel string   `json:"x_label"`
	YLabel string   `json:"y_label"`
	Series []Series `json:"series"`
	// Linear draws the curve on linear axes, without slopes or a table of
	// its points: a trace over time (the soak's resident set), not a
	// scaling curve.
	Linear bool `json:"linear,omitempty"`
	// Categories, when set, draws the curve as grouped bars on a log
	// scale, one group per category and one bar per series: a point's X
	// is the index of its category. No slopes are taken.
	Categories []string `json:"categories,omitempty"`
}

// Result is what a workload reports for one case (a size, a concurrency):
// one row per subject, or a curve.
type Result struct {
	Workload string `json:"workload"`
	Case     string `json:"case"`
	// Reference names the subject ratios are taken against; empty means
	// the run's reference target ("nas").
	Reference string   `json:"reference,omitempty"`
	Rows      []Row    `json:"rows,omitempty"`
	Curve     *Curve   `json:"curve,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// Subject is one side of a comparison: Measure runs it once and returns the
// sample.
type Subject struct {
	Name     string
	Baseline bool
	Note     string
	// Skip, when set, records the subject as skipped for this reason.
	Skip    string
	Measure func(ctx context.Context, rep int) (Sample, error)
}

// Figures says how Compare turns a Summary into metrics.
type Figures int

// Metric sets for Compare.
const (
	// ByThroughput: MiB/s first, then ops/s, p50, p99.
	ByThroughput Figures = iota
	// ByRate: ops/s first, then MiB/s (when bytes moved), p50, p99.
	ByRate
	// ByTime: time per operation (the p50 over all runs' operations)
	// first; for one expensive operation per run.
	ByTime
)

// Compare measures every subject reps times, interleaved (A B C, A B C, ...)
// so that drift in background load spreads over all subjects instead of
// favouring whichever ran last, and returns one Row per subject. An error of
// one subject ends that subject's runs and is recorded in its row; Compare
// itself fails only when ctx ends.
func Compare(ctx context.Context, reps int, subjects []Subject, f Figures) ([]Row, error) {
	reps = max(reps, 1)
	samples := make([][]Sample, len(subjects))
	failed := make([]error, len(subjects))
	for rep := 0; rep < reps; rep++ {
		for i, s := range subjects {
			if s.Skip != "" || failed[i] != nil {
				continue
			}
			smp, err := s.Measure(ctx, rep)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				failed[i] = err
				continue
			}
			samples[i] = append(samples[i], smp)
		}
	}
	rows := make([]Row, len(subjects))
	for i, s := range subjects {
		rows[i] = Row{Subject: s.Name, Baseline: s.Baseline, Note: s.Note, Skipped: s.Skip}
		if failed[i] != nil {
			rows[i].Skipped = "failed: " + failed[i].Error()
			continue
		}
		if s.Skip != "" {
			continue
		}
		rows[i].Metrics = SummaryMetrics(Summarize(samples[i]), f)
		rows[i].Runs = runFigures(samples[i], rows[i].Metrics[0].Name)
	}
	return rows, nil
}

// runFigures is the figure named primary ("throughput", "rate" or
// "time", as SummaryMetrics names them) of each sample.
func runFigures(smps []Sample, primary string) []float64 {
	out := make([]float64, len(smps))
	for i, smp := range smps {
		switch r := smp.OpsPerSec(); {
		case primary == "throughput":
			out[i] = smp.MiBps()
		case primary == "time" && r > 0:
			out[i] = 1000 / r
		case primary == "rate":
			out[i] = r
		}
	}
	return out
}

// SummaryMetrics turns a Summary into the metrics of a Row.
func SummaryMetrics(s Summary, f Figures) []Metric {
	mib := Metric{Name: "throughput", Unit: "MiB/s", Value: s.MiBps.Median, Spread: s.MiBps.Spread()}
	ops := Metric{Name: "rate", Unit: "ops/s", Value: s.OpsPerSec.Median, Spread: s.OpsPerSec.Spread()}
	p50 := Metric{Name: "p50", Unit: "ms", Value: ms(s.P50), Better: Lower}
	p99 := Metric{Name: "p99", Unit: "ms", Value: ms(s.P99), Better: Lower}
	switch f {
	case ByRate:
		if s.MiBps.Median > 0 {
			return []Metric{ops, mib, p50, p99}
		}
		return []Metric{ops, p50, p99}
	case ByTime:
		// One operation per run: the time of each run is the latency.
		return []Metric{{Name: "time", Unit: "ms", Value: ms(s.P50), Spread: timeSpread(s), Better: Lower}}
	}
	return []Metric{mib, ops, p50, p99}
}

// timeSpread is the spread of per-run times for ByTime summaries (the rate
// spread is the same relative range, inverted).
func timeSpread(s Summary) float64 {
	if s.OpsPerSec.N < 2 || s.OpsPerSec.Min == 0 {
		return 0
	}
	// times are 1/rate: half the range relative to the median time.
	tMin, tMax, tMed := 1/s.OpsPerSec.Max, 1/s.OpsPerSec.Min, 1/s.OpsPerSec.Median
	return (tMax - tMin) / 2 / tMed
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratio orients ref against row so that above 1 means ref is better.
func ratio(ref, row Metric) float64 {
	if ref.Value <= 0 || row.Value <= 0 || ref.Unit != row.Unit {
		return 0
	}
	if ref.Better == Lower {
		return row.Value / ref.Value
	}
	return ref.Value / row.Value
}

// slope fits log y = a + b log x and returns b.
func slope(pts []Point) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		if p.X <= 0 || p.Y <= 0 {
			continue
		}
		x, y := math.Log(p.X), math.Log(p.Y)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / d
}

// fill computes ratios against the reference subject and curve slopes.
func (r *Result) fill(reference string) {
	if r.Reference != "" {
		reference = r.Reference
	} else {
		r.Reference = reference
	}
	var ref *Metric
	for _, row := range r.Rows {
		if row.Subject == reference {
			if m, ok := row.Primary(); ok {
				ref = &m
			}
		}
	}
	for i := range r.Rows {
		if m, ok := r.Rows[i].Primary(); ok && ref != nil && r.Rows[i].Subject != reference && !r.Rows[i].NoRatio {
			r.Rows[i].Ratio = ratio(*ref, m)
		}
	}
	if r.Curve != nil && !r.Curve.Linear && r.Curve.Categories == nil {
		for i := range r.Curve.Series {
			if b := slope(r.Curve.Series[i].Points); !math.IsNaN(b) {
				r.Curve.Series[i].Slope = &b
			}
		}
	}
}

// caseName formats a size and a concurrency the way reports name cases.
func caseName(size int64, conc int) string {
	return fmt.Sprintf("%s, %d client%s", FormatSize(size), conc, plural(conc))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// FormatSize prints a byte count in binary units (4 KiB, 64 MiB, 1 GiB).
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}
