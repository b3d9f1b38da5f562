package bench

import "testing"

// TestSourcePrefetchWorkloadTiny runs the source-prefetch workload in the
// tiny profile and checks its shape: both subjects have figures and the
// direct GETs a ratio.
func TestSourcePrefetchWorkloadTiny(t *testing.T) {
	rep := runTiny(t, "source-prefetch")
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
