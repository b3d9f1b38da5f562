package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlots draws every curve of the report as DIR/NAME.png (log-log
// axes: a flat cost is a horizontal line, a linear one a 45° line) and
// returns the files written.
func (r *Report) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var files []string
	for _, res := range r.Results {
		if res.Curve == nil {
			continue
		}
		f := filepath.Join(dir, res.Curve.Name+".png")
		if err := drawCurve(res.Curve, f); err != nil {
			return files, fmt.Errorf("plot %s: %w", res.Curve.Name, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func drawCurve(c *Curve, file string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	if c.Linear {
		return drawTrace(p, c, file)
	}
	if c.Categories != nil {
		return drawBars(p, c, file)
	}
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = decades{}, decades{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(8)
	p.Add(plotter.NewGrid())
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, s := range c.Series {
		var xys plotter.XYs
		for _, pt := range s.Points {
			if pt.X > 0 && pt.Y > 0 {
				xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
				xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
				ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		name := s.Name
		if s.Slope != nil {
			name = fmt.Sprintf("%s (slope %.2f)", s.Name, *s.Slope)
		}
		p.Legend.Add(name, line, points)
	}
	if math.IsInf(xmin, 1) {
		return fmt.Errorf("no positive points")
	}
	// Explicit ranges: a log axis cannot take gonum's default padding of a
	// single value (±1), and a little room keeps points off the frame.
	p.X.Min, p.X.Max = xmin/1.5, xmax*1.5
	// Whole decades on Y, so every axis shows at least two labelled ticks,
	// and room above the data for the legend.
	p.Y.Min = 0.99 * math.Pow(10, math.Floor(math.Log10(ymin))) // 0.99: LogTicks truncates log10(0.1) to 0
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(ymax*math.Pow(2, float64(1+len(c.Series))))))
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// drawTrace draws c on linear axes from 0, one line per series.
func drawTrace(p *plot.Plot, c *Curve, file string) error {
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	p.X.Min, p.Y.Min = 0, 0
	var ymax float64
	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
			ymax = math.Max(ymax, pt.Y)
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	if ymax == 0 {
		return fmt.Errorf("no points")
	}
	p.Y.Max = ymax * 1.25 // room for the legend
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// drawBars draws c as grouped bars on a log Y axis: a group per category,
// a bar per series, each from the axis' floor (a log axis has no zero).
func drawBars(p *plot.Plot, c *Curve, file string) error {
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, decades{}
	var ticks plot.ConstantTicks
	for i, name := range c.Categories {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: name})
	}
	p.X.Tick.Marker = ticks
	p.Legend.Top, p.Legend.Left = true, true
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if pt.Y > 0 {
				ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
			}
		}
	}
	if math.IsInf(ymin, 1) {
		return fmt.Errorf("no positive points")
	}
	floor := 0.99 * math.Pow(10, math.Floor(math.Log10(ymin)))
	width := 0.8 / float64(len(c.Series))
	for i, s := range c.Series {
		var legend *plotter.Polygon
		for _, pt := range s.Points {
			if pt.Y <= 0 {
				continue
			}
			x0 := pt.X - 0.4 + float64(i)*width
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: floor}, {X: x0 + width, Y: floor}, {X: x0 + width, Y: pt.Y}, {X: x0, Y: pt.Y}})
			if err != nil {
				return err
			}
			bar.Color = plotutil.Color(i)
			bar.LineStyle.Width = 0
			p.Add(bar)
			legend = bar
		}
		if legend != nil {
			p.Legend.Add(s.Name, legend)
		}
	}
	p.X.Min, p.X.Max = -0.6, float64(len(c.Categories))-0.4
	p.Y.Min = floor
	// Room above the tallest bar for the legend, about a line a series.
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(ymax*math.Pow(2, 1+float64(len(c.Series))/2))))
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// decades are log ticks labelled 0.1, 1, 10, 1,000, 1,000,000 (gonum's
// LogTicks writes 1e+06).
type decades struct{}

// Ticks returns gonum's log ticks with readable labels.
func (decades) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		if v := ticks[i].Value; v >= 1 {
			ticks[i].Label = groupThousands(int64(math.Round(v)))
		} else {
			ticks[i].Label = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return ticks
}
