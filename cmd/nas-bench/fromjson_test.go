package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/bench"
)

// TestFromJSON redraws a saved report's plot and rewrites its Markdown
// with the plot linked relative to the new report, without running
// anything; a file that is not a report is a usage error.
func TestFromJSON(t *testing.T) {
	dir := t.TempDir()
	rep := &bench.Report{Mode: "quick", Reference: "nas", Results: []*bench.Result{{
		Workload: "fork", Case: "fork against size",
		Curve: &bench.Curve{Name: "fork-test", Title: "Fork time", XLabel: "objects", YLabel: "ms",
			Series: []bench.Series{{Name: "nas", Points: []bench.Point{{X: 10, Y: 0.3}, {X: 1000, Y: 0.31}}}}},
	}}}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "run.json")
	if err := os.WriteFile(in, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results", "run.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	plots := filepath.Join(dir, "plots")
	if got := run([]string{"--from-json", in, "--out", out, "--plots", plots}); got != exitOK {
		t.Fatalf("exit %d", got)
	}
	if _, err := os.Stat(filepath.Join(plots, "fork-test.png")); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "](../plots/fork-test.png)") {
		t.Errorf("the report does not link its plot relative to itself:\n%s", md)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("# a Markdown report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run([]string{"--from-json", bad}); got != exitUsage {
		t.Errorf("a file that is not a report: exit %d, want %d", got, exitUsage)
	}
	if got := run([]string{"--from-json", filepath.Join(dir, "missing.json")}); got != exitFailure {
		t.Errorf("a missing file: exit %d, want %d", got, exitFailure)
	}
}
