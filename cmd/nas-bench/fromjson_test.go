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

// FuzzFromJSON feeds decodeReport any bytes and draws and writes what it
// accepts: nothing a report file holds may crash the redraw.
func FuzzFromJSON(f *testing.F) {
	f.Add([]byte(`{"mode":"quick","results":[{"workload":"fork","case":"c","curve":{"name":"x","series":[{"name":"nas","points":[{"x":10,"y":0.3},{"x":1000,"y":0.31}]}]}}]}`))
	f.Add([]byte(`{"results":[{"workload":"soak","case":"c","rows":[{"subject":"nas","metrics":[{"name":"rate","value":-1}],"runs":[0]}],"curve":{"name":"y","linear":true,"categories":["a"],"series":[{"name":"n","points":[{"x":0,"y":0}]}]}}]}`))
	f.Add([]byte(`{"results":[null]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := decodeReport(b)
		if err != nil {
			return
		}
		if _, err := rep.WritePlots(filepath.Join(dir, "plots")); err != nil {
			return
		}
		var md bytes.Buffer
		_ = rep.WriteMarkdown(&md, "plots")
	})
}
