package benchrun

import "fmt"

// AllocSavingPerCall is the allocation target per source schema call: the
// sockets path should allocate at least this many bytes less per gateway
// request for each source schema call the request makes (1.5 KB).
const AllocSavingPerCall = 1500

// Target is one of the benchmark's targets for the sockets path, checked
// against the medians of one mode. Targets are reported, never asserted.
type Target struct {
	// Side is the sockets side checked against legacy, in a run of three
	// sides; empty with two, where the second is the one checked.
	Side string `json:"side,omitempty"`
	// Target says what is wanted, e.g. "req/s ≥ 0.98 × legacy".
	Target string `json:"target"`
	// Got is the measured value in the target's terms.
	Got string `json:"got"`
	// Met reports whether the target was met.
	Met bool `json:"met"`
	// Result is "met" or says by how much the target was missed.
	Result string `json:"result"`
}

// ratioTarget checks the ratio of the medians of key, after/over before,
// against limit; atLeast says which side of the limit is good. base names
// before in the result ("legacy").
func ratioTarget(name, key, base string, before, after map[string]Summary, limit float64, atLeast bool) Target {
	t := Target{Target: name}
	b, a := before[key].Median, after[key].Median
	if b == 0 {
		t.Got, t.Result = "no "+base+" value", "not measured"
		return t
	}
	r := a / b
	t.Got = fmt.Sprintf("%.3f × %s", r, base)
	t.Met = r >= limit
	if !atLeast {
		t.Met = r <= limit
	}
	t.Result = "met"
	if !t.Met {
		t.Result = fmt.Sprintf("missed by %.1f%% of %s", 100*abs(r-limit), base)
	}
	return t
}

// targets checks the targets of after, a sockets side, against before,
// legacy: their medians in one mode.
func targets(before, after map[string]Summary) []Target {
	out := []Target{
		ratioTarget("req/s ≥ 0.98 × legacy", "req_per_s", "legacy", before, after, 0.98, true),
		ratioTarget("p95 ≤ 1.02 × legacy", "p95_ms", "legacy", before, after, 1.02, false),
		ratioTarget("CPU/request ≤ legacy", "cpu_ms_per_request", "legacy", before, after, 1.00, false),
	}

	calls := before["calls_per_request"].Median
	want := AllocSavingPerCall * calls
	saved := before["alloc_bytes_per_request"].Median - after["alloc_bytes_per_request"].Median
	alloc := Target{
		Target: fmt.Sprintf("allocated B/request ≥ %s lower (1.5 KB × %s calls)", formatNumber(want, 0), formatNumber(calls, 2)),
		Got:    formatNumber(saved, 0) + " B lower",
		Met:    saved >= want,
		Result: "met",
	}
	if !alloc.Met {
		alloc.Result = fmt.Sprintf("missed by %s B/request", formatNumber(want-saved, 0))
	}
	out = append(out, alloc, ratioTarget("peak RSS ≤ 1.02 × legacy", "peak_rss_mb", "legacy", before, after, 1.02, false))
	return out
}

// The response cache's targets (issue 39, set for a federation gateway
// over source schemas that answer CacheControl, distinct users), checked
// in the cache mode for each side with the cache against the same side
// without.
const (
	CacheMaxCallsPerRequest = 0.05 // calls reaching the source schemas per gateway request, at most
	CacheMinThroughput      = 1.5  // req/s with the cache over without, at least
	CacheMaxCPU             = 0.7  // CPU/request with the cache over without, at most
)

// cacheTargets checks the cache targets of side, with the cache, against
// base, the same side without: their medians in one mode.
func cacheTargets(side, base string, before, after map[string]Summary) []Target {
	calls := after["schema_calls_per_request"].Median
	reached := Target{
		Target: fmt.Sprintf("source schema calls/request reaching them ≤ %.2f", CacheMaxCallsPerRequest),
		Got:    formatNumber(calls, 3),
		Met:    calls <= CacheMaxCallsPerRequest,
		Result: "met",
	}
	if !reached.Met {
		reached.Result = fmt.Sprintf("missed by %s", formatNumber(calls-CacheMaxCallsPerRequest, 3))
	}
	out := []Target{
		reached,
		ratioTarget(fmt.Sprintf("req/s ≥ %.1f × %s", CacheMinThroughput, base), "req_per_s", base, before, after, CacheMinThroughput, true),
		ratioTarget(fmt.Sprintf("CPU/request ≤ %.1f × %s", CacheMaxCPU, base), "cpu_ms_per_request", base, before, after, CacheMaxCPU, false),
	}
	for i := range out {
		out[i].Side = side
	}
	return out
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// The targets of automatic persisted queries (Options.APQ), of each twin
// against its side.
const (
	// APQBytesTarget: request bytes per source schema call with APQ at
	// most this share of those without.
	APQBytesTarget = 0.3
	// APQCPUTarget: gateway CPU per request with APQ at most this share
	// of that without.
	APQCPUTarget = 1.0
)

// apqTargets checks each twin with persisted queries against its side
// (sides alternate: side, twin, ...).
func apqTargets(summary map[string]map[string]Summary, sides []string) []Target {
	var out []Target
	for i := 1; i < len(sides); i += 2 {
		base, twin := summary[sides[i-1]], summary[sides[i]]
		for _, t := range []struct {
			name, key string
			limit     float64
		}{
			{fmt.Sprintf("request bytes/call ≤ %.1f × without APQ", APQBytesTarget), "request_bytes_per_call", APQBytesTarget},
			{fmt.Sprintf("CPU/request ≤ %.1f × without APQ", APQCPUTarget), "cpu_ms_per_request", APQCPUTarget},
		} {
			tg := Target{Side: sides[i], Target: t.name, Result: "not measured", Got: "no value without APQ"}
			if b := base[t.key].Median; b != 0 {
				r := twin[t.key].Median / b
				tg.Got = fmt.Sprintf("%.3f ×", r)
				tg.Met = r <= t.limit
				tg.Result = "met"
				if !tg.Met {
					tg.Result = fmt.Sprintf("missed by %.1f%%", 100*(r-t.limit))
				}
			}
			out = append(out, tg)
		}
	}
	return out
}
