package bench

import (
	"context"
	"os/exec"
	"testing"
)

// TestGitAttachWorkloadTiny runs the git-attach workload in the tiny
// profile and checks its shape: both subjects have figures and the
// attach a ratio against the clone.
func TestGitAttachWorkloadTiny(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	rep := runTiny(t, "git-attach")
	if len(rep.Results) != 1 || len(rep.Results[0].Rows) != 2 {
		t.Fatalf("results: %+v", rep.Results)
	}
	for _, row := range rep.Results[0].Rows {
		if row.Skipped != "" || len(row.Metrics) == 0 {
			t.Errorf("%s: no figures (%s)", row.Subject, row.Skipped)
		}
		if row.Subject != gitAttach && row.Ratio <= 0 {
			t.Errorf("%s: no ratio", row.Subject)
		}
	}
}

// runTiny runs one workload alone in the tiny profile and fails the test
// when it failed.
func runTiny(t *testing.T, workload string) *Report {
	t.Helper()
	p, err := ProfileFor("tiny")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Profile: p, Workloads: []string{workload}, Dir: t.TempDir(),
		Progress: func(f string, a ...any) { t.Logf(f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Fatalf("workload %s failed: %s", f.Workload, f.Error)
	}
	return rep
}
