// Package load is a closed-loop HTTP load generator for the gateway
// benchmark: a fixed number of virtual users, each on one keep-alive
// connection, each sending its next request when the last answer has
// arrived, as k6 runs the benchmark's deep-recursion scenario.
//
//	res, err := load.Run(ctx, load.Config{URL: "http://127.0.0.1:4000/graphql", VUs: 50, Duration: 10 * time.Second, Warmup: 2 * time.Second})
//	if err != nil { ... }
//	fmt.Printf("%.0f req/s, p95 %.2f ms\n", res.RequestsPerSecond, res.P95)
//
// A run is a warm-up followed by the measured window. Answers that complete
// inside the window count, and their latencies go into an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go), from which the percentiles come;
// answers of the warm-up, and those still in flight when the window ends, do
// not count.
//
// The virtual users speak HTTP/1.1 themselves: a request's bytes are built
// once and written as they are, and answers are read with
// http.ReadResponse. That keeps the load generator's own CPU use small, which
// matters when it shares a small machine with the gateway it measures.
package load

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fusiongo/transport/internal/redact"
)

// DeepRecursionQuery is the benchmark's query, a copy of
// /work/shared/bench/deep-recursion.graphql.
//
//go:embed deep-recursion.graphql
var DeepRecursionQuery string

// DefaultBody is the body each virtual user sends by default: the
// deep-recursion query as a GraphQL-over-HTTP request.
var DefaultBody = QueryBody(DeepRecursionQuery, "TestQuery")

// QueryBody returns the GraphQL-over-HTTP request body for a query
// document.
func QueryBody(query, operationName string) []byte {
	b, err := json.Marshal(struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName,omitempty"`
	}{query, operationName})
	if err != nil { // a struct of two strings always encodes
		panic(err)
	}
	return b
}

// The lines the load command writes on stderr when the measured window
// starts and ends; the benchmark waits for them to sample the gateway.
const (
	MeasureLine   = "load: measuring"
	WindowEndLine = "load: window ended"
)

// RequestIDHeader is the header that Config.Distinct sets on every
// request, to a value such as "vu007-000000004711".
const RequestIDHeader = "X-Request-Id"

// UserHeader is the header that Config.Users sets on every request of a
// virtual user, to UserPrefix and the user's number: "Bearer vu007".
const (
	UserHeader = "Authorization"
	UserPrefix = "Bearer "
)

// Defaults of Config.
const (
	DefaultVUs      = 50
	DefaultDuration = 10 * time.Second
	DefaultTimeout  = 30 * time.Second
)

// Config describes one run. The zero value of every field but URL means its
// default.
type Config struct {
	// URL is where the requests go: an http URL (https is not supported).
	URL string

	// VUs is the number of virtual users, each with its own connection.
	// Default: 50.
	VUs int

	// Duration is the measured window. Default: 10s.
	Duration time.Duration

	// Warmup runs before the window; its answers are not counted. Zero: no
	// warm-up.
	Warmup time.Duration

	// Body is the POST body of every request. Nil: DefaultBody.
	Body []byte

	// ContentType of the body. Empty: application/json.
	ContentType string

	// Distinct gives every request of the run its own RequestIDHeader
	// value (the user's number and its count of requests, in fixed-width
	// digits written in place: no allocation per request), so that no two
	// requests in flight are identical to a gateway that deduplicates by a
	// forwarded header, as real traffic from different users is. Default:
	// false, every request the same bytes.
	Distinct bool

	// Users gives every virtual user its own UserHeader (a bearer token
	// naming it), sent with each of its requests, as different users'
	// requests carry different credentials: a gateway that forwards it
	// sends each user's source schema requests with the user's own.
	// Default: false, no such header.
	Users bool

	// Timeout bounds one request, from writing it to the end of the
	// answer; a request that runs out counts as an error and its
	// connection is dropped. Default: 30s.
	Timeout time.Duration

	// OnMeasure, if set, is called when the measured window starts, and
	// OnWindowEnd when it ends (before the requests still in flight have
	// finished). The benchmark samples the gateway's CPU time at these
	// moments.
	OnMeasure   func()
	OnWindowEnd func()
}

func (c Config) vus() int {
	if c.VUs <= 0 {
		return DefaultVUs
	}
	return c.VUs
}

func (c Config) duration() time.Duration {
	if c.Duration <= 0 {
		return DefaultDuration
	}
	return c.Duration
}

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c Config) body() []byte {
	if c.Body == nil {
		return DefaultBody
	}
	return c.Body
}

func (c Config) contentType() string {
	if c.ContentType == "" {
		return "application/json"
	}
	return c.ContentType
}

// Result is what a run measured. Latencies are in milliseconds.
type Result struct {
	// Requests counts the answers with status 200 completed in the window.
	Requests int64 `json:"requests"`
	// Errors counts the requests that failed in the window: a status other
	// than 200, or a connection or timeout error.
	Errors int64 `json:"errors"`
	// Seconds is the length of the measured window.
	Seconds float64 `json:"seconds"`
	// RequestsPerSecond is Requests divided by Seconds.
	RequestsPerSecond float64 `json:"req_per_s"`
	// P50, P95, P99, Mean and Max describe the latencies of the counted
	// answers, from writing the request to reading the last byte of the
	// answer.
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Mean float64 `json:"mean_ms"`
	Max  float64 `json:"max_ms"`
	// Percentiles is the latency distribution of the counted answers at
	// Quantiles, from the same HDR histogram: what the bench's pictures
	// draw. Empty when nothing was counted.
	Percentiles []Percentile `json:"percentiles,omitempty"`
	// VUs is the number of virtual users of the run.
	VUs int `json:"vus"`
	// FirstError describes one error of the run (warm-up included), empty
	// if there was none.
	FirstError string `json:"first_error,omitempty"`
}

// Percentile is one point of a latency distribution.
type Percentile struct {
	Quantile float64 `json:"q"`  // in percent: 99.9 for p99.9
	MS       float64 `json:"ms"` // the latency at it, in milliseconds
}

// Quantiles are the points of Result.Percentiles, p50 to p99.99.
var Quantiles = []float64{50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}

// target is the parsed URL: where to dial and the request line's parts.
type target struct {
	addr, host, path string
}

// parseTarget parses Config.URL. Its errors show the URL with its password
// hidden (redact.URL): the load command prints them.
func parseTarget(raw string) (target, error) {
	u, err := redact.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("invalid url %q: %w", redact.URL(raw), err)
	}
	if u.Scheme != "http" {
		return target{}, fmt.Errorf("invalid url %q: want an http URL", redact.URL(raw))
	}
	if u.Host == "" {
		return target{}, fmt.Errorf("invalid url %q: no host", redact.URL(raw))
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	return target{addr: addr, host: u.Host, path: u.RequestURI()}, nil
}

// errStatus is a completed answer with a status other than 200.
var errStatus = errors.New("status not 200")
