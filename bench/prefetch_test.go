package bench

import (
	"context"
	"testing"
)

// TestSourcePrefetchWorkloadTiny runs the source-prefetch workload in the
// tiny profile and checks its shape: both subjects have figures and the
// direct GETs a ratio.
func TestSourcePrefetchWorkloadTiny(t *testing.T) {
	p, err := ProfileFor("tiny")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Profile: p, Workloads: []string{"source-prefetch"}, Dir: t.TempDir(),
		Progress: func(f string, a ...any) { t.Logf(f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Fatalf("workload %s failed: %s", f.Workload, f.Error)
	}
	if len(rep.Results) != 1 || len(rep.Results[0].Rows) != 2 {
		t.Fatalf("results: %+v", rep.Results)
	}
	for _, row := range rep.Results[0].Rows {
		if row.Skipped != "" || len(row.Metrics) == 0 {
			t.Errorf("%s: no figures (%s)", row.Subject, row.Skipped)
		}
		if row.Subject != pfPrefetch && row.Ratio <= 0 {
			t.Errorf("%s: no ratio", row.Subject)
		}
	}
}
