package benchrun

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WriteTable writes the report as text: per mode, a table of the metrics
// with the columns Before (legacy), After (sockets) and After/Before, each
// cell the median over the rounds with [min–max] when they differ; then the
// targets. The tables are Markdown, padded to line up in a terminal.
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
	if r.ElapsedSeconds > 0 {
		fmt.Fprintf(&b, "Run time: %s\n", time.Duration(r.ElapsedSeconds*float64(time.Second)).Round(time.Second))
	}
	for _, mr := range r.Modes {
		b.WriteString("\n")
		b.WriteString(mr.title() + "\n\n")
		writeMarkdown(&b, mr.rows(r.BinaryBytes))
		if len(mr.Targets) > 0 {
			b.WriteString("\nTargets (" + mr.Mode + ")\n\n")
			rows := [][]string{{"Target", "Got", "Result"}}
			for _, t := range mr.Targets {
				rows = append(rows, []string{t.Target, t.Got, t.Result})
			}
			writeMarkdown(&b, rows)
		}
		if errs := mr.Summary["legacy"]["errors"].Max + mr.Summary["sockets"]["errors"].Max; errs > 0 {
			fmt.Fprintf(&b, "\nWarning: the load saw errors in %s; see the samples' first_error in the JSON report.\n", mr.Mode)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (mr ModeReport) title() string {
	if mr.LatencyMS > 0 {
		return fmt.Sprintf("%s (every source schema request waits %s)", mr.Mode, time.Duration(mr.LatencyMS*float64(time.Millisecond)))
	}
	return fmt.Sprintf("%s (source schemas answer at once)", mr.Mode)
}

// rows returns the mode's table, header first.
func (mr ModeReport) rows(binaryBytes int64) [][]string {
	rows := [][]string{{"Metric", "Before (legacy)", "After (sockets)", "After/Before"}}
	before, after := mr.Summary["legacy"], mr.Summary["sockets"]
	for _, m := range metrics {
		rows = append(rows, []string{m.label, cell(before[m.key], m), cell(after[m.key], m), ratio(before[m.key].Median, after[m.key].Median)})
	}
	size := formatNumber(mb(binaryBytes), 2) + " MB"
	rows = append(rows, []string{"binary size (one binary, both paths)", size, size, "1.000"})
	return rows
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
