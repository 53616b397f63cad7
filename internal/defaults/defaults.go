// Package defaults holds the values that package env (the configuration
// model) and package middleware (usable on its own, without env) both
// name: the defaults of retries, the retry budget, the circuit breaker,
// hedging, request compression and persisted queries, and the codec
// names. Each is defined here once; env's built-in settings and
// middleware's exported Default* constants read it, so that neither
// package imports the other. It imports only the standard library's time,
// and nothing of this module.
package defaults

import "time"

// Retries (env.RetrySettings, middleware.RetryConfig).
const (
	RetryWaitMin = 100 * time.Millisecond
	RetryWaitMax = 2 * time.Second
)

// RetryStatuses returns the statuses retried by default, a new slice on
// every call: 429, 502, 503 and 504. 500 is not among them: GraphQL
// servers answer with it for errors that a retry only repeats.
func RetryStatuses() []int { return []int{429, 502, 503, 504} }

// The retry budget (env.RetrySettings, middleware.RetryBudgetConfig).
const (
	BudgetRatio        = 0.2
	BudgetMinPerSecond = 10
)

// The circuit breaker (env.BreakerSettings, middleware.BreakerConfig).
const (
	BreakerFailureRatio     = 0.5
	BreakerMinRequests      = 20
	BreakerWindow           = 10 * time.Second
	BreakerOpenFor          = 5 * time.Second
	BreakerHalfOpenRequests = 1
)

// BreakerStatuses returns the statuses that count as a breaker's failures
// by default, a new slice on every call: 500, 502, 503 and 504.
func BreakerStatuses() []int { return []int{500, 502, 503, 504} }

// Hedging (env.HedgeSettings, middleware.HedgeConfig).
const (
	// HedgeMaxExtra is the default of the hedges a query may send.
	HedgeMaxExtra = 1
	// MaxHedgeExtra is the most hedges a query may send.
	MaxHedgeExtra = 16
)

// Request compression (env.RequestCompressionSettings,
// middleware.CompressConfig): the codecs, as Content-Encoding names them,
// and the smallest body compressed by default.
const (
	CodecGzip        = "gzip"
	CodecZstd        = "zstd"
	CompressMinBytes = 1024
)

// Automatic persisted queries (env.PersistedQueriesSettings,
// middleware.PersistedQueriesConfig): the longest URL of a query sent as
// GET by default, 8 KiB; a longer one goes by POST.
const PersistedQueryMaxURLBytes = 8 << 10
