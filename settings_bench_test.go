//go:build unix

package transport_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// idleSetting is one configuration a user runs, as BenchmarkSettings and
// TestIdleSettingAllocs apply it: each acts on no call of theirs (no retry
// is needed, no call is shared, no hedge is sent, the limit always has a
// token), so what a call costs beyond the bare one is the setting's idle
// cost.
type idleSetting struct {
	name string
	// deadline: the caller's context has one (as every gateway request's
	// has in production); made once, outside the measured calls, so that
	// its own allocations are the caller's.
	deadline bool
	edit     func(*env.Settings) // nil: none
}

// productionSet is the typical production configuration: a deadline,
// header_timeout, request_timeout, retry, breaker and dedupe together.
func productionSet(s *env.Settings) {
	s.HeaderTimeout = 20 * time.Second
	s.RequestTimeout = 20 * time.Second
	s.Retry.MaxAttempts = 2
	s.CircuitBreaker.Enabled = env.Enabled
	s.Dedupe = env.Enabled
}

var idleSettings = []idleSetting{
	{name: "none"},
	{name: "deadline", deadline: true},
	{name: "header_timeout", edit: func(s *env.Settings) { s.HeaderTimeout = 20 * time.Second }},
	{name: "request_timeout", edit: func(s *env.Settings) { s.RequestTimeout = 20 * time.Second }},
	{name: "retry", edit: func(s *env.Settings) { s.Retry.MaxAttempts = 2 }},
	{name: "breaker", edit: func(s *env.Settings) { s.CircuitBreaker.Enabled = env.Enabled }},
	{name: "dedupe", edit: func(s *env.Settings) { s.Dedupe = env.Enabled }},
	{name: "hedge", edit: func(s *env.Settings) {
		s.Hedge.Enabled = env.Enabled
		s.Hedge.Delay.After = 50 * time.Millisecond
	}},
	{name: "rate_limit", edit: func(s *env.Settings) {
		s.RateLimit.RequestsPerSecond = 1e9 // never waits
		s.RateLimit.Burst = 1 << 20
	}},
	{name: "compression", edit: func(s *env.Settings) { s.RequestCompression.Codec = env.CodecGzip }}, // below min_bytes: sent as it is
	{name: "production", deadline: true, edit: productionSet},
}

// activeSettings are settings that act on every call of the benchmark,
// measured beside idleSettings by BenchmarkSettings (not held to
// TestIdleSettingAllocs' bounds): the response cache on for a schema whose
// answers it may not store (every call a lookup and a miss: the
// responder's answer has no Cache-Control), the same cache storing them
// (default_ttl: every call after the first a hit), automatic persisted
// queries (the 150-character text goes by hash; the responder answers it
// as the text), and the production set with the cache missing.
var activeSettings = []idleSetting{
	{name: "cache_miss", edit: func(s *env.Settings) { s.ResponseCache.Enabled = env.Enabled }},
	{name: "cache_hit", edit: func(s *env.Settings) {
		s.ResponseCache.Enabled = env.Enabled
		s.ResponseCache.DefaultTTL = time.Hour
	}},
	{name: "apq", edit: func(s *env.Settings) { s.PersistedQueries.Mode = env.PersistedQueriesAPQ }},
	{name: "production+cache_miss", deadline: true, edit: func(s *env.Settings) {
		productionSet(s)
		s.ResponseCache.Enabled = env.Enabled
	}},
}

// settingInvoker returns an invoker of path with the one source schema
// products at url under setting st, and the context its calls use (the
// benchmark's gateway request, with st's deadline).
func settingInvoker(tb testing.TB, path env.Path, url string, st idleSetting) (*transport.Transport, context.Context) {
	tb.Helper()
	cfg := config(path, "products", url)
	cfg.ForwardHeaders = []string{"Authorization", "X-Request-Id"}
	if st.edit != nil {
		st.edit(&cfg.Defaults)
	}
	inv := newInvoker(tb, cfg)
	ctx := gatewayCtx("Authorization", benchAuthorization[0], "X-Request-Id", benchRequestID[0])
	if st.deadline {
		c, cancel := context.WithTimeout(ctx, time.Hour)
		tb.Cleanup(cancel)
		ctx = c
	}
	return inv, ctx
}

// BenchmarkSettings measures one call per iteration, as BenchmarkCall does
// (a 300-byte query, a 1 KiB answer from the zero-allocation responder in
// a child process, client-cpu-ns/op the client's CPU alone), under each
// setting of idleSettings and the production set, for Post and PostFunc on
// every path: what each setting costs a call it does not act on; and
// under each of activeSettings, which act on every call.
//
//	go test -run '^$' -bench BenchmarkSettings -benchtime 20000x -count 4 .
func BenchmarkSettings(b *testing.B) {
	srv := rawhttp.StartBench(b, "TestBenchResponderProcess", benchResponderEnv, benchAnswer, true)
	var buf []byte
	read := func(resp *http.Response) error { return rawhttp.ReadBody(resp, nil, &buf, len(benchAnswer)) }
	for _, path := range []env.Path{pathH1, env.PathSockets, env.PathLegacy} {
		for _, st := range append(idleSettings[:len(idleSettings):len(idleSettings)], activeSettings...) {
			b.Run(string(path)+"/"+st.name, func(b *testing.B) {
				inv, ctx := settingInvoker(b, path, srv.URL+"/graphql", st)
				b.Run("PostFunc", func(b *testing.B) {
					srv.Measure(b, warmCalls, func() error { return inv.PostFunc(ctx, "products", benchQuery, read) })
				})
				b.Run("Post", func(b *testing.B) {
					srv.Measure(b, warmCalls, func() error {
						resp, err := inv.Post(ctx, "products", benchQuery)
						return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
					})
				})
			})
		}
	}
}
