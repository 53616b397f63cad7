// Package canary is the vocabulary of a canary rollout of the sockets path
// (FUSION_SOCKETS_TRANSPORT=canary:RATE): per source schema, a share of
// gateway requests is served by sockets instead of legacy; the outcomes of
// both are counted in sliding windows of the latest requests, and a schema
// whose sockets side fails more often than its legacy side (by more than
// canary.max_error_ratio_delta, once each side has canary.min_requests)
// falls back to share zero at once, for canary.cooldown, then starts again.
// A healthy schema's share may grow by canary.step every canary.interval,
// up to canary.max_rate.
//
// The transport judges; this package names what it reports. Every change of
// a schema's share is an Event, handed to the hook of
// transport.WithCanaryHook; the state of every canaried schema is a State,
// which transport.Transport.CanaryHandler serves as JSON and the status page
// shows. The keys are in docs/configuration.md; the rollout in
// docs/rollout.md.
package canary

import (
	"encoding/json"
	"time"
)

// Reason says why a share changed.
type Reason string

const (
	// Start: the schema entered the canary (at startup, or added by a
	// reload) at the starting rate.
	Start Reason = "start"
	// Fallback: sockets' error ratio exceeded legacy's by more than the
	// threshold; the share is zero until CooldownUntil.
	Fallback Reason = "fallback"
	// Restart: the cooldown ended; the share is the starting rate again.
	Restart Reason = "restart"
	// Grow: the schema was healthy for an interval; the share grew by a
	// step.
	Grow Reason = "grow"
)

// Event is one change of a schema's share.
type Event struct {
	// Schema is the source schema whose share changed.
	Schema string
	// Reason is why it changed: Start, Fallback, Restart or Grow.
	Reason Reason
	// From and To are the share before and after, from 0 to 1.
	From, To float64
	// At is when the change took effect.
	At time.Time
	// CooldownUntil is when a fallback's cooldown ends; zero otherwise.
	CooldownUntil time.Time
	// Legacy and Sockets are the windows when the change was decided.
	Legacy, Sockets Counts
}

// Counts describe one window: the requests in it, the failed ones
// (transport error, timeout or 5xx), their ratio, and latency quantiles
// (time to the response headers, or to the error).
type Counts struct {
	// Requests is how many outcomes the window holds (at most the
	// window's size).
	Requests int `json:"requests"`
	// Failures is how many of them failed.
	Failures int `json:"failures"`
	// ErrorRatio is Failures / Requests; 0 for an empty window.
	ErrorRatio float64 `json:"error_ratio"`
	// P50, P90 and P99 are the latency quantiles of the window's
	// requests; zero for an empty window. JSON carries them as p50_ms,
	// p90_ms and p99_ms (MarshalJSON).
	P50 time.Duration `json:"-"`
	P90 time.Duration `json:"-"`
	P99 time.Duration `json:"-"`
}

// MarshalJSON writes the quantiles in milliseconds beside the counts.
func (c Counts) MarshalJSON() ([]byte, error) {
	type plain Counts
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return json.Marshal(struct {
		plain
		P50 float64 `json:"p50_ms"`
		P90 float64 `json:"p90_ms"`
		P99 float64 `json:"p99_ms"`
	}{plain(c), ms(c.P50), ms(c.P90), ms(c.P99)})
}

// State is the canary state of every canaried schema, as the handler
// serves it.
type State struct {
	// Rate is the starting share of every canaried schema (canary.rate).
	Rate float64 `json:"rate"`
	// MaxRate is the share at which growth stops (canary.max_rate).
	MaxRate float64 `json:"max_rate"`
	// Schemas holds each canaried schema's state, by name.
	Schemas map[string]SchemaState `json:"schemas"`
	// Settings are the judge's settings in force, as the canary keys
	// name them (durations as text, such as "30s").
	Settings struct {
		Step               float64 `json:"step"`
		Interval           string  `json:"interval"`
		Window             int     `json:"window"`
		MinRequests        int     `json:"min_requests"`
		MaxErrorRatioDelta float64 `json:"max_error_ratio_delta"`
		Cooldown           string  `json:"cooldown"`
	} `json:"settings"`
}

// SchemaState is one schema's canary state.
type SchemaState struct {
	// Share is the share of the schema's gateway requests that sockets
	// serves now, from 0 to 1.
	Share float64 `json:"share"`
	// Legacy and Sockets are the two paths' windows now.
	Legacy  Counts `json:"legacy"`
	Sockets Counts `json:"sockets"`
	// CooldownUntil is when a fallback's cooldown ends; nil outside one.
	CooldownUntil *time.Time `json:"cooldown_until,omitempty"`
	// LastChange is when the share last changed, and LastReason why.
	LastChange time.Time `json:"last_change"`
	LastReason Reason    `json:"last_reason"`
	// Fallbacks counts the schema's fallbacks since it entered the
	// canary.
	Fallbacks int64 `json:"fallbacks"`
}
