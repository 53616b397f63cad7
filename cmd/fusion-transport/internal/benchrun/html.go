package benchrun

import (
	"html/template"
	"io"
	"strconv"
)

// WriteHTML writes the report as one self-contained HTML page (inline
// style and SVG, no script, nothing loaded): per mode the latency
// percentile curve of each side, each round thin and the median over the
// rounds bold, on a log axis from p50 to p99.99; gateway CPU and
// allocations per request per round as points per side with the median
// marked; the targets met or missed; and the machine and command. Every
// number the page draws is also on its element as a data attribute, for
// tests and for people who read the source.
//
// The load reports p50, p95 and p99 of its HDR histogram per round, so
// the curves run from p50 to p99; the axis goes on to p99.99 so that the
// pages of later runs, with more of the histogram, compare at a glance.
func (r *Report) WriteHTML(w io.Writer) error {
	page := htmlReport{Report: r, Style: template.CSS(benchStyle)}
	sides := r.sides()
	for i, s := range sides {
		page.Sides = append(page.Sides, htmlSide{Name: s, Colour: sideColour(i)})
	}
	for _, mr := range r.Modes {
		page.Modes = append(page.Modes, htmlMode{
			Mode: mr.Mode, Title: mr.title(), Targets: mr.Targets,
			Latency: latencyChartOf(mr, page.Sides),
			Strips: []stripChart{
				stripChartOf(mr, page.Sides, "cpu_ms_per_request", "gateway CPU per request", "ms", 3),
				stripChartOf(mr, page.Sides, "alloc_bytes_per_request", "allocated bytes per request", "B", 0),
				stripChartOf(mr, page.Sides, "alloc_objects_per_request", "allocated objects per request", "", 0),
			},
		})
	}
	return benchTemplate.Execute(w, page)
}

type (
	htmlReport struct {
		*Report
		Style template.CSS
		Sides []htmlSide
		Modes []htmlMode
	}
	htmlSide struct{ Name, Colour string }
	htmlMode struct {
		Mode, Title string
		Latency     latencyChart
		Strips      []stripChart
		Targets     []Target
	}
	latencyChart struct {
		chart
		XTicks, YTicks []tick
		Curves         []curve
	}
	// curve is one side's percentile curve: of one round, or (Round 0)
	// the median over the rounds.
	curve struct {
		Side, Colour string
		Round        int
		Points       string
		Dots         []dot
	}
	dot struct {
		X, Y    string
		Q, MS   float64
		QLabel  string
		MSLabel string
	}
	stripChart struct {
		chart
		Metric, Label, Unit string
		YTicks, XLabels     []tick
		Points              []stripPoint
		Medians             []stripMedian
	}
	stripPoint struct {
		Side, Colour string
		Round        int
		Value        float64
		X, Y         string
	}
	stripMedian struct {
		Side, Colour string
		Value        float64
		Label        string
		X1, X2, Y    string
	}
)

// quantiles are the points of a round's percentile curve: the load's HDR
// histogram at load.Quantiles (p50 to p99.99), or, for a report written
// before it carried them, its three percentiles.
func quantiles(s Sample) [][2]float64 {
	if len(s.Percentiles) == 0 {
		return [][2]float64{{50, s.P50}, {95, s.P95}, {99, s.P99}}
	}
	out := make([][2]float64, len(s.Percentiles))
	for i, p := range s.Percentiles {
		out[i] = [2]float64{p.Quantile, p.MS}
	}
	return out
}

func latencyChartOf(mr ModeReport, sides []htmlSide) latencyChart {
	c := latencyChart{chart: newChart(640, 320)}
	maxMS := 0.0
	for _, s := range mr.Samples {
		for _, q := range quantiles(s) {
			maxMS = max(maxMS, q[1])
		}
	}
	top := niceMax(maxMS)
	xs := scale{quantileX(quantileTicks[0]), quantileX(quantileTicks[len(quantileTicks)-1]), c.Left, c.Right}
	ys := scale{0, top, c.Bottom, c.Top}
	for _, q := range quantileTicks {
		c.XTicks = append(c.XTicks, tick{At: xs.at(quantileX(q)), Label: "p" + strconv.FormatFloat(q, 'f', -1, 64)})
	}
	c.YTicks = linearTicks(ys, top, 4, 1)
	line := func(side htmlSide, round int, points [][2]float64) curve {
		cv := curve{Side: side.Name, Colour: side.Colour, Round: round}
		var xs1, ys1 []float64
		for _, p := range points {
			x, y := xs.at(quantileX(p[0])), ys.at(p[1])
			xs1, ys1 = append(xs1, x), append(ys1, y)
			cv.Dots = append(cv.Dots, dot{X: px(x), Y: px(y), Q: p[0], MS: p[1],
				QLabel: "p" + strconv.FormatFloat(p[0], 'f', -1, 64), MSLabel: formatNumber(p[1], 2)})
		}
		cv.Points = pointList(xs1, ys1)
		return cv
	}
	for _, side := range sides {
		var order []float64             // the quantiles, as the first round gives them
		perQ := map[float64][]float64{} // quantile -> the rounds' latencies
		for _, s := range mr.Samples {
			if s.Path != side.Name {
				continue
			}
			qs := quantiles(s)
			c.Curves = append(c.Curves, line(side, s.Round, qs))
			for _, q := range qs {
				if _, ok := perQ[q[0]]; !ok {
					order = append(order, q[0])
				}
				perQ[q[0]] = append(perQ[q[0]], q[1])
			}
		}
		if len(order) == 0 {
			continue
		}
		med := make([][2]float64, len(order))
		for i, q := range order {
			med[i] = [2]float64{q, summarize(perQ[q]).Median}
		}
		c.Curves = append(c.Curves, line(side, 0, med))
	}
	return c
}

// stripChartOf plots metric key of every round, a column per side, with
// the median over the rounds as a bar.
func stripChartOf(mr ModeReport, sides []htmlSide, key, label, unit string, digits int) stripChart {
	c := stripChart{chart: newChart(320, 240), Metric: key, Label: label, Unit: unit}
	c.Top = 32 // room for the title above the top tick
	var value func(Sample) float64
	for _, m := range metrics {
		if m.key == key {
			value = m.value
		}
	}
	top := 0.0
	for _, s := range mr.Samples {
		top = max(top, value(s))
	}
	top = niceMax(top)
	ys := scale{0, top, c.Bottom, c.Top}
	c.YTicks = linearTicks(ys, top, 4, digits)
	band := (c.Right - c.Left) / float64(max(len(sides), 1))
	for i, side := range sides {
		mid := c.Left + band*(float64(i)+0.5)
		c.XLabels = append(c.XLabels, tick{At: mid, Label: side.Name})
		var values []float64
		var n int
		for _, s := range mr.Samples {
			if s.Path != side.Name {
				continue
			}
			v := value(s)
			values = append(values, v)
			// Rounds spread a little across the column, so that equal
			// values stay visible.
			x := mid + (float64(n%5)-2)*band*0.06
			n++
			c.Points = append(c.Points, stripPoint{Side: side.Name, Colour: side.Colour, Round: s.Round, Value: v, X: px(x), Y: px(ys.at(v))})
		}
		if len(values) == 0 {
			continue
		}
		m := summarize(values).Median
		c.Medians = append(c.Medians, stripMedian{Side: side.Name, Colour: side.Colour, Value: m, Label: formatNumber(m, digits),
			X1: px(mid - band*0.3), X2: px(mid + band*0.3), Y: px(ys.at(m))})
	}
	return c
}
