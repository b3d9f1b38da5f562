package bench

import (
	"math"
	"testing"
	"time"
)

func TestSummarizeMemory(t *testing.T) {
	mib := int64(1 << 20)
	trace := func(rss ...int64) []MemPoint {
		pts := make([]MemPoint, len(rss))
		for i, r := range rss {
			pts[i] = MemPoint{T: time.Duration(i) * time.Second, RSS: r * mib, Anon: r * mib / 2}
		}
		return pts
	}
	for _, tc := range []struct {
		name             string
		pts              []MemPoint
		start, peak, end int64
		growth           float64
		flat             bool
	}{
		{"empty", nil, 0, 0, 0, 0, true},
		{"plateau in the first half", trace(40, 300, 310, 305, 300, 308, 309), 40, 310, 309, 309.0/310 - 1, true},
		{"still growing", trace(40, 100, 200, 300, 400, 500, 600), 40, 600, 600, 600.0/300 - 1, false},
		{"a spike late in the run", trace(40, 300, 300, 300, 300, 360, 300), 40, 360, 300, 0.2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SummarizeMemory(tc.pts)
			if s.Start != tc.start*mib || s.Peak != tc.peak*mib || s.End != tc.end*mib {
				t.Errorf("start/peak/end %d/%d/%d MiB, want %d/%d/%d", s.Start/mib, s.Peak/mib, s.End/mib, tc.start, tc.peak, tc.end)
			}
			if s.PeakAnon != tc.peak*mib/2 {
				t.Errorf("peak anon %d, want %d", s.PeakAnon, tc.peak*mib/2)
			}
			if math.Abs(s.Growth-tc.growth) > 1e-9 {
				t.Errorf("growth %.4f, want %.4f", s.Growth, tc.growth)
			}
			if s.Flat() != tc.flat {
				t.Errorf("Flat() = %v, want %v", s.Flat(), tc.flat)
			}
		})
	}
}

func TestSoakNotes(t *testing.T) {
	rows := []Row{
		{Subject: "nas", Metrics: []Metric{{Name: "peak RSS", Value: 300}, {Name: "rate", Value: 2000}}},
		{Subject: "minio", Metrics: []Metric{{Name: "peak RSS", Value: 280}, {Name: "rate", Value: 1000}}},
		{Subject: "down", Skipped: "failed"},
	}
	notes := soakNotes(rows, "nas")
	if len(notes) != 1 || notes[0] != "Throughput: nas / minio = 2.00 (ops/s)." {
		t.Fatalf("notes %q", notes)
	}
}

func TestDrawTrace(t *testing.T) {
	rep := &Report{Results: []*Result{{Workload: "soak", Curve: &Curve{Name: "soak-4k", Title: "t", XLabel: "seconds", YLabel: "MiB", Linear: true,
		Series: []Series{{Name: "nas", Points: []Point{{X: 0, Y: 40}, {X: 1, Y: 300}}}}}}}}
	files, err := rep.WritePlots(t.TempDir())
	if err != nil || len(files) != 1 {
		t.Fatalf("WritePlots: %v %v", files, err)
	}
}

func TestSoakPhases(t *testing.T) {
	if got := soakPhases(nil, "", Profile{SoakLarge: 64 << 20}); len(got) != 2 || got[1].name != "soak-64m" {
		t.Fatalf("64 MiB: phases %+v", got)
	}
	if got := soakPhases(nil, "", Profile{}); len(got) != 1 || got[0].name != "soak-4k" {
		t.Fatalf("no large size: phases %+v, want the 4 KiB phase alone", got)
	}
	if got := soakPhases(nil, "", Profile{SoakLarge: 64 << 20, SoakLargeOnly: true}); len(got) != 1 || got[0].name != "soak-64m" {
		t.Fatalf("large only: phases %+v, want the 64 MiB phase alone", got)
	}
	if got := soakPhases(nil, "", Profile{SoakLargeOnly: true}); len(got) != 1 || got[0].name != "soak-4k" {
		t.Fatalf("large only without a large size: phases %+v, want the 4 KiB phase (a soak of nothing measures nothing)", got)
	}
}
