package bench

import (
	"context"
	"strings"
	"testing"
)

// TestSourceWorkloadTiny runs the source workload alone in the tiny profile
// (TestHarnessTiny runs it among all the others) and checks its shape: an
// attach curve with the listing beside it, and first and second reads
// with figures and ratios for every subject.
func TestSourceWorkloadTiny(t *testing.T) {
	p, err := ProfileFor("tiny")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Profile: p, Workloads: []string{"source"}, Dir: t.TempDir(),
		Progress: func(f string, a ...any) { t.Logf(f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Fatalf("workload %s failed: %s", f.Workload, f.Error)
	}
	sz := sourceSizesFor("tiny")
	var curves, first, second int
	for _, r := range rep.Results {
		switch {
		case r.Curve != nil:
			curves++
			if len(r.Curve.Series) != 2 {
				t.Fatalf("attach curve has %d series", len(r.Curve.Series))
			}
			for _, s := range r.Curve.Series {
				if len(s.Points) != len(sz.attach) {
					t.Errorf("series %q: %d points, want %d", s.Name, len(s.Points), len(sz.attach))
				}
			}
			continue
		case strings.HasPrefix(r.Case, "first read"):
			first++
		case strings.HasPrefix(r.Case, "second read"):
			second++
		}
		for _, row := range r.Rows {
			if row.Skipped != "" || len(row.Metrics) == 0 {
				t.Errorf("%s: %s: no figures (%s)", r.Case, row.Subject, row.Skipped)
			}
			if row.Subject != r.Reference && row.Ratio <= 0 {
				t.Errorf("%s: %s: no ratio", r.Case, row.Subject)
			}
		}
		if strings.HasPrefix(r.Case, "first read") && metricOf(r.Rows, srcFirst, "ttfb p50") <= 0 {
			t.Errorf("%s: no time to first byte", r.Case)
		}
	}
	if curves != 1 || first != len(sz.reads) || second != len(sz.reads) {
		t.Errorf("%d curves, %d first-read and %d second-read results", curves, first, second)
	}
	// How long it took is a measurement, not a check: logged only.
	t.Logf("tiny source workload took %.1f s", rep.Timings[0].Seconds)
}
