package fleetlimit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/middleware"
)

// nopTransport answers every request with one response, allocating
// nothing: what the benchmarks measure is the limit's check alone.
type nopTransport struct{ resp *http.Response }

func (n nopTransport) RoundTrip(*http.Request) (*http.Response, error) { return n.resp, nil }

// BenchmarkRateLimitCheck: one call through the rate limit's middleware,
// on the local store (the token bucket) and on the redis store (this
// package's check against a real Redis on loopback), without a wait and
// with one; a limit far above the calls' rate, so that every call is let
// through. It reports the allocations of a call (-benchmem) and, on the
// redis store, the Redis commands per call (round_trips/op), handshakes
// of new connections included. The /parallel forms run the calls from
// GOMAXPROCS×8 goroutines, where a check carries several calls.
func BenchmarkRateLimitCheck(b *testing.B) {
	r := redistest.StartRedis(b)
	for _, tc := range []struct {
		name     string
		redis    bool
		wait     time.Duration
		parallel bool
	}{
		{"local", false, 0, false},
		{"redis", true, 0, false},
		{"redis/wait", true, time.Second, false},
		{"local/parallel", false, 0, true},
		{"redis/parallel", true, 0, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 1e9, Burst: 1 << 30, Wait: tc.wait}
			var g *rig
			if tc.redis {
				g = newRig(b, r, r.Prefix+tc.name+":", cfg.RequestsPerSecond, cfg.Burst, time.Second, nil, nil)
				cfg.Shared = g.l
			}
			rt := middleware.NewRateLimiter(cfg).Middleware()(nopTransport{&http.Response{StatusCode: 200, Body: http.NoBody}})
			req, _ := http.NewRequestWithContext(context.Background(), "POST", "http://products.test/graphql", nil)
			call := func() {
				if _, err := rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
			call() // the connection made and the script loaded
			var before int64
			if g != nil {
				before = g.wire.Wire()[1]
			}
			b.ReportAllocs()
			b.ResetTimer()
			if tc.parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			} else {
				for range b.N {
					call()
				}
			}
			b.StopTimer()
			if g != nil {
				b.ReportMetric(float64(g.wire.Wire()[1]-before)/float64(b.N), "round_trips/op")
				if h := g.l.Health(); h.StoreErrors > 0 {
					b.Fatalf("%d store errors, the last: %s", h.StoreErrors, h.LastError)
				}
			}
		})
	}
}
