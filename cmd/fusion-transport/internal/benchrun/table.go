package benchrun

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/env"
)

// WriteTable writes the report as text: per mode, a table of the metrics,
// each cell the median over the rounds with [min–max] when they differ;
// then the targets. With two sides the columns are Before (the first,
// legacy by default), After (the second, sockets) and After/Before; with
// three, one per side, then the ratio of each later side to the first and,
// when both sockets engines ran and nethttp is not the first,
// sockets:h1/sockets:nethttp, and of each side with the cache to the same
// side without when that is not the first. In the cache mode the table
// adds the calls that reached the source schemas per request and the hit
// ratio. The tables are Markdown, padded to line up in a terminal.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Gateway benchmark, %s: %d VUs, %d round(s) of %s after %s warm-up per path and mode; median [min–max] over the rounds.\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.VUs, r.Rounds, seconds(r.DurationSeconds), seconds(r.WarmupSeconds))
	m := r.Machine
	fmt.Fprintf(&b, "Machine: %d CPUs", m.CPUs)
	if m.CPUModel != "" {
		fmt.Fprintf(&b, " (%s)", m.CPUModel)
	}
	fmt.Fprintf(&b, ", %s %s/%s; source schemas, gateway and load share them; load average %.1f at the start, %.1f at the end.\n",
		m.GoVersion, m.OS, m.Arch, m.LoadStart, m.LoadEnd)
	if r.Command != "" {
		fmt.Fprintf(&b, "Command: %s\n", r.Command)
	}
	if r.Subgraphs != "" {
		b.WriteString(r.Subgraphs.Describe() + "\n")
	}
	if r.Distinct {
		b.WriteString("Requests: distinct (every one its own X-Request-Id, forwarded to the source schemas).\n")
	}
	if r.Cache {
		b.WriteString("Cache mode: the source schemas answer Cache-Control: " + CacheControl + "; every virtual user sends its own Authorization, forwarded; the sides named +cache run the gateway with its response cache on (memory, shared).\n")
	}
	if r.ElapsedSeconds > 0 {
		fmt.Fprintf(&b, "Run time: %s\n", time.Duration(r.ElapsedSeconds*float64(time.Second)).Round(time.Second))
	}
	sides := r.sides()
	for _, mr := range r.Modes {
		b.WriteString("\n")
		b.WriteString(mr.title() + "\n\n")
		writeMarkdown(&b, mr.rows(sides, r.BinaryBytes, r.Cache))
		if len(mr.Targets) > 0 {
			b.WriteString("\nTargets (" + mr.Mode + ")\n\n")
			bySide := slices.ContainsFunc(mr.Targets, func(t Target) bool { return t.Side != "" })
			rows := [][]string{{"Target", "Got", "Result"}}
			if bySide {
				rows[0] = append([]string{"Side"}, rows[0]...)
			}
			for _, t := range mr.Targets {
				row := []string{t.Target, t.Got, t.Result}
				if bySide {
					row = append([]string{t.Side}, row...)
				}
				rows = append(rows, row)
			}
			writeMarkdown(&b, rows)
		}
		var errs float64
		for _, side := range sides {
			errs += mr.Summary[side]["errors"].Max
		}
		if errs > 0 {
			fmt.Fprintf(&b, "\nWarning: the load saw errors in %s; see the samples' first_error in the JSON report.\n", mr.Mode)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sides returns the report's sides; a report written before it named them
// had legacy and sockets.
func (r *Report) sides() []string {
	if len(r.Sides) == 0 {
		return sideNames(DefaultSides)
	}
	return r.Sides
}

func (mr ModeReport) title() string {
	if mr.LatencyMS > 0 {
		return fmt.Sprintf("%s (every source schema request waits %s)", mr.Mode, time.Duration(mr.LatencyMS*float64(time.Millisecond)))
	}
	return fmt.Sprintf("%s (source schemas answer at once)", mr.Mode)
}

// sideRatio is a ratio column of the table: the medians of side over those
// of base.
type sideRatio struct{ side, base string }

// columns returns the table's header and its ratio columns for sides.
func columns(sides []string) (header []string, ratios []sideRatio) {
	if len(sides) > 1 && strings.HasSuffix(sides[1], APQSuffix) {
		// Options.APQ: each twin with its side.
		header = append([]string{"Metric"}, sides...)
		for i := 1; i < len(sides); i += 2 {
			ratios = append(ratios, sideRatio{sides[i], sides[i-1]})
			header = append(header, sides[i]+"/"+sides[i-1])
		}
		return header, ratios
	}
	if len(sides) == 2 {
		return []string{"Metric", "Before (" + sides[0] + ")", "After (" + sides[1] + ")", "After/Before"}, []sideRatio{{sides[1], sides[0]}}
	}
	header = append([]string{"Metric"}, sides...)
	for _, s := range sides[1:] {
		ratios = append(ratios, sideRatio{s, sides[0]})
	}
	const nethttp, h1 = "sockets:" + env.EngineNetHTTP, "sockets:" + env.EngineH1
	if sides[0] != nethttp && slices.Contains(sides, nethttp) && slices.Contains(sides, h1) {
		ratios = append(ratios, sideRatio{h1, nethttp})
	}
	for _, s := range sides[1:] {
		if base, ok := strings.CutSuffix(s, cacheSuffix); ok && base != sides[0] && slices.Contains(sides, base) {
			ratios = append(ratios, sideRatio{s, base})
		}
	}
	for _, r := range ratios {
		header = append(header, r.side+"/"+r.base)
	}
	return header, ratios
}

// rows returns the mode's table, header first; the cache mode's rows
// with cache.
func (mr ModeReport) rows(sides []string, binaryBytes int64, cache bool) [][]string {
	header, ratios := columns(sides)
	rows := [][]string{header}
	for _, m := range metrics {
		if m.cache && !cache || m.key == "request_bytes_per_call" && !mr.measured(m.key, sides) {
			continue // a row of the cache mode; request bytes, counted with Options.APQ only
		}
		row := []string{m.label}
		for _, side := range sides {
			row = append(row, cell(mr.Summary[side][m.key], m))
		}
		for _, r := range ratios {
			if m.key == "hit_ratio" {
				row = append(row, "") // a ratio of two shares says nothing
				continue
			}
			row = append(row, ratio(mr.Summary[r.base][m.key].Median, mr.Summary[r.side][m.key].Median))
		}
		rows = append(rows, row)
	}
	size := formatNumber(mb(binaryBytes), 2) + " MB"
	label := "binary size (one binary, both paths)"
	if len(sides) > 2 {
		label = "binary size (one binary, every side)"
	}
	row := []string{label}
	for range sides {
		row = append(row, size)
	}
	for range ratios {
		row = append(row, "1.000")
	}
	return append(rows, row)
}

// measured reports whether some side has a value of key.
func (mr ModeReport) measured(key string, sides []string) bool {
	for _, side := range sides {
		if mr.Summary[side][key].Max != 0 {
			return true
		}
	}
	return false
}

// cell writes a summary: the median, then [min–max] if they differ at the
// metric's precision.
func cell(s Summary, m metric) string {
	med, lo, hi := formatNumber(s.Median, m.digits), formatNumber(s.Min, m.digits), formatNumber(s.Max, m.digits)
	out := med + m.unit
	if lo != hi {
		out += " [" + lo + "–" + hi + "]"
	}
	return out
}

func ratio(before, after float64) string {
	if before == 0 {
		if after == 0 {
			return "–"
		}
		return "∞"
	}
	return strconv.FormatFloat(after/before, 'f', 3, 64)
}

// formatNumber writes v with digits decimals and its thousands grouped with
// commas: 4775.4 with 0 digits is 4,775.
func formatNumber(v float64, digits int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', digits, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}

// writeMarkdown writes rows as a Markdown table whose columns line up; the
// first row is the header.
func writeMarkdown(b *strings.Builder, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(row []string) {
		b.WriteString("|")
		for i, c := range row {
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-len([]rune(c))) + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}
