package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Report is the outcome of a Run.
type Report struct {
	Mode      string            `json:"mode"`
	Command   string            `json:"command,omitempty"`
	Reference string            `json:"reference"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Machine   Machine           `json:"machine"`
	LoadAfter string            `json:"load_after,omitempty"`
	Targets   []ReportTarget    `json:"targets"`
	Results   []*Result         `json:"results"`
	Failures  []WorkloadFailure `json:"failures,omitempty"`
	Timings   []WorkloadTiming  `json:"timings"`
}

// ReportTarget is a target as the report names it.
type ReportTarget struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	URL  string `json:"url,omitempty"`
}

// WorkloadFailure is a workload that ended with an error.
type WorkloadFailure struct {
	Workload string `json:"workload"`
	Error    string `json:"error"`
}

// WorkloadTiming is how long a workload took.
type WorkloadTiming struct {
	Workload string  `json:"workload"`
	Seconds  float64 `json:"seconds"`
}

// Machine describes where a report was measured.
type Machine struct {
	OS        string `json:"os"`
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryMiB int64  `json:"memory_mib"`
	Disk      string `json:"disk"` // device and file system of the scratch directory
	Go        string `json:"go"`
	Load      string `json:"load_before"` // /proc/loadavg when the run started
}

// DescribeMachine describes this machine and the file system holding dir.
func DescribeMachine(dir string) Machine {
	m := Machine{OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU(), Go: runtime.Version(), Load: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.MemoryMiB = kb >> 10
			}
		}
	}
	m.Disk = describeDisk(dir)
	return m
}

// describeDisk finds the mount holding dir in /proc/self/mounts.
func describeDisk(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, desc := -1, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		mp := fs[1]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > best {
			best, desc = len(mp), fmt.Sprintf("%s (%s, mounted on %s)", fs[0], fs[2], mp)
		}
	}
	var st unix.Statfs_t
	if unix.Statfs(abs, &st) == nil {
		desc += fmt.Sprintf(", %d GiB free", int64(st.Bavail)*int64(st.Bsize)>>30)
	}
	return desc
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes the report as Markdown: the machine, then one table
// per result. plotDir, when not empty, is where the curves' PNG files are,
// relative to the Markdown file.
func (r *Report) WriteMarkdown(w io.Writer, plotDir string) error {
	b := &strings.Builder{}
	m := r.Machine
	fmt.Fprintf(b, "Mode `%s`, %s, %.0f s.\n", r.Mode, r.Started.Format("2006-01-02 15:04 UTC"), r.Seconds)
	if r.Command != "" {
		fmt.Fprintf(b, "\n```\n%s\n```\n", r.Command)
	}
	fmt.Fprintf(b, "\nMachine: %d cores (%s), %d MiB RAM, %s, disk %s; %s. Load average %s before, %s after.\n",
		m.Cores, m.CPU, m.MemoryMiB, m.OS, m.Disk, m.Go, m.Load, r.LoadAfter)
	fmt.Fprintf(b, "\nTargets:")
	for i, t := range r.Targets {
		if i > 0 {
			b.WriteString(",")
		}
		if t.URL != "" {
			fmt.Fprintf(b, " `%s` (%s %s)", t.Name, t.Kind, t.URL)
		} else {
			fmt.Fprintf(b, " `%s` (%s, in this process)", t.Name, t.Kind)
		}
	}
	fmt.Fprintf(b, ". Ratio = %s's figure against the row's, oriented so that above 1 means %s is better (faster, or fewer bytes, less memory, less time); ± is half the range over the runs relative to the median.\n", r.Reference, r.Reference)
	last := ""
	for _, res := range r.Results {
		if res.Workload != last {
			fmt.Fprintf(b, "\n### %s\n", res.Workload)
			last = res.Workload
		}
		writeResult(b, res, res.Reference, plotDir)
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(b, "\n### failures\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(b, "- `%s`: %s\n", f.Workload, f.Error)
		}
	}
	fmt.Fprintf(b, "\nTime per workload:")
	for i, t := range r.Timings {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, " %s %.1f s", t.Workload, t.Seconds)
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeResult(b *strings.Builder, res *Result, reference, plotDir string) {
	fmt.Fprintf(b, "\n%s\n", caseTitle(res))
	if res.Curve != nil {
		writeCurve(b, res.Curve, plotDir)
	}
	if len(res.Rows) > 0 {
		// Columns: the union of metric names in first-seen order.
		var cols []Metric
		for _, row := range res.Rows {
			for _, m := range row.Metrics {
				if !hasMetric(cols, m.Name) {
					cols = append(cols, m)
				}
			}
		}
		b.WriteString("\n| subject |")
		for _, c := range cols {
			fmt.Fprintf(b, " %s (%s) |", c.Name, c.Unit)
		}
		fmt.Fprintf(b, " ratio |\n| --- |")
		for range cols {
			b.WriteString(" ---: |")
		}
		b.WriteString(" ---: |\n")
		for _, row := range res.Rows {
			name := row.Subject
			if row.Baseline {
				name += " (baseline)"
			}
			fmt.Fprintf(b, "| %s |", name)
			if row.Skipped != "" {
				for range cols {
					b.WriteString(" |")
				}
				fmt.Fprintf(b, " skipped: %s |\n", mdEscape(row.Skipped))
				continue
			}
			for _, c := range cols {
				m, ok := metric(row.Metrics, c.Name)
				if !ok {
					b.WriteString(" |")
					continue
				}
				fmt.Fprintf(b, " %s |", formatMetric(m))
			}
			switch {
			case row.Subject == reference:
				b.WriteString(" 1 |")
			case row.Ratio > 0:
				fmt.Fprintf(b, " %s |", formatRatio(row.Ratio))
			default:
				b.WriteString(" |")
			}
			b.WriteString("\n")
		}
		for _, row := range res.Rows {
			if row.Note != "" {
				fmt.Fprintf(b, "\n- %s: %s", row.Subject, row.Note)
			}
		}
		if hasNotes(res.Rows) {
			b.WriteString("\n")
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(b, "\n%s\n", n)
	}
}

func caseTitle(res *Result) string {
	if res.Case == "" {
		return "**" + res.Workload + "**"
	}
	return "**" + res.Workload + ", " + res.Case + "**"
}

func writeCurve(b *strings.Builder, c *Curve, plotDir string) {
	if plotDir != "" {
		fmt.Fprintf(b, "\n![%s](%s)\n", c.Title, filepath.ToSlash(filepath.Join(plotDir, c.Name+".png")))
	}
	if c.Linear {
		return // a trace: its rows sum it up, the plot and the JSON report hold it
	}
	if c.Categories != nil {
		writeBars(b, c)
		return
	}
	// Every x of any series, in order, as columns.
	var xs []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !containsFloat(xs, p.X) {
				xs = append(xs, p.X)
			}
		}
	}
	slices.Sort(xs)
	fmt.Fprintf(b, "\n| %s \\ %s |", c.YLabel, c.XLabel)
	for _, x := range xs {
		fmt.Fprintf(b, " %s |", formatCount(x))
	}
	b.WriteString(" largest / smallest | log-log slope |\n| --- |")
	for range xs {
		b.WriteString(" ---: |")
	}
	b.WriteString(" ---: | ---: |\n")
	for _, s := range c.Series {
		fmt.Fprintf(b, "| %s |", s.Name)
		for _, x := range xs {
			if p, ok := pointAt(s.Points, x); ok {
				fmt.Fprintf(b, " %s |", formatFloat(p.Y))
			} else {
				b.WriteString(" |")
			}
		}
		if len(s.Points) > 1 && s.Points[0].Y > 0 {
			fmt.Fprintf(b, " %.2f |", s.Points[len(s.Points)-1].Y/s.Points[0].Y)
		} else {
			b.WriteString(" |")
		}
		if s.Slope != nil {
			fmt.Fprintf(b, " %.2f |\n", *s.Slope)
		} else {
			b.WriteString(" |\n")
		}
	}
}

// writeBars writes a bar chart's figures as a table: a column per
// category, a row per series.
func writeBars(b *strings.Builder, c *Curve) {
	fmt.Fprintf(b, "\n| %s |", c.YLabel)
	for _, name := range c.Categories {
		fmt.Fprintf(b, " %s |", name)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(c.Categories)) + "\n")
	for _, s := range c.Series {
		fmt.Fprintf(b, "| %s |", s.Name)
		for i := range c.Categories {
			if p, ok := pointAt(s.Points, float64(i)); ok {
				fmt.Fprintf(b, " %s |", formatFloat(p.Y))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
}

func hasMetric(ms []Metric, name string) bool { _, ok := metric(ms, name); return ok }

func metric(ms []Metric, name string) (Metric, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func hasNotes(rows []Row) bool {
	for _, r := range rows {
		if r.Note != "" {
			return true
		}
	}
	return false
}

func formatMetric(m Metric) string {
	s := formatFloat(m.Value)
	if m.Spread >= 0.005 {
		s += fmt.Sprintf(" ±%.0f%%", m.Spread*100)
	}
	return s
}

// formatFloat prints three significant digits, with thousands separators
// above 1,000.
func formatFloat(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000:
		return groupThousands(int64(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func formatRatio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

func formatCount(x float64) string { return groupThousands(int64(x)) }

func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func mdEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

func containsFloat(xs []float64, x float64) bool { return slices.Contains(xs, x) }

func pointAt(ps []Point, x float64) (Point, bool) {
	for _, p := range ps {
		if p.X == x {
			return p, true
		}
	}
	return Point{}, false
}
