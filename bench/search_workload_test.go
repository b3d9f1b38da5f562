package bench

import (
	"context"
	"strings"
	"testing"
)

// TestSearchWorkloadTiny runs the search workload alone in the tiny
// profile and checks its shape: a build and a latency result, each with
// figures for the gateway and grep, and ratios.
func TestSearchWorkloadTiny(t *testing.T) {
	p, err := ProfileFor("tiny")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Profile: p, Workloads: []string{"search"}, Dir: t.TempDir(),
		Progress: func(f string, a ...any) { t.Logf(f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Fatalf("workload %s failed: %s", f.Workload, f.Error)
	}
	var build, latency int
	for _, r := range rep.Results {
		switch {
		case strings.HasPrefix(r.Case, "index build"):
			build++
		case strings.HasPrefix(r.Case, "search latency"):
			latency++
		}
		for _, row := range r.Rows {
			if row.Skipped != "" || len(row.Metrics) == 0 {
				t.Errorf("%s: %s: no figures (%s)", r.Case, row.Subject, row.Skipped)
			}
			if row.Subject != r.Reference && row.Baseline && row.Ratio <= 0 {
				t.Errorf("%s: %s: no ratio", r.Case, row.Subject)
			}
		}
	}
	if build != 1 || latency != 1 {
		t.Errorf("%d build and %d latency results", build, latency)
	}
	if v := metricOf(rep.Results[1].Rows, subjSearch, "p99"); v <= 0 {
		t.Errorf("no search p99: %v", v)
	}
}
