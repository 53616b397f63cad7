package benchrun

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"golang.org/x/net/html"
)

// TestWriteHTML draws the test reports of two and three sides and checks
// the page against the JSON report of the same run: a mode section per
// mode, a percentile curve per side and round plus the median with the
// load's p50, p95 and p99, every round's CPU and allocations as a point
// with the median marked, the targets met or missed, the machine and the
// command; and that the page loads nothing.
func TestWriteHTML(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *Report
	}{{"two sides", testReport()}, {"three sides", testReport3()}, {"percentiles to p99.99", testReportPercentiles()}} {
		t.Run(tc.name, func(t *testing.T) {
			var page, js bytes.Buffer
			if err := tc.rep.WriteHTML(&page); err != nil {
				t.Fatal(err)
			}
			if err := tc.rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var rep Report
			if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			doc, err := html.Parse(bytes.NewReader(page.Bytes()))
			if err != nil {
				t.Fatalf("the page does not parse: %v", err)
			}
			var modes []*html.Node
			var command, machine, subgraphs string
			for n := range doc.Descendants() {
				for _, a := range n.Attr {
					if a.Key == "src" || a.Key == "href" || (a.Key == "style" && strings.Contains(a.Val, "url(")) {
						t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a.Key, a.Val)
					}
				}
				switch {
				case n.Data == "section" && attr(n, "class") == "mode":
					modes = append(modes, n)
				case attr(n, "id") == "command":
					command = textOf(n)
				case attr(n, "id") == "machine":
					machine = textOf(n)
				case attr(n, "id") == "subgraphs":
					subgraphs = textOf(n)
				}
			}
			if command != rep.Command || !strings.HasPrefix(machine, strconv.Itoa(rep.Machine.CPUs)+" CPUs") || !strings.Contains(machine, rep.Machine.GoVersion) {
				t.Errorf("command %q, machine %q; JSON %q, %+v", command, machine, rep.Command, rep.Machine)
			}
			if subgraphs != rep.Subgraphs.Describe() {
				t.Errorf("source schemas %q, JSON %q", subgraphs, rep.Subgraphs)
			}
			if len(modes) != len(rep.Modes) {
				t.Fatalf("%d mode sections, JSON %d modes", len(modes), len(rep.Modes))
			}
			for i, sec := range modes {
				checkMode(t, sec, rep.Modes[i], rep.sides())
			}
		})
	}
}

// testReportPercentiles is testReport with each round's distribution at
// load.Quantiles, p50 to p99.99, as the load reports it now.
func testReportPercentiles() *Report {
	rep := testReport()
	mr := &rep.Modes[0]
	for i := range mr.Samples {
		s := &mr.Samples[i]
		for j, q := range load.Quantiles {
			s.Percentiles = append(s.Percentiles, load.Percentile{Quantile: q, MS: s.P50 * (1 + float64(j)*0.5 + float64(i)*0.1)})
		}
	}
	return rep
}

// checkMode checks one mode's section against the JSON's mode.
func checkMode(t *testing.T, sec *html.Node, mr ModeReport, sides []string) {
	t.Helper()
	if attr(sec, "data-mode") != mr.Mode {
		t.Errorf("section %q, JSON mode %q", attr(sec, "data-mode"), mr.Mode)
	}
	// The page's numbers, by what they are.
	quantile := map[string]float64{} // side/round/q -> ms
	points := map[string]float64{}   // metric/side/round -> value
	medians := map[string]float64{}  // metric/side -> value
	var met []bool
	for n := range sec.Descendants() {
		switch attr(n, "class") {
		case "q":
			quantile[attr(n, "data-side")+"/"+attr(n, "data-round")+"/"+attr(n, "data-q")] = num(t, attr(n, "data-ms"))
		case "pt":
			points[attr(n, "data-metric")+"/"+attr(n, "data-side")+"/"+attr(n, "data-round")] = num(t, attr(n, "data-value"))
		case "median":
			medians[attr(n, "data-metric")+"/"+attr(n, "data-side")] = num(t, attr(n, "data-value"))
		case "target":
			met = append(met, attr(n, "data-met") == "true")
		}
	}
	want := map[string]float64{}
	wantPoints := map[string]float64{}
	perQ := map[string][]float64{} // side/q -> the rounds' latencies, for the median curve
	for _, s := range mr.Samples {
		r := strconv.Itoa(s.Round)
		if len(s.Percentiles) == 0 {
			want[s.Path+"/"+r+"/50"], want[s.Path+"/"+r+"/95"], want[s.Path+"/"+r+"/99"] = s.P50, s.P95, s.P99
		}
		for _, p := range s.Percentiles {
			q := strconv.FormatFloat(p.Quantile, 'f', -1, 64)
			want[s.Path+"/"+r+"/"+q] = p.MS
			perQ[s.Path+"/"+q] = append(perQ[s.Path+"/"+q], p.MS)
		}
		wantPoints["cpu_ms_per_request/"+s.Path+"/"+r] = s.CPUPerRequest
		wantPoints["alloc_bytes_per_request/"+s.Path+"/"+r] = s.AllocBytesPerRequest
		wantPoints["alloc_objects_per_request/"+s.Path+"/"+r] = s.AllocObjectsPerRequest
	}
	wantMedians := map[string]float64{}
	for _, side := range sides {
		sum := mr.Summary[side]
		if len(perQ) == 0 {
			want[side+"/0/50"], want[side+"/0/95"], want[side+"/0/99"] = sum["p50_ms"].Median, sum["p95_ms"].Median, sum["p99_ms"].Median
		}
		for k, v := range perQ {
			if strings.HasPrefix(k, side+"/") {
				want[side+"/0/"+strings.TrimPrefix(k, side+"/")] = summarize(v).Median
			}
		}
		for _, k := range []string{"cpu_ms_per_request", "alloc_bytes_per_request", "alloc_objects_per_request"} {
			wantMedians[k+"/"+side] = sum[k].Median
		}
	}
	equal(t, mr.Mode+" percentile points", quantile, want)
	equal(t, mr.Mode+" round points", points, wantPoints)
	equal(t, mr.Mode+" medians", medians, wantMedians)
	if len(met) != len(mr.Targets) {
		t.Fatalf("%s: %d target rows, JSON %d", mr.Mode, len(met), len(mr.Targets))
	}
	for i, tg := range mr.Targets {
		if met[i] != tg.Met {
			t.Errorf("%s target %q: page met=%v, JSON %v", mr.Mode, tg.Target, met[i], tg.Met)
		}
	}
}

func equal(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: page has %d, JSON %d:\npage %v\nJSON %v", what, len(got), len(want), got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s %s: page %v (present %v), JSON %v", what, k, g, ok, v)
		}
	}
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Errorf("number %q: %v", s, err)
	}
	return v
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.TrimSpace(b.String())
}
