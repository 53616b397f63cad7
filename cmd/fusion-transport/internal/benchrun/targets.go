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

// targets checks the targets of after, a sockets side, against before,
// legacy: their medians in one mode.
func targets(before, after map[string]Summary) []Target {
	med := func(s map[string]Summary, key string) float64 { return s[key].Median }

	// ratioTarget checks after/before against limit; atLeast says which
	// side of the limit is good.
	ratioTarget := func(name, key string, limit float64, atLeast bool) Target {
		t := Target{Target: name}
		b, a := med(before, key), med(after, key)
		if b == 0 {
			t.Got, t.Result = "no legacy value", "not measured"
			return t
		}
		r := a / b
		t.Got = fmt.Sprintf("%.3f × legacy", r)
		t.Met = r >= limit
		if !atLeast {
			t.Met = r <= limit
		}
		t.Result = "met"
		if !t.Met {
			t.Result = fmt.Sprintf("missed by %.1f%% of legacy", 100*abs(r-limit))
		}
		return t
	}

	out := []Target{
		ratioTarget("req/s ≥ 0.98 × legacy", "req_per_s", 0.98, true),
		ratioTarget("p95 ≤ 1.02 × legacy", "p95_ms", 1.02, false),
		ratioTarget("CPU/request ≤ legacy", "cpu_ms_per_request", 1.00, false),
	}

	calls := med(before, "calls_per_request")
	want := AllocSavingPerCall * calls
	saved := med(before, "alloc_bytes_per_request") - med(after, "alloc_bytes_per_request")
	alloc := Target{
		Target: fmt.Sprintf("allocated B/request ≥ %s lower (1.5 KB × %s calls)", formatNumber(want, 0), formatNumber(calls, 2)),
		Got:    formatNumber(saved, 0) + " B lower",
		Met:    saved >= want,
		Result: "met",
	}
	if !alloc.Met {
		alloc.Result = fmt.Sprintf("missed by %s B/request", formatNumber(want-saved, 0))
	}
	out = append(out, alloc, ratioTarget("peak RSS ≤ 1.02 × legacy", "peak_rss_mb", 1.02, false))
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
