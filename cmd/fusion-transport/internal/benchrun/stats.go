package benchrun

import (
	"slices"
	"strings"
)

// Summary is a metric over the rounds of one mode and path.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize returns the median, min and max of values; the median of an
// even count is the mean of the middle two. No values give a zero Summary.
func summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[n-1]}
}

// metric is one row of the report: how to read it from a run and how to
// write it.
type metric struct {
	key   string // in the JSON report
	label string // in the table
	unit  string // after the number, with its space; may be empty
	// digits after the decimal point; thousands are grouped with commas.
	digits int
	value  func(Sample) float64
	cache  bool // a row of the cache mode's table only
}

// metrics are the per-run rows of the table, in order.
var metrics = []metric{
	{"req_per_s", "req/s", "", 0, func(s Sample) float64 { return s.RequestsPerSecond }, false},
	{"p50_ms", "p50 latency", " ms", 2, func(s Sample) float64 { return s.P50 }, false},
	{"p95_ms", "p95 latency", " ms", 2, func(s Sample) float64 { return s.P95 }, false},
	{"p99_ms", "p99 latency", " ms", 2, func(s Sample) float64 { return s.P99 }, false},
	{"cpu_ms_per_request", "gateway CPU/request", " ms", 3, func(s Sample) float64 { return s.CPUPerRequest }, false},
	{"alloc_bytes_per_request", "allocated B/request", "", 0, func(s Sample) float64 { return s.AllocBytesPerRequest }, false},
	{"alloc_objects_per_request", "allocated objects/request", "", 0, func(s Sample) float64 { return s.AllocObjectsPerRequest }, false},
	{"calls_per_request", "source schema calls/request", "", 2, func(s Sample) float64 { return s.CallsPerRequest }, false},
	{"schema_calls_per_request", "source schema calls/request reaching them", "", 3, func(s Sample) float64 { return s.SchemaCallsPerRequest }, true},
	{"hit_ratio", "response cache hit ratio", "", 3, func(s Sample) float64 { return s.HitRatio }, true},
	{"request_bytes_per_call", "request bytes/source schema call", " B", 0, func(s Sample) float64 { return s.RequestBytesPerCall }, false},
	{"idle_rss_mb", "idle RSS", " MB", 1, func(s Sample) float64 { return mb(s.IdleRSS) }, false},
	{"peak_rss_mb", "peak RSS", " MB", 1, func(s Sample) float64 { return mb(s.PeakRSS) }, false},
	{"startup_ms", "startup (exec to ready)", " ms", 1, func(s Sample) float64 { return s.StartupMS }, false},
	{"errors", "load errors", "", 0, func(s Sample) float64 { return float64(s.Errors) }, false},
}

// mb converts bytes to MB (10^6 bytes).
func mb(b int64) float64 { return float64(b) / 1e6 }

// summarizeSamples returns each metric's Summary over samples.
func summarizeSamples(samples []Sample) map[string]Summary {
	out := make(map[string]Summary, len(metrics))
	for _, m := range metrics {
		values := make([]float64, len(samples))
		for i, s := range samples {
			values[i] = m.value(s)
		}
		out[m.key] = summarize(values)
	}
	return out
}

func splitComma(list string) []string {
	var out []string
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
