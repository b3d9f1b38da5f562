package bench

import (
	"fmt"
	"slices"
	"strings"
)

// caseRows are the rows of one case of an object workload: its object size
// and number of clients.
type caseRows struct {
	size int64
	conc int
	rows []Row
}

// clientCurves turns the cases of an object workload (op names it, "PUT")
// into one curve per object size measured at two or more numbers of
// clients: each subject's primary figure (MiB/s for large objects, ops/s
// for small ones) against clients, on log-log axes, so that a slope of 1
// is perfect scaling and 0 none. name prefixes the plots' file names.
func clientCurves(name, op string, cases []caseRows) []*Result {
	var sizes []int64
	for _, cs := range cases {
		if !slices.Contains(sizes, cs.size) {
			sizes = append(sizes, cs.size)
		}
	}
	var out []*Result
	for _, size := range sizes {
		var of []caseRows
		for _, cs := range cases {
			if cs.size == size {
				of = append(of, cs)
			}
		}
		if c := clientCurve(name, op, size, of); c != nil {
			out = append(out, &Result{Case: FormatSize(size) + ", against clients", Curve: c})
		}
	}
	return out
}

// clientCurve is clientCurves' curve of one size (nil with fewer than two
// numbers of clients).
func clientCurve(name, op string, size int64, cases []caseRows) *Curve {
	slices.SortFunc(cases, func(a, b caseRows) int { return a.conc - b.conc })
	if len(cases) < 2 || cases[0].conc == cases[len(cases)-1].conc {
		return nil
	}
	sz := FormatSize(size)
	c := &Curve{Name: fmt.Sprintf("%s-%s-clients", name, strings.ReplaceAll(sz, " ", "")), XLabel: "clients"}
	for _, cs := range cases {
		c.addRows(float64(cs.conc), cs.rows)
	}
	if len(c.Series) == 0 {
		return nil
	}
	c.Title = fmt.Sprintf("%s %s: %s against clients", op, sz, c.YLabel)
	return c
}

// addRows adds the primary figure of every row that has one as a point at
// x of the row's subject's series (appended when new), the first figure's
// unit becoming the curve's Y label.
func (c *Curve) addRows(x float64, rows []Row) {
	for _, r := range rows {
		m, ok := r.Primary()
		if !ok || r.Skipped != "" {
			continue
		}
		if c.YLabel == "" {
			c.YLabel = m.Unit
		}
		s := c.seriesNamed(r.Subject)
		s.Points = append(s.Points, Point{X: x, Y: m.Value, Spread: m.Spread})
	}
}

// seriesNamed returns c's series of that name, added at the end if new.
func (c *Curve) seriesNamed(name string) *Series {
	for i := range c.Series {
		if c.Series[i].Name == name {
			return &c.Series[i]
		}
	}
	c.Series = append(c.Series, Series{Name: name})
	return &c.Series[len(c.Series)-1]
}

// phaseBars draws the primary figure of every subject of results, one
// result a phase named by phases (in the same order), as grouped bars: a
// group per phase, a bar per subject. The figures must share a unit.
func phaseBars(name, title string, phases []string, results []*Result) *Result {
	c := &Curve{Name: name, Title: title, XLabel: "phase", Categories: phases}
	for i, res := range results {
		c.addRows(float64(i), res.Rows)
	}
	return &Result{Case: title, Curve: c}
}
