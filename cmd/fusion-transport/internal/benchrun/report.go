package benchrun

import (
	"encoding/json"
	"io"
	"time"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
)

// Report is the result of Run; WriteJSON writes it as it is.
type Report struct {
	// Date is when the run started.
	Date time.Time `json:"date"`
	// Command made the report (Options.Command).
	Command string `json:"command,omitempty"`
	// Machine describes where it ran.
	Machine Machine `json:"machine"`

	// Sides names the configurations every round ran, in order (e.g.
	// legacy, sockets); the first is the one the others are compared with.
	Sides []string `json:"sides"`

	// Subgraphs names the source schemas the gateways called: replay (the
	// recorded answers) or schemas (the embedded schemas, executing).
	Subgraphs Subgraphs `json:"subgraphs"`

	// Distinct is Options.Distinct: every request its own X-Request-Id,
	// forwarded to the source schemas.
	Distinct bool `json:"distinct,omitempty"`

	// Cache is Options.Cache: the source schemas answered CacheControl and
	// every virtual user sent its own Authorization, forwarded.
	Cache bool `json:"cache,omitempty"`

	Rounds          int     `json:"rounds"`
	VUs             int     `json:"vus"`
	DurationSeconds float64 `json:"duration_s"`
	WarmupSeconds   float64 `json:"warmup_s"`

	// BinaryBytes is the size of the fusion-transport binary, which holds
	// every path and engine.
	BinaryBytes int64 `json:"binary_bytes"`

	Modes []ModeReport `json:"modes"`

	// ElapsedSeconds is the wall time of the whole run.
	ElapsedSeconds float64 `json:"elapsed_s"`
}

// Machine describes the machine of a run.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// LoadStart and LoadEnd are the 1-minute load averages of the machine
	// (/proc/loadavg) when the run started and ended: what else ran
	// besides the benchmark.
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
}

// ModeReport holds one mode's runs and their summaries.
type ModeReport struct {
	Mode      string  `json:"mode"`
	LatencyMS float64 `json:"latency_ms"`
	// Samples are the runs in the order they ran.
	Samples []Sample `json:"samples"`
	// Summary maps a side (legacy, sockets, sockets:h1, ...) to its
	// metrics, each summarized over the rounds. The metric keys are those
	// of the table's rows.
	Summary map[string]map[string]Summary `json:"summary"`
	// Targets are the sockets path's targets, checked against the
	// medians: each sockets side's against legacy, when legacy is the
	// first side.
	Targets []Target `json:"targets"`
}

// Sample is what one run (one round of one path) measured.
type Sample struct {
	// Path is the side's name (Report.Sides).
	Path  string `json:"path"`
	Round int    `json:"round"`

	// From the load process, over the measured window.
	Requests          int64   `json:"requests"`
	Errors            int64   `json:"errors"`
	RequestsPerSecond float64 `json:"req_per_s"`
	P50               float64 `json:"p50_ms"`
	P95               float64 `json:"p95_ms"`
	P99               float64 `json:"p99_ms"`
	// Percentiles is the run's latency distribution, p50 to p99.99, from
	// the load's HDR histogram (load.Quantiles); the HTML report draws it.
	Percentiles []load.Percentile `json:"percentiles,omitempty"`
	FirstError  string            `json:"first_error,omitempty"`

	// From the gateway, over the same window: its own request count is the
	// divisor.
	GatewayRequests        uint64  `json:"gateway_requests"`
	CPUPerRequest          float64 `json:"cpu_ms_per_request"`
	AllocBytesPerRequest   float64 `json:"alloc_bytes_per_request"`
	AllocObjectsPerRequest float64 `json:"alloc_objects_per_request"`
	CallsPerRequest        float64 `json:"calls_per_request"`
	// SchemaCallsPerRequest is the requests that reached the source
	// schemas (their own counts, schemas.CallsPath) per gateway request:
	// CallsPerRequest less the calls the gateway's response cache
	// answered.
	SchemaCallsPerRequest float64 `json:"schema_calls_per_request"`
	// RequestBytesPerCall is the bytes the gateway wrote to the source
	// schemas (request heads and bodies) per call, when it counted them
	// (Options.APQ); 0 otherwise.
	RequestBytesPerCall float64 `json:"request_bytes_per_call,omitempty"`
	// HitRatio is the share of the gateway's source schema calls that did
	// not reach the source schemas: 1 - SchemaCallsPerRequest /
	// CallsPerRequest, within [0, 1].
	HitRatio float64 `json:"hit_ratio"`

	// Of the gateway process.
	IdleRSS   int64   `json:"idle_rss_bytes"`
	PeakRSS   int64   `json:"peak_rss_bytes"`
	StartupMS float64 `json:"startup_ms"`
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
