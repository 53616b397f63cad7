package benchrun

import (
	"math"
	"strconv"
	"strings"
)

// The charts of the HTML report are inline SVG drawn here: a few lines,
// points and labels, written through html/template (html.go), which
// escapes every text and attribute in SVG as in HTML. See docs/design.md
// ("The report's pictures") for why no SVG library.

// chart is the frame of one plot: its size in pixels and the plotting
// area inside the margins.
type chart struct {
	W, H                     float64
	Left, Right, Top, Bottom float64 // the plotting area's edges
}

func newChart(w, h float64) chart {
	return chart{W: w, H: h, Left: 64, Right: w - 28, Top: 16, Bottom: h - 40} // room on the right for the last tick label ("p99.99")
}

// scale maps [lo, hi] onto [a, b] linearly.
type scale struct{ lo, hi, a, b float64 }

func (s scale) at(v float64) float64 {
	if s.hi == s.lo {
		return (s.a + s.b) / 2
	}
	return s.a + (v-s.lo)/(s.hi-s.lo)*(s.b-s.a)
}

// tick is one labelled mark on an axis, at a pixel position.
type tick struct {
	At    float64
	Label string
}

// quantileX is the percentile curve's x: -log10(1-q), so that p50, p90,
// p99, p99.9 and p99.99 fall at even steps (0.3, 1, 2, 3, 4).
func quantileX(percent float64) float64 { return -math.Log10(1 - percent/100) }

// quantileTicks are the percentile axis's marks, p50 to p99.99.
var quantileTicks = []float64{50, 90, 99, 99.9, 99.99}

// niceMax rounds v up to 1, 2 or 5 times a power of ten, for an axis's
// end; 1 for v ≤ 0.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks are n+1 marks from 0 to max on s.
func linearTicks(s scale, max float64, n int, digits int) []tick {
	out := make([]tick, 0, n+1)
	for i := 0; i <= n; i++ {
		v := max * float64(i) / float64(n)
		out = append(out, tick{At: s.at(v), Label: formatNumber(v, digits)})
	}
	return out
}

// pointList is SVG's points attribute of xs and ys.
func pointList(xs, ys []float64) string {
	var b strings.Builder
	for i := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(px(xs[i]) + "," + px(ys[i]))
	}
	return b.String()
}

// px writes a pixel coordinate with one decimal.
func px(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// sideColours are the sides' colours, in order: the first (legacy)
// grey, then blue, red, green.
var sideColours = []string{"#666666", "#1f77b4", "#d62728", "#2ca02c"}

func sideColour(i int) string { return sideColours[i%len(sideColours)] }
