package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		want   Summary
	}{
		{"none", nil, Summary{}},
		{"one", []float64{3}, Summary{3, 3, 3}},
		{"two: the mean of both", []float64{4, 2}, Summary{3, 2, 4}},
		{"odd", []float64{5, 1, 3}, Summary{3, 1, 5}},
		{"even", []float64{10, 1, 4, 2}, Summary{3, 1, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.values...)
			if diff := cmp.Diff(tc.want, summarize(tc.values)); diff != "" {
				t.Errorf("summarize(%v) mismatch (-want +got):\n%s", tc.values, diff)
			}
			if diff := cmp.Diff(in, tc.values); diff != "" {
				t.Errorf("summarize changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		digits int
		want   string
	}{
		{0, 0, "0"},
		{999.4, 0, "999"},
		{4775.4, 0, "4,775"},
		{1234567.891, 2, "1,234,567.89"},
		{-26014, 0, "-26,014"},
		{-0.0001, 2, "0.00"},
		{0.7904, 3, "0.790"},
	} {
		if got := formatNumber(tc.v, tc.digits); got != tc.want {
			t.Errorf("formatNumber(%v, %d) = %q, want %q", tc.v, tc.digits, got, tc.want)
		}
	}
}

func TestCell(t *testing.T) {
	ms := metric{unit: " ms", digits: 2}
	for _, tc := range []struct {
		name string
		s    Summary
		m    metric
		want string
	}{
		{"range", Summary{13.91, 13.8, 14.02}, ms, "13.91 ms [13.80–14.02]"},
		{"equal at the precision", Summary{6, 5.999, 6.001}, metric{digits: 2}, "6.00"},
		{"thousands", Summary{3342, 3300, 3380}, metric{}, "3,342 [3,300–3,380]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cell(tc.s, tc.m); got != tc.want {
				t.Errorf("cell = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	// The command name holds a space and a parenthesis.
	line := "4242 (fusion )x) S 1 4242 4242 0 -1 4194560 1285 0 0 0 37 12 0 0 20 0 9 0 123 1234 567 18446744073709551615\n"
	got, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 490 * time.Millisecond; got != want {
		t.Errorf("parseStat = %s, want %s (37 + 12 ticks)", got, want)
	}
	if _, err := parseStat([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("parseStat of a short line: no error")
	}
	// The running test process has a stat file.
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Errorf("cpuTime(self): %v", err)
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tfusion-transport\nVmPeak:\t  900 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t9\n"
	for _, tc := range []struct {
		key  string
		want int64
	}{{"VmRSS", 10 << 20}, {"VmHWM", 20 << 20}} {
		got, err := parseStatus([]byte(status), tc.key)
		if err != nil || got != tc.want {
			t.Errorf("parseStatus(%s) = %d, %v; want %d", tc.key, got, err, tc.want)
		}
	}
	if _, err := parseStatus([]byte(status), "VmSwap"); err == nil {
		t.Error("parseStatus of a missing key: no error")
	}
	if _, err := parseStatus([]byte(status), "Threads"); err == nil {
		t.Error("parseStatus of a value without kB: no error")
	}
}

func TestParseModes(t *testing.T) {
	got, err := ParseModes(" constant-latency, constant ")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Mode{ConstantLatency, Constant}, got); diff != "" {
		t.Errorf("ParseModes mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "fast", "constant,fast"} {
		if _, err := ParseModes(bad); err == nil {
			t.Errorf("ParseModes(%q): no error", bad)
		}
	}
}

// sample is a run with the given req/s, p95, CPU, allocations and peak RSS.
func sample(path string, round int, rps, p95, cpu, alloc float64, peak int64) Sample {
	return Sample{Path: path, Round: round, Requests: int64(rps * 10), RequestsPerSecond: rps, P50: p95 / 2, P95: p95, P99: p95 * 1.5,
		CPUPerRequest: cpu, AllocBytesPerRequest: alloc, AllocObjectsPerRequest: alloc / 40, CallsPerRequest: 6,
		IdleRSS: 12 << 20, PeakRSS: peak, StartupMS: 8}
}

func testReport() *Report {
	mr := ModeReport{Mode: "constant-latency", LatencyMS: 4, Samples: []Sample{
		sample("legacy", 1, 3300, 19.4, 0.790, 26000, 100e6),
		sample("sockets", 1, 3340, 19.3, 0.802, 25300, 101e6),
		sample("legacy", 2, 3380, 19.5, 0.780, 26020, 100e6),
		sample("sockets", 2, 3360, 19.2, 0.798, 25310, 103e6),
	}}
	mr.summarize(sideNames(DefaultSides))
	return &Report{
		Date: time.Date(2026, 5, 4, 10, 30, 0, 0, time.UTC), Command: "fusion-transport bench",
		Machine: Machine{CPUs: 2, GoVersion: "go1.26.8", OS: "linux", Arch: "amd64"},
		Rounds:  2, VUs: 50, DurationSeconds: 10, WarmupSeconds: 2, BinaryBytes: 12_340_000, Subgraphs: SubgraphsReplay,
		Modes: []ModeReport{mr},
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := testReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Gateway benchmark, 2026-05-04 10:30 UTC: 50 VUs, 2 round(s) of 10s after 2s warm-up",
		"constant-latency (every source schema request waits 4ms)",
		"Targets (constant-latency)",
		"Source schemas: replay, the embedded schemas' recorded answers looked up by request body",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	rows := tableRows(out)
	for _, want := range [][]string{
		{"Metric", "Before (legacy)", "After (sockets)", "After/Before"},
		{"req/s", "3,340 [3,300–3,380]", "3,350 [3,340–3,360]", "1.003"},
		{"p95 latency", "19.45 ms [19.40–19.50]", "19.25 ms [19.20–19.30]", "0.990"},
		{"gateway CPU/request", "0.785 ms [0.780–0.790]", "0.800 ms [0.798–0.802]", "1.019"},
		{"allocated B/request", "26,010 [26,000–26,020]", "25,305 [25,300–25,310]", "0.973"},
		{"source schema calls/request", "6.00", "6.00", "1.000"},
		{"peak RSS", "100.0 MB", "102.0 MB [101.0–103.0]", "1.020"},
		{"load errors", "0", "0", "–"},
		{"binary size (one binary, both paths)", "12.34 MB", "12.34 MB", "1.000"},
		{"CPU/request ≤ legacy", "1.019 × legacy", "missed by 1.9% of legacy"},
		{"allocated B/request ≥ 9,000 lower (1.5 KB × 6.00 calls)", "705 B lower", "missed by 8,295 B/request"},
	} {
		if diff := cmp.Diff(want, rows[want[0]]); diff != "" {
			t.Errorf("row %q mismatch (-want +got):\n%s\n%s", want[0], diff, out)
		}
	}
}

// writeTable returns rep's table.
func writeTable(t *testing.T, rep *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkRows wants each of rows, whole, among the table rows of out (keyed
// by their first cell).
func checkRows(t *testing.T, out string, rows [][]string) {
	t.Helper()
	got := tableRows(out)
	for _, want := range rows {
		if diff := cmp.Diff(want, got[want[0]]); diff != "" {
			t.Errorf("row %q mismatch (-want +got):\n%s\n%s", want[0], diff, out)
		}
	}
}

// tableRows maps the first cell of every Markdown table row to its cells.
func tableRows(out string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows[cells[0]] = cells
	}
	return rows
}

func TestTargets(t *testing.T) {
	got := testReport().Modes[0].Targets
	var met []bool
	for _, tg := range got {
		met = append(met, tg.Met)
	}
	// req/s and p95 within bounds; CPU 1.9% over; 705 B saved of 9,000
	// wanted; peak RSS 102 / 100 MB = 1.02 exactly.
	if diff := cmp.Diff([]bool{true, true, false, false, true}, met); diff != "" {
		t.Errorf("targets met mismatch (-want +got):\n%s\n%+v", diff, got)
	}
}

func TestParseSides(t *testing.T) {
	got, err := ParseSides(" legacy, sockets:nethttp ,sockets:h1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Side{{Name: "legacy", Switch: "0"}, {Name: "sockets:nethttp", Switch: "1", Engine: "nethttp"}, {Name: "sockets:h1", Switch: "1", Engine: "h1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseSides mismatch (-want +got):\n%s", diff)
	}
	if got, err := ParseSides("legacy,sockets"); err != nil || !cmp.Equal(DefaultSides, got) {
		t.Errorf("ParseSides(legacy,sockets) = %v, %v; want DefaultSides", got, err)
	}
	if got, err := ParseSides("sockets,sockets+cache"); err != nil || !cmp.Equal(DefaultCacheSides, got) {
		t.Errorf("ParseSides(sockets,sockets+cache) = %v, %v; want DefaultCacheSides", got, err)
	}
	got, err = ParseSides("legacy+cache,sockets:h1,sockets:h1+cache")
	want = []Side{{Name: "legacy+cache", Switch: "0", Cache: true}, {Name: "sockets:h1", Switch: "1", Engine: "h1"}, {Name: "sockets:h1+cache", Switch: "1", Engine: "h1", Cache: true}}
	if diff := cmp.Diff(want, got); diff != "" || err != nil {
		t.Errorf("ParseSides with +cache: %v; mismatch (-want +got):\n%s", err, diff)
	}
	for bad, want := range map[string]string{
		"legacy": "1 side: want two or three",
		"legacy,sockets,sockets:h1,sockets:nethttp": "4 sides: want two or three",
		"legacy,sockets:h2":                         `unknown side "sockets:h2"`,
		"sockets,sockets":                           `side "sockets" is listed twice`,
		"legacy,,sockets":                           "an empty side between commas",
		"legacy,+cache":                             `unknown side "+cache": want legacy, sockets (the configuration's own engine), sockets:nethttp or sockets:h1, each with +cache or not`,
		"legacy,sockets+cached":                     `unknown side "sockets+cached"`,
		"sockets+cache,sockets+cache":               `side "sockets+cache" is listed twice`,
	} {
		if _, err := ParseSides(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSides(%q) = %v, want an error with %q", bad, err, want)
		}
	}
}

// TestGatewayCommand: each side's gateway gets its path from
// FUSION_SOCKETS_TRANSPORT (AfterSwitch on the sockets sides only) and its
// engine from -engine.
func TestGatewayCommand(t *testing.T) {
	sides, err := ParseSides("legacy,sockets,sockets:h1")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Environ: []string{"HOME=/h", "FUSION_SOCKETS_TRANSPORT=0", "FUSION_DEFAULTS__ENGINE=h1"}, GatewayConfig: "gw.yaml", AfterSwitch: "canary:0.5", Sides: sides}
	base := []string{"gateway", "-addr", "127.0.0.1:0", "-schemas", "accounts=u", "-config", "gw.yaml"}
	for i, want := range []struct {
		args      []string
		transport string
	}{
		{base, "0"},
		{base, "canary:0.5"},
		{append(slices.Clone(base), "-engine", "h1"), "canary:0.5"},
	} {
		side := o.sides()[i]
		args, environ := gatewayCommand(o, "accounts=u", side)
		if diff := cmp.Diff(want.args, args); diff != "" {
			t.Errorf("%s: args (-want +got):\n%s", side.Name, diff)
		}
		wantEnv := []string{"HOME=/h", "FUSION_DEFAULTS__ENGINE=h1", "FUSION_SOCKETS_TRANSPORT=" + want.transport}
		if diff := cmp.Diff(wantEnv, environ); diff != "" {
			t.Errorf("%s: environment (-want +got):\n%s", side.Name, diff)
		}
	}
	// Distinct: every gateway forwards the load's request id, whatever
	// the environment forwarded before.
	o.Distinct = true
	o.Environ = append(o.Environ, "FUSION_FORWARD_HEADERS=Authorization")
	_, environ := gatewayCommand(o, "accounts=u", o.sides()[0])
	wantEnv := []string{"HOME=/h", "FUSION_DEFAULTS__ENGINE=h1", "FUSION_SOCKETS_TRANSPORT=0", "FUSION_FORWARD_HEADERS=X-Request-Id"}
	if diff := cmp.Diff(wantEnv, environ); diff != "" {
		t.Errorf("distinct: environment (-want +got):\n%s", diff)
	}
	if got := (Options{}).sides(); !cmp.Equal(DefaultSides, got) {
		t.Errorf("default sides %v", got)
	}

	// Cache: the sides default to sockets and sockets+cache, whose gateway
	// runs with -cache; every gateway forwards the load's users'
	// Authorization (and the request id with Distinct).
	o = Options{Environ: []string{"HOME=/h"}, Cache: true}
	if got := o.sides(); !cmp.Equal(DefaultCacheSides, got) {
		t.Errorf("default sides of the cache mode %v", got)
	}
	for _, tc := range []struct {
		distinct bool
		side     Side
		args     []string
		forward  string
	}{
		{false, DefaultCacheSides[0], nil, "Authorization"},
		{false, DefaultCacheSides[1], []string{"-cache"}, "Authorization"},
		{true, DefaultCacheSides[1], []string{"-cache"}, "X-Request-Id,Authorization"},
	} {
		o.Distinct = tc.distinct
		args, environ := gatewayCommand(o, "accounts=u", tc.side)
		if diff := cmp.Diff(append([]string{"gateway", "-addr", "127.0.0.1:0", "-schemas", "accounts=u"}, tc.args...), args); diff != "" {
			t.Errorf("%s, distinct %v: args (-want +got):\n%s", tc.side.Name, tc.distinct, diff)
		}
		if diff := cmp.Diff([]string{"HOME=/h", "FUSION_SOCKETS_TRANSPORT=1", "FUSION_FORWARD_HEADERS=" + tc.forward}, environ); diff != "" {
			t.Errorf("%s, distinct %v: environment (-want +got):\n%s", tc.side.Name, tc.distinct, diff)
		}
	}
}

// testReport3 is testReport with a third side: legacy, sockets:nethttp and
// sockets:h1, ABCABC.
func testReport3() *Report {
	rep := testReport()
	mr := &rep.Modes[0]
	mr.Samples = []Sample{
		sample("legacy", 1, 3300, 19.4, 0.790, 26000, 100e6),
		sample("sockets:nethttp", 1, 3340, 19.3, 0.802, 25300, 101e6),
		sample("sockets:h1", 1, 3500, 18.0, 0.600, 15000, 98e6),
		sample("legacy", 2, 3380, 19.5, 0.780, 26020, 100e6),
		sample("sockets:nethttp", 2, 3360, 19.2, 0.798, 25310, 103e6),
		sample("sockets:h1", 2, 3520, 18.2, 0.620, 15020, 98e6),
	}
	mr.Samples[5].Errors = 2
	rep.Sides = []string{"legacy", "sockets:nethttp", "sockets:h1"}
	mr.summarize(rep.Sides)
	return rep
}

func TestWriteTableSides(t *testing.T) {
	var b bytes.Buffer
	if err := testReport3().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rows := tableRows(out)
	for _, want := range [][]string{
		{"Metric", "legacy", "sockets:nethttp", "sockets:h1", "sockets:nethttp/legacy", "sockets:h1/legacy", "sockets:h1/sockets:nethttp"},
		{"req/s", "3,340 [3,300–3,380]", "3,350 [3,340–3,360]", "3,510 [3,500–3,520]", "1.003", "1.051", "1.048"},
		{"gateway CPU/request", "0.785 ms [0.780–0.790]", "0.800 ms [0.798–0.802]", "0.610 ms [0.600–0.620]", "1.019", "0.777", "0.762"},
		{"allocated B/request", "26,010 [26,000–26,020]", "25,305 [25,300–25,310]", "15,010 [15,000–15,020]", "0.973", "0.577", "0.593"},
		{"load errors", "0", "0", "1 [0–2]", "–", "∞", "∞"},
		{"binary size (one binary, every side)", "12.34 MB", "12.34 MB", "12.34 MB", "1.000", "1.000", "1.000"},
		{"Side", "Target", "Got", "Result"},
	} {
		if diff := cmp.Diff(want, rows[want[0]]); diff != "" {
			t.Errorf("row %q mismatch (-want +got):\n%s\n%s", want[0], diff, out)
		}
	}
	// The targets of both sockets sides against legacy, each named.
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| sockets:") && strings.Contains(line, "CPU/request ≤ legacy") {
			got = append(got, strings.Join(strings.Fields(line), " "))
		}
	}
	want := []string{
		"| sockets:nethttp | CPU/request ≤ legacy | 1.019 × legacy | missed by 1.9% of legacy |",
		"| sockets:h1 | CPU/request ≤ legacy | 0.777 × legacy | met |",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CPU targets (-want +got):\n%s\n%s", diff, out)
	}
	if !strings.Contains(out, "Warning: the load saw errors in constant-latency") {
		t.Errorf("no warning for the errors of sockets:h1:\n%s", out)
	}
	if n := len(testReport3().Modes[0].Targets); n != 10 {
		t.Errorf("%d targets, want 5 per sockets side", n)
	}

	// Two sides that are not the default: Before and After by name, and no
	// targets without legacy.
	rep := testReport3()
	mr := &rep.Modes[0]
	mr.Samples = slices.DeleteFunc(mr.Samples, func(s Sample) bool { return s.Path == "legacy" })
	rep.Sides = []string{"sockets:nethttp", "sockets:h1"}
	mr.summarize(rep.Sides)
	b.Reset()
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	rows = tableRows(b.String())
	if diff := cmp.Diff([]string{"Metric", "Before (sockets:nethttp)", "After (sockets:h1)", "After/Before"}, rows["Metric"]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if strings.Contains(b.String(), "Targets") {
		t.Errorf("targets without legacy:\n%s", b.String())
	}
}

// testReportCache is a cache mode's report: legacy, sockets:h1 and
// sockets:h1+cache.
func testReportCache() *Report {
	rep := testReport()
	rep.Cache = true
	mr := &rep.Modes[0]
	cached := func(round int, rps, cpu, reached float64) Sample {
		s := sample("sockets:h1+cache", round, rps, 5, cpu, 9000, 99e6)
		s.SchemaCallsPerRequest, s.HitRatio = reached, 1-reached/6
		return s
	}
	uncached := func(s Sample) Sample { s.SchemaCallsPerRequest = 6; return s }
	mr.Samples = []Sample{
		uncached(sample("legacy", 1, 3300, 19.4, 0.790, 26000, 100e6)),
		uncached(sample("sockets:h1", 1, 3500, 18.0, 0.600, 15000, 98e6)),
		cached(1, 9000, 0.300, 0.000),
		uncached(sample("legacy", 2, 3380, 19.5, 0.780, 26020, 100e6)),
		uncached(sample("sockets:h1", 2, 3520, 18.2, 0.620, 15020, 98e6)),
		cached(2, 9400, 0.320, 0.12),
	}
	rep.Sides = []string{"legacy", "sockets:h1", "sockets:h1+cache"}
	mr.summarize(rep.Sides)
	return rep
}

// TestWriteTableCache: the cache mode's table has the calls reaching the
// source schemas and the hit ratio, the ratio of the side with the cache
// to the same side without, the sockets path's targets of the side
// without the cache only, and the cache targets of the side with it.
func TestWriteTableCache(t *testing.T) {
	out := writeTable(t, testReportCache())
	checkRows(t, out, [][]string{
		{"Metric", "legacy", "sockets:h1", "sockets:h1+cache", "sockets:h1/legacy", "sockets:h1+cache/legacy", "sockets:h1+cache/sockets:h1"},
		{"req/s", "3,340 [3,300–3,380]", "3,510 [3,500–3,520]", "9,200 [9,000–9,400]", "1.051", "2.754", "2.621"},
		{"gateway CPU/request", "0.785 ms [0.780–0.790]", "0.610 ms [0.600–0.620]", "0.310 ms [0.300–0.320]", "0.777", "0.395", "0.508"},
		{"source schema calls/request reaching them", "6.000", "6.000", "0.060 [0.000–0.120]", "1.000", "0.010", "0.010"},
		{"response cache hit ratio", "0.000", "0.000", "0.990 [0.980–1.000]", "", "", ""},
	})
	var cacheTargets []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| sockets:h1+cache ") {
			cacheTargets = append(cacheTargets, strings.Join(strings.Fields(line), " "))
		}
	}
	if diff := cmp.Diff([]string{
		"| sockets:h1+cache | source schema calls/request reaching them ≤ 0.05 | 0.060 | missed by 0.010 |",
		"| sockets:h1+cache | req/s ≥ 1.5 × sockets:h1 | 2.621 × sockets:h1 | met |",
		"| sockets:h1+cache | CPU/request ≤ 0.7 × sockets:h1 | 0.508 × sockets:h1 | met |",
	}, cacheTargets); diff != "" {
		t.Errorf("cache targets (-want +got):\n%s\n%s", diff, out)
	}
	if !strings.Contains(out, "Cache mode: the source schemas answer Cache-Control: public, max-age=60") {
		t.Errorf("the table does not say it is the cache mode:\n%s", out)
	}
	var sides []string
	for _, tg := range testReportCache().Modes[0].Targets {
		sides = append(sides, tg.Side)
	}
	want := []string{"sockets:h1", "sockets:h1", "sockets:h1", "sockets:h1", "sockets:h1", "sockets:h1+cache", "sockets:h1+cache", "sockets:h1+cache"}
	if diff := cmp.Diff(want, sides); diff != "" {
		t.Errorf("targets' sides (-want +got):\n%s", diff)
	}

	// Without the cache mode, no cache rows.
	out = writeTable(t, testReport())
	if rows := tableRows(out); rows["response cache hit ratio"] != nil || rows["source schema calls/request reaching them"] != nil {
		t.Errorf("cache rows outside the cache mode:\n%s", out)
	}
}

func TestWriteJSON(t *testing.T) {
	for _, rep := range []*Report{testReport(), testReport3(), testReportCache()} {
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rep, &back); diff != "" {
			t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
		}
	}
	// Every side's rounds are in the JSON report.
	var b bytes.Buffer
	if err := testReport3().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sides []string
		Modes []struct {
			Samples []struct {
				Path  string
				Round int
			}
			Summary map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range doc.Modes[0].Samples {
		order = append(order, fmt.Sprintf("%d %s", s.Round, s.Path))
	}
	want := []string{"1 legacy", "1 sockets:nethttp", "1 sockets:h1", "2 legacy", "2 sockets:nethttp", "2 sockets:h1"}
	if diff := cmp.Diff(want, order); diff != "" || len(doc.Modes[0].Summary) != 3 || len(doc.Sides) != 3 {
		t.Errorf("JSON samples (-want +got):\n%s\nsides %v, %d summaries", diff, doc.Sides, len(doc.Modes[0].Summary))
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false, 4, 12*time.Second)
	p.start(1, 2, "constant", "legacy")
	p.done()
	p.start(1, 2, "constant", "sockets")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "round 1/2 constant legacy … ") || !strings.HasSuffix(lines[0], " left") {
		t.Errorf("progress lines %q, want one per run like \"round 1/2 constant legacy … 50s left\"", lines)
	}
	if got := formatLeft(80*time.Second + 400*time.Millisecond); got != "1m20s" {
		t.Errorf("formatLeft = %q, want 1m20s", got)
	}
	if got := formatLeft(-time.Second); got != "0s" {
		t.Errorf("formatLeft(negative) = %q, want 0s", got)
	}
	var nothing *progress = newProgress(nil, true, 1, time.Second)
	nothing.start(1, 1, "constant", "legacy") // no writer: no output, no ticker
	nothing.done()
	nothing.finish(time.Second)
}

// TestRunSmoke runs the whole benchmark, very short, with a freshly built
// binary: the default two sides, and three (legacy and both sockets
// engines), each round running them in turn, against the replayed source
// schemas (the default); the two sides against the embedded schemas; and
// the cache mode's two sides, where no call of the side with the cache
// reaches the source schemas in the window (the probe's request stored
// every answer), and every call of the side without does.
func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 10 gateways")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := filepath.Join(t.TempDir(), "fusion-transport")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/fusiongo/transport/cmd/fusion-transport")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	three, err := ParseSides("legacy,sockets:nethttp,sockets:h1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		sides     []Side
		subgraphs Subgraphs
		want      []string // the samples' paths, in order
		profiles  []string // per mode, MODE-NAME
		header    string
		distinct  bool
		cache     bool
	}{
		{"two", nil, "", []string{"legacy", "sockets"}, []string{"legacy", "sockets"}, "Before (legacy)", false, false},
		{"three", three, "", []string{"legacy", "sockets:nethttp", "sockets:h1"}, []string{"legacy", "sockets-nethttp", "sockets-h1"}, "sockets:h1/sockets:nethttp", false, false},
		{"schemas", nil, SubgraphsSchemas, []string{"legacy", "sockets"}, []string{"legacy", "sockets"}, "Before (legacy)", false, false},
		{"distinct", nil, "", []string{"legacy", "sockets"}, []string{"legacy", "sockets"}, "Requests: distinct", true, false},
		{"cache", nil, "", []string{"sockets", "sockets+cache"}, []string{"sockets", "sockets+cache"}, "| response cache hit ratio ", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profiles := t.TempDir()
			var progress bytes.Buffer
			rep, err := Run(context.Background(), Options{
				// A second's window: at 300 ms a loaded machine answered
				// no request in it, or so few that one at the window's
				// edge moved a ratio by a third.
				Binary: bin, Rounds: 1, Duration: time.Second, Warmup: 200 * time.Millisecond, VUs: 2,
				ProfileDir: profiles, Progress: &progress, Sides: tc.sides, Subgraphs: tc.subgraphs, Distinct: tc.distinct, Cache: tc.cache,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(rep.Modes) != 2 || !slices.Equal(rep.Sides, tc.want) {
				t.Fatalf("%d modes, sides %v; want 2, %v", len(rep.Modes), rep.Sides, tc.want)
			}
			for _, mr := range rep.Modes {
				var order []string
				for _, s := range mr.Samples {
					order = append(order, s.Path)
					if s.Requests == 0 || s.Errors != 0 || s.GatewayRequests == 0 || s.CallsPerRequest != 6 ||
						s.AllocBytesPerRequest <= 0 || s.AllocObjectsPerRequest <= 0 || s.IdleRSS <= 0 || s.PeakRSS < s.IdleRSS || s.StartupMS <= 0 {
						t.Errorf("%s %s: implausible sample %+v", mr.Mode, s.Path, s)
					}
					// With the cache, the warm-up filled it: few calls reach
					// the source schemas (a smoke test: the figures are the
					// bench's). Without it, every call does (the schemas
					// count a call when it arrives, the gateway when its
					// request is answered: at the window's edges a few
					// differ).
					cached := strings.HasSuffix(s.Path, "+cache")
					if cached && (s.SchemaCallsPerRequest > 1 || s.HitRatio < 5.0/6) {
						t.Errorf("%s %s: %.3f calls/request reached the source schemas, hit ratio %.3f; want about 0 and 1", mr.Mode, s.Path, s.SchemaCallsPerRequest, s.HitRatio)
					}
					if !cached && (abs(s.SchemaCallsPerRequest-6) > 2 || s.HitRatio > 2.0/6) {
						t.Errorf("%s %s: %.3f calls/request reached the source schemas, hit ratio %.3f; want about 6 and 0", mr.Mode, s.Path, s.SchemaCallsPerRequest, s.HitRatio)
					}
				}
				if diff := cmp.Diff(tc.want, order); diff != "" {
					t.Errorf("%s: samples in the wrong order (-want +got):\n%s", mr.Mode, diff)
				}
				for _, p := range tc.profiles {
					for _, kind := range []string{"cpu", "allocs"} {
						name := filepath.Join(profiles, mr.Mode+"-"+p+"."+kind+".pprof")
						if fi, err := os.Stat(name); err != nil || fi.Size() == 0 {
							t.Errorf("profile %s: %v", name, err)
						}
					}
				}
			}
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), tc.header) {
				t.Errorf("table lacks %q:\n%s", tc.header, table.String())
			}
			if last := tc.want[len(tc.want)-1]; !strings.Contains(progress.String(), "round 1/1 constant-latency "+last) {
				t.Errorf("progress lacks the run of %s:\n%s", last, progress.String())
			}
		})
	}
}

func TestParseSubgraphs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Subgraphs
		wantErr bool
	}{
		{"replay", SubgraphsReplay, false},
		{"schemas", SubgraphsSchemas, false},
		{"", "", true},
		{"rust", "", true},
	} {
		got, err := ParseSubgraphs(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ParseSubgraphs(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	if d := (Options{}).subgraphs().Describe(); !strings.Contains(d, "replay") {
		t.Errorf("the default describes itself as %q, want replay", d)
	}
}

// TestAPQSides: with Options.APQ each side runs with its twin, whose
// gateway has persisted queries on; both count their request bytes, the
// source schemas serve persisted queries, the table sets each twin beside
// its side and the targets check the twin against it.
func TestAPQSides(t *testing.T) {
	sides, err := ParseAPQSides("sockets:h1")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{APQ: true, Sides: sides, Environ: []string{APQVar + "=apq"}}
	got := o.sides()
	want := []Side{{Name: "sockets:h1", Switch: "1", Engine: "h1"}, {Name: "sockets:h1+apq", Switch: "1", Engine: "h1", APQ: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("sides (-want +got):\n%s", diff)
	}
	for _, s := range got {
		args, environ := gatewayCommand(o, "accounts=http://a", s)
		if !slices.Contains(args, "-count-wire") {
			t.Errorf("%s: gateway args %v without -count-wire", s.Name, args)
		}
		if on := slices.Contains(environ, APQVar+"=apq"); on != s.APQ || slices.Contains(environ, APQVar+"=off") == s.APQ {
			// The base side is off whatever this process's environment says.
			t.Errorf("%s: environment %v: persisted queries on %t, want %t", s.Name, environ, on, s.APQ)
		}
	}
	header, _ := columns(sideNames(got))
	if diff := cmp.Diff([]string{"Metric", "sockets:h1", "sockets:h1+apq", "sockets:h1+apq/sockets:h1"}, header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	summary := map[string]map[string]Summary{
		"sockets:h1":     {"request_bytes_per_call": {Median: 1000}, "cpu_ms_per_request": {Median: 1}},
		"sockets:h1+apq": {"request_bytes_per_call": {Median: 250}, "cpu_ms_per_request": {Median: 1.1}},
	}
	var met []bool
	for _, tg := range apqTargets(summary, sideNames(got)) {
		met = append(met, tg.Met)
	}
	if diff := cmp.Diff([]bool{true, false}, met); diff != "" {
		t.Errorf("targets met (bytes 0.25 ×, CPU 1.1 ×) mismatch (-want +got):\n%s", diff)
	}
	if _, err := ParseSides("sockets:h1"); err == nil {
		t.Error("ParseSides took one side: only a run with APQ may")
	}
}
