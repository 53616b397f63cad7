package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
	"github.com/fusiongo/transport/telemetry"
)

// resilienceGuard bounds a wait in the resilience tests; it only fails a
// test that would otherwise hang, and never times anything.
const resilienceGuard = 10 * time.Second

// resilienceEvents collects the resilience hook's events.
type resilienceEvents struct {
	mu  sync.Mutex
	evs []transport.ResilienceEvent
}

func (r *resilienceEvents) hook(ev transport.ResilienceEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// transitions returns the breaker's changes so far, "from>to".
func (r *resilienceEvents) transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		if ev.Kind == transport.BreakerStateChanged {
			out = append(out, ev.From+">"+ev.To)
		}
	}
	return out
}

// count returns how many events of kind k arrived.
func (r *resilienceEvents) count(k transport.ResilienceKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// statusServer answers every request with the status in status, counts
// what reaches it, and, while hold is set, reports each arrival on arrived
// and waits for release.
type statusServer struct {
	*schemaServer
	status  atomic.Int32
	seen    atomic.Int64
	hold    atomic.Bool
	arrived chan struct{}
	release chan struct{}
}

func newStatusServer(t *testing.T, status int) *statusServer {
	s := &statusServer{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	s.status.Store(int32(status))
	s.schemaServer = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.seen.Add(1)
		if s.hold.Load() {
			s.arrived <- struct{}{}
			select {
			case <-s.release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(int(s.status.Load()))
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	return s
}

// breakerOn sets a small breaker on the products schema.
func breakerOn(openFor time.Duration) func(*env.SourceSchema) {
	return func(s *env.SourceSchema) {
		s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 10, Window: 10 * time.Second, OpenFor: openFor, FailureRatio: 0.5}
	}
}

// call sends one query and returns its status, or its error; a body is
// read and closed.
func call(inv transport.Invoker, body string) (int, error) {
	resp, err := inv.Post(context.Background(), "products", []byte(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

const queryBody = `{"query":"query { ok }"}`

// checkRefused fails the test unless err is a refusal that names the
// schema.
func checkRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fault.ErrCircuitOpen) {
		t.Fatalf("error %v, want one that matches ErrCircuitOpen", err)
	}
	if !strings.Contains(err.Error(), `"products"`) {
		t.Errorf("error %q does not name the source schema", err)
	}
}

// TestResilienceBreakerOpensAndRecovers, on every path: a schema that
// answers 503 to every call opens its breaker after min_requests (10) at
// failure_ratio 0.5; the calls after it fail at once with ErrCircuitOpen,
// naming the schema, and the server sees none of them. After open_for
// exactly half_open_requests (1) trial call reaches the server while the
// others are refused; the recovered server's answer closes the breaker.
func TestResilienceBreakerOpensAndRecovers(t *testing.T) {
	const openFor = 200 * time.Millisecond
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newStatusServer(t, http.StatusServiceUnavailable)
			var evs resilienceEvents
			inv := newInvoker(t, withSchema(p, srv.URL(), breakerOn(openFor)), transport.WithResilienceHook(evs.hook))
			for i := range 10 {
				if st, err := call(inv, queryBody); err != nil || st != http.StatusServiceUnavailable {
					t.Fatalf("call %d: %d, %v; want the server's 503", i, st, err)
				}
			}
			if got := evs.transitions(); !slices.Equal(got, []string{"closed>open"}) {
				t.Fatalf("breaker transitions after 10 failures: %v, want [closed>open]", got)
			}
			for range 20 {
				_, err := call(inv, queryBody)
				checkRefused(t, err)
			}
			if n := srv.seen.Load(); n != 10 {
				t.Fatalf("the server saw %d requests, want 10: a refused call must not be sent", n)
			}

			// Waiting out open_for itself, the one sleep the test needs.
			time.Sleep(openFor)
			srv.hold.Store(true)
			srv.status.Store(http.StatusOK)
			trial := make(chan error, 1)
			go func() {
				st, err := call(inv, queryBody)
				if err == nil && st != http.StatusOK {
					err = fmt.Errorf("status %d", st)
				}
				trial <- err
			}()
			select {
			case <-srv.arrived:
			case <-time.After(resilienceGuard):
				t.Fatal("the trial call did not reach the server")
			}
			for range 5 {
				_, err := call(inv, queryBody)
				checkRefused(t, err)
			}
			srv.hold.Store(false)
			close(srv.release)
			if err := <-trial; err != nil {
				t.Fatalf("trial call: %v", err)
			}
			if n := srv.seen.Load(); n != 11 {
				t.Fatalf("the server saw %d requests, want 11: exactly one trial call", n)
			}
			if got := evs.transitions(); !slices.Equal(got, []string{"closed>open", "open>half_open", "half_open>closed"}) {
				t.Fatalf("breaker transitions: %v, want closed>open, open>half_open, half_open>closed", got)
			}
			for i := range 20 {
				if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
					t.Fatalf("call %d after closing: %d, %v", i, st, err)
				}
			}
			if n := srv.seen.Load(); n != 31 {
				t.Errorf("the server saw %d requests, want 31", n)
			}
		})
	}
}

// TestResilienceBreakerIgnores4xx, on every path: 4xx answers never open
// the breaker; every call reaches the server.
func TestResilienceBreakerIgnores4xx(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newStatusServer(t, http.StatusBadRequest)
			var evs resilienceEvents
			inv := newInvoker(t, withSchema(p, srv.URL(), breakerOn(time.Hour)), transport.WithResilienceHook(evs.hook))
			for i := range 50 {
				if st, err := call(inv, queryBody); err != nil || st != http.StatusBadRequest {
					t.Fatalf("call %d: %d, %v; want the server's 400", i, st, err)
				}
			}
			if n := srv.seen.Load(); n != 50 {
				t.Errorf("the server saw %d requests, want 50", n)
			}
			if got := evs.transitions(); len(got) != 0 {
				t.Errorf("breaker transitions %v, want none", got)
			}
		})
	}
}

// TestResilienceBreakerStatuses, on every path (issue 29, defect 2):
// circuit_breaker.statuses as the YAML gives it decides which answers
// open the breaker. An empty list means none, not the default: 20 answers
// of 500 leave it closed and every call reaches the server; [429] opens
// it on 429s and [503] never on 500s.
func TestResilienceBreakerStatuses(t *testing.T) {
	cases := []struct {
		name     string
		yaml     string
		status   int
		wantOpen bool
	}{
		{"empty list, 500", "[]", 500, false},
		{"default, 500", "", 500, true},
		{"[429], 429", "[429]", 429, true},
		{"[503], 500", "[503]", 500, false},
	}
	for _, p := range paths {
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.name, func(t *testing.T) {
				srv := newStatusServer(t, tc.status)
				yaml := "circuit_breaker:\n  enabled: true\n  min_requests: 10\n  open_for: 1h\n"
				if tc.yaml != "" {
					yaml += "  statuses: " + tc.yaml + "\n"
				}
				cfg := withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.CircuitBreaker = loadBreaker(t, yaml)
				})
				var evs resilienceEvents
				inv := newInvoker(t, cfg, transport.WithResilienceHook(evs.hook))
				refused := 0
				for range 20 {
					st, err := call(inv, queryBody)
					switch {
					case errors.Is(err, fault.ErrCircuitOpen):
						refused++
					case err != nil || st != tc.status:
						t.Fatalf("call: %d, %v; want the server's %d", st, err, tc.status)
					}
				}
				if open := refused > 0; open != tc.wantOpen {
					t.Errorf("statuses %q, 20 answers of %d: %d calls refused by the breaker (transitions %v); want open: %t",
						tc.yaml, tc.status, refused, evs.transitions(), tc.wantOpen)
				}
				if n := srv.seen.Load(); int(n) != 20-refused {
					t.Errorf("the server saw %d requests, want %d", n, 20-refused)
				}
			})
		}
	}
}

// loadBreaker returns the breaker settings of a source schema's YAML
// block, as the configuration loader reads them.
func loadBreaker(t *testing.T, yaml string) env.BreakerSettings {
	t.Helper()
	file := filepath.Join(t.TempDir(), "fusion.yaml")
	doc := "source_schemas:\n  products:\n    url: http://products.test/graphql\n    " +
		strings.ReplaceAll(strings.TrimSuffix(yaml, "\n"), "\n", "\n    ") + "\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Loader{}.Load(file)
	if err != nil {
		t.Fatalf("loading %q: %v", yaml, err)
	}
	return cfg.SourceSchemas["products"].CircuitBreaker
}

// TestResilienceReloadKeepsBreaker, on every path: a reload that leaves
// the breaker settings alone (it changes header_timeout) keeps an open
// breaker open; one that changes them (failure_ratio) starts a closed
// breaker, and the call after it reaches the server. Neither reload opens
// a connection: the breaker keys are not part of a transport's key.
func TestResilienceReloadKeepsBreaker(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newStatusServer(t, http.StatusServiceUnavailable)
			cfg := withSchema(p, srv.URL(), breakerOn(time.Hour))
			inv := newInvoker(t, cfg)
			for range 10 {
				call(inv, queryBody)
			}
			_, err := call(inv, queryBody)
			checkRefused(t, err)
			conns := len(srv.Opened())

			same := withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				breakerOn(time.Hour)(s)
				s.HeaderTimeout = 7 * time.Second
			})
			if err := inv.Reload(same); err != nil {
				t.Fatal(err)
			}
			_, err = call(inv, queryBody)
			checkRefused(t, err)
			if n := srv.seen.Load(); n != 10 {
				t.Fatalf("after a reload that kept the breaker settings the server saw %d requests, want 10", n)
			}

			changed := withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				breakerOn(time.Hour)(s)
				s.CircuitBreaker.FailureRatio = 0.9
			})
			if err := inv.Reload(changed); err != nil {
				t.Fatal(err)
			}
			if st, err := call(inv, queryBody); err != nil || st != http.StatusServiceUnavailable {
				t.Fatalf("after a reload that changed the breaker: %d, %v; want the server's 503", st, err)
			}
			if n := srv.seen.Load(); n != 11 {
				t.Errorf("the server saw %d requests, want 11", n)
			}
			if n := len(srv.Opened()); n != conns {
				t.Errorf("%d connections opened after the reloads, %d before: a breaker key must not replace the transport", n, conns)
			}
		})
	}
}

// TestResilienceRetryBudget, on every path: 200 concurrent callers of a
// schema that answers 503, with max_attempts 5. With the default budget
// (ratio 0.2, 10 per second over 10 s) the server sees at most the first
// tries plus the budget: 200 + 0.2×200 + 10×10 = 340. With budget_ratio
// off it sees every attempt: 200×5 = 1000.
func TestResilienceRetryBudget(t *testing.T) {
	const callers, attempts = 200, 5
	for _, p := range paths {
		for _, budget := range []string{"default", "off"} {
			t.Run(string(p)+"/"+budget, func(t *testing.T) {
				srv := newStatusServer(t, http.StatusServiceUnavailable)
				var evs resilienceEvents
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.Retry = env.RetrySettings{MaxAttempts: attempts, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
					if budget == "off" {
						s.Retry.BudgetRatio = env.RatioOff
					}
				}), transport.WithResilienceHook(evs.hook))
				var wg sync.WaitGroup
				var bad atomic.Int64
				for range callers {
					wg.Go(func() {
						if st, err := call(inv, queryBody); err != nil || st != http.StatusServiceUnavailable {
							bad.Add(1)
						}
					})
				}
				wg.Wait()
				if n := bad.Load(); n != 0 {
					t.Errorf("%d callers did not get the server's 503 back", n)
				}
				n := srv.seen.Load()
				t.Logf("budget %s: the server saw %d requests from %d callers with max_attempts %d", budget, n, callers, attempts)
				switch budget {
				case "default":
					if n < callers || n > 340 {
						t.Errorf("the server saw %d requests, want from %d to 340 (200 + 0.2×200 + 10×10)", n, callers)
					}
					if evs.count(transport.BudgetExhausted) == 0 {
						t.Error("no budget_exhausted event")
					}
				case "off":
					if n != callers*attempts {
						t.Errorf("the server saw %d requests, want %d", n, callers*attempts)
					}
				}
			})
		}
	}
}

// hedgeServer answers a query carrying "id" at once, except the first
// try (the request that is no hedge) of every fifth id, which waits for
// release (or the request's end); its body says whether a hedge answered.
// A request is a hedge if it carries hedgeHeader, which marked (an
// AttemptMiddleware) sets: the first try is told by that mark, not by
// when it arrived, since a hedge may overtake it on a loaded machine.
type hedgeServer struct {
	*schemaServer
	mu       sync.Mutex
	attempts map[string]int // by query kind and id
	calls    atomic.Int64
	release  chan struct{}
}

// hedgeHeader marks a hedge for hedgeServer.
const hedgeHeader = "X-Test-Hedge"

func newHedgeServer(t *testing.T) *hedgeServer {
	s := &hedgeServer{attempts: map[string]int{}, release: make(chan struct{})}
	s.schemaServer = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string
			Variables struct{ ID int }
		}
		json.NewDecoder(r.Body).Decode(&req)
		s.calls.Add(1)
		key := fmt.Sprintf("%s/%d", strings.Fields(req.Query)[0], req.Variables.ID)
		s.mu.Lock()
		s.attempts[key]++
		s.mu.Unlock()
		hedge := r.Header.Get(hedgeHeader) != ""
		if strings.HasPrefix(req.Query, "mutation") {
			// Later than the hedge delay: a hedgeable call would go twice.
			select {
			case <-time.After(150 * time.Millisecond):
			case <-r.Context().Done():
			}
		} else if req.Variables.ID%5 == 0 && !hedge {
			select {
			case <-s.release:
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, `{"data":{"hedge":%t}}`, hedge)
	})
	return s
}

// marked is the option that marks each hedge of the products schema
// with hedgeHeader.
func (s *hedgeServer) marked() transport.Option { return markHedges("products") }

// markHedges is the option that marks each hedge of schema with
// hedgeHeader, by an AttemptMiddleware.
func markHedges(schema string) transport.Option {
	return transport.WithSchemaOptions(schema, transport.SchemaOptions{
		AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if middleware.IsHedge(req.Context()) {
					req = req.Clone(req.Context())
					req.Header.Set(hedgeHeader, "1")
				}
				return next.RoundTrip(req)
			})
		}},
	})
}

// TestResilienceHedge, on every path: hedging on (delay 50ms), 500 queries
// of which every fifth's first try is held back (told from its hedge by
// the mark of an AttemptMiddleware). The server sees at
// most 1.2× the calls, plus one for each fast query whose answer took
// longer than the delay all the same (a loaded machine): each such extra
// hedge is checked to belong to a query that really had no answer within
// the delay, so no hedge goes early; every caller got the fast attempt
// (the hedge for a held query, the first try otherwise) well before the held answer's
// 2 s; mutations, slower than the delay, are sent once each.
func TestResilienceHedge(t *testing.T) {
	const hedgeDelay = 50 * time.Millisecond
	const queries, workers, mutations = 500, 8, 8
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newHedgeServer(t)
			defer close(srv.release)
			var evs resilienceEvents
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: hedgeDelay}}
			}), transport.WithResilienceHook(evs.hook), srv.marked())
			ids := make(chan int, queries)
			for i := range queries {
				ids <- i
			}
			close(ids)
			var mu sync.Mutex
			var took []time.Duration
			tookByID := map[int]time.Duration{}
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for id := range ids {
						start := time.Now()
						resp, err := inv.Post(context.Background(), "products", fmt.Appendf(nil, `{"query":"query Q($id: Int) { q(id: $id) }","variables":{"id":%d}}`, id))
						if err != nil {
							t.Errorf("query %d: %v", id, err)
							continue
						}
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						d := time.Since(start)
						want := id%5 == 0 // a held query's hedge answers
						// A fast query slowed past the delay by a loaded machine
						// may be won by its hedge, which is as fast: allowed
						// only if the caller waited past the delay.
						hedgeWon := !want && string(body) == `{"data":{"hedge":true}}` && d >= hedgeDelay
						if got := fmt.Sprintf(`{"data":{"hedge":%t}}`, want); string(body) != got && !hedgeWon {
							t.Errorf("query %d: body %s after %s, want %s (the fast attempt)", id, body, d, got)
						}
						mu.Lock()
						took = append(took, d)
						tookByID[id] = d
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			slices.Sort(took)
			p99 := took[len(took)*99/100]
			t.Logf("%s: %d queries, the server saw %d calls, %d hedges sent, %d won; p50 %s, p99 %s, max %s",
				p, queries, srv.calls.Load(), evs.count(transport.HedgeSent), evs.count(transport.HedgeWon),
				took[len(took)/2], p99, took[len(took)-1])
			// Fast queries that were hedged: each must have waited past the
			// delay for its first answer.
			extra := 0
			srv.mu.Lock()
			for id, d := range tookByID {
				if id%5 != 0 && srv.attempts[fmt.Sprintf("query/%d", id)] > 1 {
					extra++
					if d < hedgeDelay {
						t.Errorf("query %d was hedged although its answer came after %s, within the %s delay", id, d, hedgeDelay)
					}
				}
			}
			srv.mu.Unlock()
			if n := srv.calls.Load(); n > int64(queries*12/10+extra) {
				t.Errorf("the server saw %d calls for %d queries, want at most %d (1.2×) + %d (fast queries slower than the delay)", n, queries, queries*12/10, extra)
			}
			if max := took[len(took)-1]; max >= 1500*time.Millisecond {
				t.Errorf("the slowest query took %s: a caller waited for a held answer", max)
			}
			if won := evs.count(transport.HedgeWon); won < queries/5 {
				t.Errorf("%d hedges won, want at least %d (one per held query)", won, queries/5)
			}

			// Counted by id, not by the server's calls: a fast query's
			// losing hedge may still reach the server now.
			for i := range mutations {
				st, err := call(inv, fmt.Sprintf(`{"query":"mutation M($id: Int) { m(id: $id) }","variables":{"id":%d}}`, i))
				if err != nil || st != http.StatusOK {
					t.Fatalf("mutation %d: %d, %v", i, st, err)
				}
				srv.mu.Lock()
				n := srv.attempts[fmt.Sprintf("mutation/%d", i)]
				srv.mu.Unlock()
				if n != 1 {
					t.Errorf("mutation %d, slower than the hedge delay, reached the server %d times, want once", i, n)
				}
			}
		})
	}
}

// TestResilienceCanaryBreaker: under a canary at rate 1, the sockets side
// of a schema answers 503 (a sockets-only server route) and its breaker
// (min_requests 5) opens; the calls it refuses, unsent, go again on legacy
// and succeed, a mutation too; the judge counts them as sockets failures
// and falls back. The server saw exactly the 5 sockets calls that opened
// the breaker.
func TestResilienceCanaryBreaker(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if bySockets(r) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	cfg := canaryConfig(env.CanarySettings{Rate: 1, Window: 20, MinRequests: 10, Cooldown: time.Hour}, "products", srv.URL())
	cfg.Defaults.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 5, OpenFor: time.Hour}
	var evs resilienceEvents
	inv := newInvoker(t, cfg, transport.WithResilienceHook(evs.hook))
	for i := range 5 {
		if st, err := call(inv, queryBody); err != nil || st != http.StatusServiceUnavailable {
			t.Fatalf("call %d: %d, %v; want sockets' 503, an answer returned as is", i, st, err)
		}
	}
	if got := evs.transitions(); !slices.Equal(got, []string{"closed>open"}) {
		t.Fatalf("breaker transitions %v, want [closed>open]", got)
	}
	if st, err := call(inv, `{"query":"mutation { m }"}`); err != nil || st != http.StatusOK {
		t.Fatalf("a mutation refused by the sockets breaker: %d, %v; want legacy's 200", st, err)
	}
	for i := 0; i < 200 && canaryState(t, inv).Schemas["products"].Share != 0; i++ {
		if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
			t.Fatalf("call %d with the sockets breaker open: %d, %v; want legacy's 200", i, st, err)
		}
	}
	st := canaryState(t, inv).Schemas["products"]
	if st.Share != 0 || st.Fallbacks != 1 {
		t.Fatalf("canary state %+v, want a fallback to share 0", st)
	}
	if legacy, sockets := countPaths(srv); sockets != 5 || legacy == 0 {
		t.Errorf("the server saw %d sockets and %d legacy requests, want 5 sockets (the breaker's refusals unsent) and some legacy", sockets, legacy)
	}
	for _, ev := range evs.evs {
		if ev.Kind == transport.BreakerStateChanged && (ev.Schema != "products" || ev.Path != env.PathSockets) {
			t.Errorf("breaker event %+v, want products on sockets", ev)
		}
	}
}

// TestResilienceShadowHasNoBreaker: a shadow candidate gets no breaker:
// with sockets failing every shadowed call, no breaker opens and the
// serving side answers.
func TestResilienceShadowHasNoBreaker(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if bySockets(r) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	cfg := config(env.PathLegacy, "products", srv.URL())
	cfg.Shadow = env.ShadowSettings{Rate: 1}
	cfg.Defaults.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 2, OpenFor: time.Hour}
	var evs resilienceEvents
	inv := newInvoker(t, cfg, transport.WithResilienceHook(evs.hook))
	for i := range 20 {
		if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
			t.Fatalf("call %d: %d, %v", i, st, err)
		}
	}
	inv.Close() // waits for the comparisons
	if got := evs.transitions(); len(got) != 0 {
		t.Errorf("breaker transitions %v, want none: the shadow candidate has no breaker", got)
	}
}

// TestResilienceTelemetryAndLog, on every path: a schema answering 503,
// with a breaker (min_requests 10) and retries under a budget with no
// floor (ratio 0.1): the budget refuses retries, logged at Warn at most
// once a second, and counted; the breaker's opening is a Warn line naming
// the schema and a transition in fusion.transport.breaker.transitions.
func TestResilienceTelemetryAndLog(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			tel, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			if err != nil {
				t.Fatal(err)
			}
			var logs logBuffer
			srv := newStatusServer(t, http.StatusServiceUnavailable)
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				breakerOn(time.Hour)(s)
				s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, BudgetRatio: 0.1, BudgetMinPerSecond: env.NoLimit}
			}), transport.WithTelemetry(tel), transport.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			start := time.Now()
			for range 10 {
				call(inv, queryBody)
			}
			elapsed := time.Since(start)
			l := logs.String()
			if !strings.Contains(l, `level=WARN msg="circuit breaker open: calls to the source schema fail at once, unsent" source_schema=products`) {
				t.Errorf("no Warn line for the breaker's opening:\n%s", l)
			}
			warns := strings.Count(l, `msg="retry budget exhausted`)
			if limit := int(elapsed/time.Second) + 2; warns < 1 || warns > limit {
				t.Errorf("%d budget lines in %s, want 1 to %d (at most one a second)", warns, elapsed, limit)
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
			if got[telemetry.MetricBreakerTransitions] != 1 || got[telemetry.MetricRetryBudgetExhaustions] == 0 {
				t.Errorf("metrics %v: want 1 breaker transition and some budget exhaustions", got)
			}
		})
	}
}

// TestResilienceHedgeRateLimited: a hedge that the rate limit refuses
// (burst 1, spent by the first try, no wait) never reaches the source
// schema and is no HedgeSent event, on every path and engine; the query
// gets its first try's answer. The server holds that first try until a
// second request comes or 200ms pass, so that a hedge has its chance.
// On a loaded machine the hedge may reach the limit first and the first
// try be the one refused: then the one request the server got is the
// hedge (marked by an AttemptMiddleware), and it is the one HedgeSent.
func TestResilienceHedgeRateLimited(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			chance := newSecondChance()
			var hedges atomic.Int64
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(hedgeHeader) != "" {
					hedges.Add(1)
				}
				chance.hold()
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			var evs resilienceEvents
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: time.Millisecond}}
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1, Wait: env.Off}
			}), transport.WithResilienceHook(evs.hook), markHedges("products"))
			st, err := call(inv, queryBody)
			if err != nil || st != http.StatusOK {
				t.Fatalf("Post: %d, %v; want the 200 of the one attempt sent", st, err)
			}
			if hedges.Load() != 0 {
				t.Log("the hedge overtook the first try to the rate limit: the first try was refused")
			}
			if requests, sent := chance.count(), evs.count(transport.HedgeSent); requests != 1 || int64(sent) != hedges.Load() {
				t.Errorf("the server got %d requests (%d hedges), %d HedgeSent events; want 1 request, and a HedgeSent only for a hedge it got (a refused hedge is unsent)", requests, hedges.Load(), sent)
			}
		})
	}
}

// TestResilienceHedgeBudgetFromFirstTries: with retry max_attempts 1 (no
// retry middleware to count them) the hedge counts the first tries into
// the budget itself, so that a budget with no floor pays for hedges from
// recent traffic: after three queries (budget_ratio 1), a held query is
// hedged, on every path. If the first tries were not counted, the budget
// would be empty and the held query sent once.
func TestResilienceHedgeBudgetFromFirstTries(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			chance := newSecondChance()
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if b, _ := io.ReadAll(r.Body); bytes.Contains(b, []byte("held")) {
					chance.hold()
				}
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			var evs resilienceEvents
			sent := make(chan struct{}, 1)
			hook := func(ev transport.ResilienceEvent) {
				evs.hook(ev)
				if ev.Kind == transport.HedgeSent {
					select {
					case sent <- struct{}{}:
					default:
					}
				}
			}
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.Retry.MaxAttempts = 1
				s.Retry.BudgetRatio = 1
				s.Retry.BudgetMinPerSecond = env.NoLimit
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 20 * time.Millisecond}}
			}), transport.WithResilienceHook(hook))
			for i := range 3 {
				if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
					t.Fatalf("query %d: %d, %v", i, st, err)
				}
			}
			if st, err := call(inv, `{"query":"query Held { held }"}`); err != nil || st != http.StatusOK {
				t.Fatalf("the held query: %d, %v", st, err)
			}
			// The first try, released by its hedge, may win: the hedge is
			// then drained, and reported as sent, after the call returned.
			select {
			case <-sent:
			case <-time.After(resilienceGuard):
			}
			if n := chance.count(); n != 2 || evs.count(transport.HedgeSent) < 1 {
				t.Errorf("the held query reached the server %d times, %d HedgeSent; want 2 (the first try and its hedge, paid from the first tries)", n, evs.count(transport.HedgeSent))
			}
		})
	}
}
