package transport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// entityBody is an entity request of n representations, as a gateway sends
// one with its variables: a query, well over min_bytes for n >= 20.
func entityBody(id string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"query":"query Entities($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { upc name price inStock } } }","variables":{"id":%q,"representations":[`, id)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"__typename":"Product","upc":"%010d"}`, i)
	}
	b.WriteString("]}}")
	return b.String()
}

// decodedRequest is one request as a decoding server got it: the
// Content-Encoding and Content-Length it carried, the bytes on the wire
// and the body they decode to.
type decodedRequest struct {
	proto    int // the HTTP major version
	encoding string
	length   int64
	wire     []byte
	body     string
}

// decodingServer is a source schema that decodes a gzip or zstd request
// body, as a server that accepts Content-Encoding does, and records each
// request. It answers status(n) for the n-th request (from 1), 200 when
// status is nil.
type decodingServer struct {
	*schemaServer
	mu     sync.Mutex
	got    []decodedRequest
	status func(n int) int
}

func newDecodingServer(t *testing.T, status func(n int) int) *decodingServer {
	t.Helper()
	return newDecodingWireServer(t, wiretest.Options{}, status)
}

// newDecodingWireServer is newDecodingServer on the server o describes
// (its Handler is the decoding one).
func newDecodingWireServer(t *testing.T, o wiretest.Options, status func(n int) int) *decodingServer {
	t.Helper()
	s := &decodingServer{status: status}
	o.Handler = func(w http.ResponseWriter, r *http.Request) {
		wire, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server reading the body: %v", err)
		}
		d := decodedRequest{proto: r.ProtoMajor, encoding: r.Header.Get("Content-Encoding"), length: r.ContentLength, wire: wire}
		switch d.encoding {
		case "":
			d.body = string(wire)
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(wire))
			if err == nil {
				var b []byte
				b, err = io.ReadAll(zr)
				d.body = string(b)
			}
			if err != nil {
				t.Errorf("server: gzip body: %v", err)
			}
		case "zstd":
			zd, _ := zstd.NewReader(nil)
			b, err := zd.DecodeAll(wire, nil)
			zd.Close()
			if err != nil {
				t.Errorf("server: zstd body: %v", err)
			}
			d.body = string(b)
		default:
			d.body = string(wire) // an encoding the caller set: kept as sent
		}
		s.mu.Lock()
		s.got = append(s.got, d)
		n := len(s.got)
		s.mu.Unlock()
		st := http.StatusOK
		if s.status != nil {
			st = s.status(n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		io.WriteString(w, `{"data":{"ok":true}}`)
	}
	s.schemaServer = newWireServer(t, o)
	return s
}

func (s *decodingServer) requests() []decodedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]decodedRequest(nil), s.got...)
}

// compressed returns settings that compress with codec from min_bytes on.
func compressed(codec string, minBytes int) func(*env.SourceSchema) {
	return func(s *env.SourceSchema) {
		s.RequestCompression = env.RequestCompressionSettings{Codec: codec, MinBytes: minBytes}
	}
}

// TestShapingCompression: on every path and engine, with each codec, a
// server that decodes Content-Encoding gets the original body of a Post
// and of a Do at least min_bytes long, with Content-Length the compressed
// length; a body under min_bytes, a GET, and a Do that carries its own
// Content-Encoding go as they were.
func TestShapingCompression(t *testing.T) {
	large := entityBody("large", 100)
	small := `{"query":"{ ok }"}`
	for _, p := range paths {
		for _, codec := range []string{"gzip", "zstd"} {
			t.Run(string(p)+"/"+codec, func(t *testing.T) {
				srv := newDecodingServer(t, nil)
				inv := newInvoker(t, withSchema(p, srv.URL(), compressed(codec, 1024)))
				type call struct {
					name     string
					send     func() (*http.Response, error)
					body     string
					encoding string // what the server must see
				}
				do := func(method, body, encoding string) func() (*http.Response, error) {
					return func() (*http.Response, error) {
						var r io.Reader
						if body != "" {
							r = strings.NewReader(body)
						}
						req, err := http.NewRequest(method, srv.URL(), r)
						if err != nil {
							return nil, err
						}
						req.Header.Set("Content-Type", "application/json")
						if encoding != "" {
							req.Header.Set("Content-Encoding", encoding)
						}
						return inv.Do(context.Background(), "products", req)
					}
				}
				for _, c := range []call{
					{"Post large", func() (*http.Response, error) { return inv.Post(context.Background(), "products", []byte(large)) }, large, codec},
					{"Post small", func() (*http.Response, error) { return inv.Post(context.Background(), "products", []byte(small)) }, small, ""},
					{"Do large", do(http.MethodPost, large, ""), large, codec},
					{"Do small", do(http.MethodPost, small, ""), small, ""},
					{"Do encoded by the caller", do(http.MethodPost, large, "identity-test"), large, "identity-test"},
					{"GET", do(http.MethodGet, "", ""), "", ""},
				} {
					before := len(srv.requests())
					resp, err := c.send()
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					readAll(t, resp)
					got := srv.requests()
					if len(got) != before+1 {
						t.Fatalf("%s: the server got %d requests, want 1", c.name, len(got)-before)
					}
					d := got[before]
					if d.encoding != c.encoding {
						t.Errorf("%s: Content-Encoding %q, want %q", c.name, d.encoding, c.encoding)
					}
					if d.body != c.body {
						t.Errorf("%s: the server decoded %d bytes, want the %d sent", c.name, len(d.body), len(c.body))
					}
					if c.encoding == codec {
						if d.length != int64(len(d.wire)) || len(d.wire) >= len(c.body) {
							t.Errorf("%s: Content-Length %d, %d bytes on the wire for a %d-byte body: want the compressed length, smaller", c.name, d.length, len(d.wire), len(c.body))
						}
						t.Logf("%s: %d bytes sent as %d", c.name, len(c.body), len(d.wire))
					}
				}
			})
		}
	}
}

// TestShapingCompressionResend: a query retried after a 503, and one
// hedged, carries on every try the same compressed bytes, which decode to
// the original body.
func TestShapingCompressionResend(t *testing.T) {
	body := entityBody("retried", 50)
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newDecodingServer(t, func(n int) int {
				if n < 3 {
					return http.StatusServiceUnavailable
				}
				return http.StatusOK
			})
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				compressed("zstd", 512)(s)
				s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
			}))
			st, err := call(inv, body)
			if err != nil || st != http.StatusOK {
				t.Fatalf("Post: %d, %v; want 200 on the third try", st, err)
			}
			got := srv.requests()
			if len(got) != 3 {
				t.Fatalf("the server got %d tries, want 3", len(got))
			}
			for i, d := range got {
				if d.encoding != "zstd" || !bytes.Equal(d.wire, got[0].wire) || d.body != body {
					t.Errorf("try %d: Content-Encoding %q, %d bytes, same as the first: %t, decodes to the body: %t",
						i+1, d.encoding, len(d.wire), bytes.Equal(d.wire, got[0].wire), d.body == body)
				}
			}
		})
	}
}

// TestShapingCompressionRetryHedged: a compressed query that the server
// answered 503 is retried, and the retry, held by the server, is hedged:
// retry sends it again compressed, and hedge still reads its kind from the
// uncompressed body. All three tries carry the same compressed bytes with
// their own length, each decoding to the caller's body.
func TestShapingCompressionRetryHedged(t *testing.T) {
	body := entityBody("x", 100)
	for _, codec := range []string{"gzip", "zstd"} {
		for _, p := range paths {
			t.Run(codec+"/"+string(p), func(t *testing.T) {
				third := make(chan struct{})
				srv := newDecodingServer(t, func(n int) int {
					switch n {
					case 1:
						return http.StatusServiceUnavailable
					case 2: // the retry: held until its hedge arrives
						select {
						case <-third:
						case <-time.After(resilienceGuard):
							t.Errorf("the held retry was never hedged")
						}
					case 3:
						close(third)
					}
					return http.StatusOK
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					compressed(codec, 1024)(s)
					s.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
					s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 100 * time.Millisecond}}
				}))
				st, err := call(inv, body)
				if err != nil || st != http.StatusOK {
					t.Fatalf("Post: %d, %v; want 200", st, err)
				}
				got := srv.requests()
				if len(got) != 3 {
					t.Fatalf("the server got %d tries, want 3 (first, retry, the retry's hedge)", len(got))
				}
				for i, d := range got {
					if d.encoding != codec || d.body != body || d.length != int64(len(d.wire)) {
						t.Errorf("try %d: Content-Encoding %q, Content-Length %d of %d bytes, decodes to the body: %t",
							i+1, d.encoding, d.length, len(d.wire), d.body == body)
					}
				}
			})
		}
	}
}

// TestShapingRateLimitFailFast sends 1,000 Posts, each with its own id, at
// 500/s (a 2ms ticker) against a limit of 100/s with a burst of 10 and no
// wait, on every path and engine.
//
// The bound: a token bucket of rate r and burst b that starts full hands
// out at most b + r*T tokens over T. T is measured from before the first
// Post to after the last one returned, which holds every token taken, so
// the server may see at most 10 + 100*T requests (+1 for rounding); that
// upper bound is strict. The lower bound is loose, against a slow
// machine: at least half of 100*T, and at least the burst. Nothing else
// is timed. Every refused Post fails with ErrRateLimited, naming the
// schema, and its id never reaches the server; no id reaches it twice.
func TestShapingRateLimitFailFast(t *testing.T) {
	const total, rps, burst = 1000, 100, 10
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("X-Test-Id")
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), id) {
					t.Errorf("body %q does not carry its id %q", b, id)
				}
				mu.Lock()
				seen[id]++
				mu.Unlock()
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			var limited atomic.Int64
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: rps, Burst: burst, Wait: env.Off}
				s.Headers.Forward = []string{"X-Test-Id"}
			}))
			type outcome struct {
				id  string
				err error
			}
			results := make(chan outcome, total)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			start := time.Now()
			var wg sync.WaitGroup
			for i := range total {
				<-tick.C
				id := fmt.Sprintf("req-%04d", i)
				wg.Go(func() {
					ctx := gatewayCtx("X-Test-Id", id)
					resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }","variables":{"id":"`+id+`"}}`))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					results <- outcome{id, err}
				})
			}
			wg.Wait()
			elapsed := time.Since(start).Seconds()
			close(results)
			var ok, refused int
			for r := range results {
				mu.Lock()
				n := seen[r.id]
				mu.Unlock()
				switch {
				case r.err == nil:
					ok++
					if n != 1 {
						t.Errorf("%s succeeded and reached the server %d times, want once", r.id, n)
					}
				case errors.Is(r.err, fault.ErrRateLimited):
					refused++
					limited.Add(1)
					if n != 0 {
						t.Errorf("%s was refused but reached the server %d times", r.id, n)
					}
					if !strings.Contains(r.err.Error(), `source schema "products"`) || !strings.Contains(r.err.Error(), "(100/s, burst 10)") {
						t.Errorf("error %q does not name the schema and the limit", r.err)
					}
				default:
					t.Errorf("%s: %v, want success or ErrRateLimited", r.id, r.err)
				}
			}
			mu.Lock()
			atServer := len(seen)
			mu.Unlock()
			upper := burst + rps*elapsed + 1
			lower := max(burst, rps*elapsed/2)
			t.Logf("%d Posts over %.2fs: %d reached the server (bound %.0f..%.0f), %d refused", total, elapsed, atServer, lower, upper, refused)
			if ok+refused != total || atServer != ok {
				t.Errorf("%d succeeded, %d refused, %d ids at the server: want %d in all, every success at the server", ok, refused, atServer, total)
			}
			if float64(atServer) > upper {
				t.Errorf("%d requests reached the server over %.2fs, want at most %.0f (10 + 100/s × T + 1)", atServer, elapsed, upper)
			}
			if float64(atServer) < min(lower, total) {
				t.Errorf("%d requests reached the server over %.2fs, want at least %.0f", atServer, elapsed, lower)
			}
		})
	}
}

// TestShapingRateLimitWait: with a wait, a Post beyond the limit waits for
// its turn when the turn comes within the wait and before its deadline,
// and fails at once with ErrRateLimited otherwise; no caller is let
// through after its deadline passed, and no refused Post reaches the
// server. An AttemptMiddleware, inside the limit, sees each Post the
// limit let through, and when: a Post with a 10ms deadline that got the
// one turn at once may still run out of time in the exchange itself on a
// loaded machine (a dial alone can take longer), which is no wait past
// its deadline. The order of the turns is middleware.TestRateLimitOrder's.
func TestShapingRateLimitWait(t *testing.T) {
	const callers = 12
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}      // by X-Test-Id: requests the server got
			admitted := map[string]bool{} // by X-Test-Id: let through by the limit, with its context still live
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen[r.Header.Get("X-Test-Id")]++
				mu.Unlock()
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			admit := func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					mu.Lock()
					admitted[req.Header.Get("X-Test-Id")] = req.Context().Err() == nil
					mu.Unlock()
					return next.RoundTrip(req)
				})
			}
			// A turn every 100ms, one at once; waits up to 400ms: of the
			// callers at once, about four wait and the rest are refused. A
			// caller with a 10ms deadline gets a turn only if it is the
			// first: the next is 90ms past its deadline, a margin that no
			// skew between the callers' starts comes near.
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 10, Burst: 1, Wait: 400 * time.Millisecond}
				s.Headers.Forward = []string{"X-Test-Id"}
			}), transport.WithSchemaOptions("products", transport.SchemaOptions{
				AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{admit},
			}))
			type outcome struct {
				id       string
				deadline bool
				err      error
			}
			results := make(chan outcome, callers)
			var wg sync.WaitGroup
			for i := range callers {
				id := fmt.Sprintf("w-%02d", i)
				withDeadline := i%3 == 2
				wg.Go(func() {
					ctx := gatewayCtx("X-Test-Id", id)
					if withDeadline {
						// Shorter than any wait for a turn but the first.
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, 10*time.Millisecond)
						defer cancel()
					}
					resp, err := inv.Post(ctx, "products", []byte(queryBody))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					results <- outcome{id, withDeadline, err}
				})
			}
			wg.Wait()
			close(results)
			var ok, refused, late int
			mu.Lock()
			defer mu.Unlock()
			for r := range results {
				n := seen[r.id]
				live, in := admitted[r.id]
				if in && !live {
					t.Errorf("%s (deadline %t) was let through after its deadline passed: it waited past it", r.id, r.deadline)
				}
				switch {
				case r.err == nil:
					ok++
					if n != 1 {
						t.Errorf("%s succeeded and reached the server %d times", r.id, n)
					}
				case errors.Is(r.err, fault.ErrRateLimited):
					refused++
					if in || n != 0 {
						t.Errorf("%s was refused but was let through (%t) or reached the server (%d times)", r.id, in, n)
					}
				case r.deadline && in && errors.Is(r.err, context.DeadlineExceeded):
					late++ // its turn came in time; the exchange ran out of it
				default:
					t.Errorf("%s (deadline %t, let through %t): %v, want success or ErrRateLimited", r.id, r.deadline, in, r.err)
				}
			}
			t.Logf("%d callers at once: %d served in turn, %d refused, %d let through whose exchange outlived its deadline", callers, ok, refused, late)
			if ok == 0 || refused == 0 {
				t.Errorf("%d served, %d refused: want some of each", ok, refused)
			}
		})
	}
}

// TestShapingRateLimitRetryAndBreaker: a retry takes a turn of its own; a
// retry the limit refuses ends the call with ErrRateLimited, which the
// circuit breaker does not count.
func TestShapingRateLimitRetryAndBreaker(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newDecodingServer(t, func(int) int { return http.StatusServiceUnavailable })
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 2}
				s.Retry = env.RetrySettings{MaxAttempts: 5, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond, BudgetRatio: env.RatioOff}
				// Opens once three outcomes in the window are all failures.
				s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 3, FailureRatio: 1}
			}))
			// Two tries reach the server (the burst), the third is refused
			// and the call ends: refusals are not retried.
			_, err := call(inv, queryBody)
			if !errors.Is(err, fault.ErrRateLimited) {
				t.Fatalf("error %v, want ErrRateLimited on the third try", err)
			}
			// Had the breaker counted the refusal, it would hold three
			// failures and be open now.
			for i := range 3 {
				if _, err = call(inv, queryBody); !errors.Is(err, fault.ErrRateLimited) {
					t.Errorf("call %d after: %v, want ErrRateLimited (the breaker counts no refusal)", i+2, err)
				}
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("the server got %d tries, want 2", n)
			}
		})
	}
}

// TestShapingRateLimitReloadKeepsLimiter: a reload with an equal rate_limit
// keeps the limiter and the turns spent; another value makes a new one.
func TestShapingRateLimitReloadKeepsLimiter(t *testing.T) {
	srv := newSchemaServer(t, nil)
	limit := func(rps float64) env.Config {
		return withSchema(env.PathSockets, srv.URL(), func(s *env.SourceSchema) {
			s.RateLimit = env.RateLimitSettings{RequestsPerSecond: rps, Burst: 1}
		})
	}
	inv := newInvoker(t, limit(0.01))
	if _, err := call(inv, queryBody); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reload(limit(0.01)); err != nil {
		t.Fatal(err)
	}
	if _, err := call(inv, queryBody); !errors.Is(err, fault.ErrRateLimited) {
		t.Fatalf("after a reload with the same limit: %v, want ErrRateLimited (the burst was spent)", err)
	}
	if err := inv.Reload(limit(0.02)); err != nil {
		t.Fatal(err)
	}
	if _, err := call(inv, queryBody); err != nil {
		t.Fatalf("after a reload with another limit: %v, want a fresh bucket", err)
	}
}

// TestShapingCanary: under a canary, the limit is the schema's, shared by
// both paths: a call the limit refused on sockets is not sent on legacy,
// and the judge counts it on neither side.
func TestShapingCanary(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := canaryConfig(env.CanarySettings{Rate: 1, Cooldown: time.Hour}, "products", srv.URL())
	cfg.Defaults.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1}
	inv := newInvoker(t, cfg)
	if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
		t.Fatalf("first call: %d, %v", st, err)
	}
	for _, body := range []string{queryBody, `{"query":"mutation { m }"}`} {
		if _, err := call(inv, body); !errors.Is(err, fault.ErrRateLimited) {
			t.Fatalf("call beyond the limit: %v, want ErrRateLimited", err)
		}
	}
	if legacy, sockets := countPaths(srv); legacy != 0 || sockets != 1 {
		t.Errorf("the server saw %d legacy and %d sockets requests, want the first call only, on sockets", legacy, sockets)
	}
	st := canaryState(t, inv).Schemas["products"]
	if st.Sockets.Requests != 1 || st.Sockets.Failures != 0 || st.Legacy.Requests != 0 {
		t.Errorf("canary windows %+v, want one sockets request and no failure: refusals are not counted", st)
	}
}

// TestShapingShadow: under shadow, both sides send the body compressed
// (each decodes to the original), and the shadow candidate takes no turn
// of the serving side's limit.
func TestShapingShadow(t *testing.T) {
	srv := newDecodingServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	cfg.Shadow = env.ShadowSettings{Rate: 1}
	cfg.Defaults.RequestCompression = env.RequestCompressionSettings{Codec: "gzip", MinBytes: 64}
	cfg.Defaults.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1}
	inv := newInvoker(t, cfg)
	body := entityBody("shadowed", 20)
	if st, err := call(inv, body); err != nil || st != http.StatusOK {
		t.Fatalf("call: %d, %v", st, err)
	}
	inv.Close() // waits for the comparison
	got := srv.requests()
	if len(got) != 2 {
		t.Fatalf("the server got %d requests, want the call and its shadow copy", len(got))
	}
	for i, d := range got {
		if d.encoding != "gzip" || d.body != body {
			t.Errorf("request %d: Content-Encoding %q, decodes to the body: %t", i, d.encoding, d.body == body)
		}
	}
}

// TestShapingTelemetry, on every path: a compressed Post counts its bytes
// saved, and a refused one counts as limited.
func TestShapingTelemetry(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			tel, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			if err != nil {
				t.Fatal(err)
			}
			srv := newDecodingServer(t, nil)
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				compressed("gzip", 1024)(s)
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1}
			}), transport.WithTelemetry(tel))
			body := entityBody("counted", 100)
			if _, err := call(inv, body); err != nil {
				t.Fatal(err)
			}
			if _, err := call(inv, body); !errors.Is(err, fault.ErrRateLimited) {
				t.Fatalf("second call: %v, want ErrRateLimited", err)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if d, ok := m.Data.(metricdata.Sum[int64]); ok {
						for _, dp := range d.DataPoints {
							got[m.Name] += dp.Value
						}
					}
				}
			}
			wire := len(srv.requests()[0].wire)
			if got[telemetry.MetricCompressedRequests] != 1 || got[telemetry.MetricCompressionBytesSaved] != int64(len(body)-wire) || got[telemetry.MetricRateLimited] != 1 {
				t.Errorf("metrics %v: want 1 compressed request, %d bytes saved, 1 limited", got, len(body)-wire)
			}
		})
	}
}

// TestShapingCompressionHTTP2: over HTTP/2 (TLS with ALPN h2, and h2c) on
// the sockets path, a compressed query retried after a 503 carries the
// same bytes on each stream, and they decode to the body.
func TestShapingCompressionHTTP2(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	body := entityBody("h2", 80)
	for _, tc := range []struct {
		name    string
		o       wiretest.Options
		version string
	}{
		{"TLS h2", wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2"}}, "2"},
		{"h2c", wiretest.Options{H2COnly: true}, "h2c"},
	} {
		for _, codec := range []string{"gzip", "zstd"} {
			t.Run(tc.name+"/"+codec, func(t *testing.T) {
				srv := newDecodingWireServer(t, tc.o, func(n int) int {
					if n == 1 {
						return http.StatusServiceUnavailable
					}
					return http.StatusOK
				})
				inv := newInvoker(t, withSchema(env.PathSockets, srv.URL(), func(s *env.SourceSchema) {
					compressed(codec, 1024)(s)
					s.HTTPVersion = tc.version
					s.TLS.CAFile = pki.CAFile
					s.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
				}))
				if st, err := call(inv, body); err != nil || st != http.StatusOK {
					t.Fatalf("Post: %d, %v", st, err)
				}
				got := srv.requests()
				if len(got) != 2 {
					t.Fatalf("the server got %d requests, want 2", len(got))
				}
				for i, d := range got {
					if d.proto != 2 || d.encoding != codec || d.body != body || !bytes.Equal(d.wire, got[0].wire) || d.length != int64(len(d.wire)) {
						t.Errorf("try %d: HTTP/%d, Content-Encoding %q, Content-Length %d for %d bytes, decodes to the body: %t, same bytes: %t",
							i+1, d.proto, d.encoding, d.length, len(d.wire), d.body == body, bytes.Equal(d.wire, got[0].wire))
					}
				}
			})
		}
	}
}
