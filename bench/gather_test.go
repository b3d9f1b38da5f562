package bench

import (
	"context"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func rowsOf(fig map[string]float64, unit string) []Row {
	var rows []Row
	for _, name := range []string{"nas", "minio", "files"} {
		if v, ok := fig[name]; ok {
			rows = append(rows, Row{Subject: name, Metrics: []Metric{{Name: "throughput", Unit: unit, Value: v}}})
		}
	}
	return append(rows, Row{Subject: "down", Skipped: "failed"})
}

func TestClientCurves(t *testing.T) {
	cases := []caseRows{
		{size: 4 << 10, conc: 8, rows: rowsOf(map[string]float64{"nas": 800, "minio": 400}, "ops/s")},
		{size: 4 << 10, conc: 1, rows: rowsOf(map[string]float64{"nas": 100, "minio": 100}, "ops/s")},
		{size: 64 << 20, conc: 1, rows: rowsOf(map[string]float64{"nas": 300}, "MiB/s")}, // one concurrency: no curve
	}
	got := clientCurves("put", "PUT", cases)
	if len(got) != 1 {
		t.Fatalf("%d curves, want one (the 64 MiB size has one number of clients)", len(got))
	}
	c := got[0].Curve
	if c.Name != "put-4KiB-clients" || c.YLabel != "ops/s" || c.Title != "PUT 4 KiB: ops/s against clients" {
		t.Fatalf("curve %q %q %q", c.Name, c.YLabel, c.Title)
	}
	if len(c.Series) != 2 || c.Series[0].Name != "nas" || c.Series[1].Name != "minio" {
		t.Fatalf("series %+v, want nas and minio (the skipped row left out)", c.Series)
	}
	if pts := c.Series[0].Points; len(pts) != 2 || pts[0] != (Point{X: 1, Y: 100}) || pts[1] != (Point{X: 8, Y: 800}) {
		t.Fatalf("nas points %+v, want them in order of clients", pts)
	}
	rep := &Report{Results: []*Result{{Workload: "put", Case: got[0].Case, Curve: c}}}
	got[0].fill("nas")
	if s := c.Series[0].Slope; s == nil || *s < 0.99 || *s > 1.01 {
		t.Fatalf("nas slope %v, want 1 (eight times the rate at eight clients)", s)
	}
	drawn(t, rep, 1)
}

func TestPhaseBars(t *testing.T) {
	results := []*Result{
		{Rows: rowsOf(map[string]float64{"nas": 600, "minio": 1100, "files": 9000}, "files/s")},
		{Rows: rowsOf(map[string]float64{"nas": 20000, "minio": 17000}, "files/s")},
	}
	res := phaseBars("mount-small", "small files", []string{"create", "stat"}, results)
	c := res.Curve
	if c.YLabel != "files/s" || len(c.Series) != 3 {
		t.Fatalf("curve %+v", c)
	}
	if pts := c.Series[2].Points; len(pts) != 1 || pts[0] != (Point{X: 0, Y: 9000}) {
		t.Fatalf("files: %+v, want the create bar alone", pts)
	}
	rep := &Report{Results: []*Result{res}}
	res.fill("nas")
	if c.Series[0].Slope != nil {
		t.Fatal("bars got a slope")
	}
	var b strings.Builder
	writeCurve(&b, c, "")
	want := "| files/s | create | stat |\n| --- | ---: | ---: |\n| nas | 600 | 20,000 |\n| minio | 1,100 | 17,000 |\n| files | 9,000 | |\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	drawn(t, rep, 1)
}

// drawn draws rep's plots and checks that n PNG files came out.
func drawn(t *testing.T, rep *Report, n int) {
	t.Helper()
	files, err := rep.WritePlots(t.TempDir())
	if err != nil || len(files) != n {
		t.Fatalf("WritePlots: %v %v", files, err)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func TestCompareKeepsEachRun(t *testing.T) {
	rates := []int{100, 300, 200} // ops in a second, run by run
	subj := Subject{Name: "nas", Measure: func(_ context.Context, rep int) (Sample, error) {
		return Sample{Ops: rates[rep], Bytes: int64(rates[rep]) << 20, Elapsed: time.Second, Latency: []time.Duration{time.Millisecond}}, nil
	}}
	for _, tc := range []struct {
		f    Figures
		want []float64
	}{
		{ByThroughput, []float64{100, 300, 200}},
		{ByRate, []float64{100, 300, 200}},
		{ByTime, []float64{10, 1000.0 / 300, 5}},
	} {
		rows, err := Compare(context.Background(), len(rates), []Subject{subj}, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		got := rows[0].Runs
		if len(got) != len(tc.want) {
			t.Fatalf("figures %d: runs %v, want %v", tc.f, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Fatalf("figures %d: runs %v, want %v (in the order they ran)", tc.f, got, tc.want)
			}
		}
	}
}
