package transport_test

// The rate limit's redis store on the wire: several transports (gateway
// replicas) on one real Redis share one limit per source schema; with
// Redis stopped mid-run each rate_limit.on_store_error mode does what
// docs/configuration.md says, and the limit is shared again once Redis is
// back. A rate is measured on the source schema's side only: the
// requests it got between two of its own timestamps.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// limitBound bounds every wait of these tests, and each call: a call or a
// phase that outlives it is a hang, and fails the test.
const limitBound = 30 * time.Second

// stamp is one request as the limitServer saw it: when, on its clock, and
// in which phase of the run.
type stamp struct {
	at    time.Time
	phase int32
}

// limitServer is a loopback source schema that answers every request at
// once and records when each arrived. A test asks it (await) to tell when
// a phase's requests span a duration, from the phase's first request.
type limitServer struct {
	*schemaServer
	phase *atomic.Int32 // the run's phase, set by the test

	mu     sync.Mutex
	stamps []stamp // guarded by mu
	watch  *spanWatch
}

// spanWatch closes reached once a request of phase arrives span or more
// after the phase's first.
type spanWatch struct {
	phase   int32
	span    time.Duration
	first   time.Time
	reached chan struct{}
}

func newLimitServer(t *testing.T, phase *atomic.Int32) *limitServer {
	s := &limitServer{phase: phase}
	s.schemaServer = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		at, p := time.Now(), phase.Load()
		s.mu.Lock()
		s.stamps = append(s.stamps, stamp{at, p})
		if w := s.watch; w != nil && w.phase == p {
			if w.first.IsZero() {
				w.first = at
			}
			if at.Sub(w.first) >= w.span {
				close(w.reached)
				s.watch = nil
			}
		}
		s.mu.Unlock()
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	return s
}

// await returns a channel closed once phase's requests span span.
func (s *limitServer) await(phase int32, span time.Duration) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watch = &spanWatch{phase: phase, span: span, reached: make(chan struct{})}
	return s.watch.reached
}

// rate returns how many requests of phase arrived from skip to skip+span
// after the phase's first, per second, and how many of phase arrived in
// all.
func (s *limitServer) rate(phase int32, skip, span time.Duration) (perSecond float64, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	n := 0
	for _, st := range s.stamps {
		if st.phase != phase {
			continue
		}
		total++
		if first.IsZero() {
			first = st.at
		}
		if d := st.at.Sub(first); d >= skip && d < skip+span {
			n++
		}
	}
	return float64(n) / span.Seconds(), total
}

// phaseCalls are the outcomes of the calls that began and ended in one
// phase.
type phaseCalls struct {
	ok, refused, unchecked int     // unchecked: refused because the store could not be asked (deny)
	other                  []error // anything else: a failure of the test
}

// limitLoad is callers sending Posts to products through each transport
// as fast as they can, from Start until Stop, each outcome kept by phase.
type limitLoad struct {
	phase *atomic.Int32
	stop  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	calls   map[int32]*phaseCalls // guarded by mu
	waitFor *countWatch           // guarded by mu
}

// countWatch closes reached once phase has n calls.
type countWatch struct {
	phase   int32
	n       int
	reached chan struct{}
}

// startLoad starts perInv callers on each of invs.
func startLoad(t *testing.T, phase *atomic.Int32, invs []*transport.Transport, perInv int) *limitLoad {
	l := &limitLoad{phase: phase, stop: make(chan struct{}), calls: map[int32]*phaseCalls{}}
	for _, inv := range invs {
		for range perInv {
			l.wg.Go(func() { l.run(inv) })
		}
	}
	t.Cleanup(l.Stop)
	return l
}

func (l *limitLoad) run(inv *transport.Transport) {
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		p := l.phase.Load()
		ctx, cancel := context.WithTimeout(context.Background(), limitBound)
		resp, err := inv.Post(ctx, "products", []byte(queryBody))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		if l.phase.Load() == p {
			l.record(p, err)
		}
	}
}

func (l *limitLoad) record(p int32, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[p]
	if c == nil {
		c = &phaseCalls{}
		l.calls[p] = c
	}
	switch {
	case err == nil:
		c.ok++
	case errors.Is(err, fault.ErrRateLimited) && strings.Contains(err.Error(), "its store could not be asked"):
		c.unchecked++
	case errors.Is(err, fault.ErrRateLimited):
		c.refused++
	default:
		c.other = append(c.other, err)
	}
	if w := l.waitFor; w != nil && w.phase == p && c.ok+c.refused+c.unchecked+len(c.other) >= w.n {
		close(w.reached)
		l.waitFor = nil
	}
}

// await returns a channel closed once phase has n calls.
func (l *limitLoad) await(phase int32, n int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitFor = &countWatch{phase: phase, n: n, reached: make(chan struct{})}
	return l.waitFor.reached
}

// of returns phase's outcomes so far.
func (l *limitLoad) of(phase int32) phaseCalls {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.calls[phase]; c != nil {
		return *c
	}
	return phaseCalls{}
}

// Stop ends the load and waits for its callers, each call bounded.
func (l *limitLoad) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// within waits for ch, failing t after limitBound: what it waits for hung.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(limitBound):
		t.Fatalf("%s: not after %v", what, limitBound)
	}
}

// fleetConfig is a Config for path with products at url, limited by
// limit on the redis store of r under prefix. Without a store_timeout of
// its own, the limit's is 5 s: a loaded test machine (-race) can take
// longer than the default 20ms for a replica's first check (a dial, the
// script loaded), and the tests that do not test the bound must not fall
// back.
func fleetConfig(path env.Path, url string, r *redistest.Redis, prefix string, limit env.RateLimitSettings) env.Config {
	if limit.StoreTimeout == 0 {
		limit.StoreTimeout = 5 * time.Second
	}
	cfg := withSchema(path, url, func(s *env.SourceSchema) {
		limit.Store = env.StoreRedis
		s.RateLimit = limit
	})
	cfg.Redis = r.Settings()
	cfg.Redis.KeyPrefix = prefix
	return cfg
}

// limitEvents counts a shared limit's events from WithRateLimitEventHook
// and tells when one has come n times.
type limitEvents struct {
	mu    sync.Mutex
	n     map[string]int        // guarded by mu
	watch map[string]*countWant // guarded by mu
}

type countWant struct {
	n       int
	reached chan struct{}
}

func newLimitEvents() *limitEvents {
	return &limitEvents{n: map[string]int{}, watch: map[string]*countWant{}}
}

func (e *limitEvents) hook(_, event string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[event]++
	if w := e.watch[event]; w != nil && e.n[event] >= w.n {
		close(w.reached)
		delete(e.watch, event)
	}
}

// await returns a channel closed once event has come n times in all.
func (e *limitEvents) await(event string, n int) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan struct{})
	if e.n[event] >= n {
		close(ch)
		return ch
	}
	e.watch[event] = &countWant{n: n, reached: ch}
	return ch
}

func (e *limitEvents) count(event string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[event]
}

// TestRateLimitRedisFleet: three transports (gateway replicas) on one
// Redis and key prefix, each sending to one source schema as fast as its
// callers can, with a limit of 100/s on the redis store: the schema gets
// 100/s (±10%) over 5 s by its own clock, as one transport alone makes it
// get; every call the limit refused failed with ErrRateLimited, naming the
// schema and the shared limit, and never reached the schema. On every
// path and engine; one transport alone on the legacy path.
func TestRateLimitRedisFleet(t *testing.T) {
	const rps = 100
	r := redistest.StartRedis(t)
	type run struct {
		path       env.Path
		transports int
	}
	runs := []run{{env.PathLegacy, 3}, {env.PathSockets, 3}, {pathH1, 3}, {env.PathLegacy, 1}}
	for _, tc := range runs {
		t.Run(fmt.Sprintf("%s/%d", tc.path, tc.transports), func(t *testing.T) {
			var phase atomic.Int32
			srv := newLimitServer(t, &phase)
			prefix := fmt.Sprintf("%s%s-%d:", r.Prefix, tc.path, tc.transports)
			events := newLimitEvents()
			var invs []*transport.Transport
			for range tc.transports {
				cfg := fleetConfig(tc.path, srv.URL(), r, prefix, env.RateLimitSettings{RequestsPerSecond: rps, Burst: 20})
				invs = append(invs, newInvoker(t, cfg, transport.WithRateLimitEventHook(events.hook)))
			}
			// The window: the 5 s from 1 s after the schema's first request.
			reached := srv.await(0, 6*time.Second)
			load := startLoad(t, &phase, invs, 4)
			within(t, reached, "the schema's requests to span 6 s")
			phase.Store(1)
			load.Stop()
			got, total := srv.rate(0, time.Second, 5*time.Second)
			calls := load.of(0)
			t.Logf("%d transports: %.1f requests/s at the schema over 5 s; %d calls sent, %d refused", tc.transports, got, calls.ok, calls.refused)
			if got < rps*0.9 || got > rps*1.1 {
				t.Errorf("the schema got %.1f requests/s over 5 s from %d transports, want %d (±10%%)", got, tc.transports, rps)
			}
			if calls.refused == 0 || len(calls.other) > 0 || calls.unchecked > 0 {
				t.Errorf("calls: %+v; want refusals by the limit and no other failure", calls)
			}
			if calls.ok > total {
				t.Errorf("%d calls succeeded but the schema got %d requests", calls.ok, total)
			}
			if n := events.count(transport.LimitStoreError); n > 0 {
				t.Errorf("%d store errors with Redis up", n)
			}
		})
	}
}

// TestRateLimitRedisRefusal: a call the shared limit refuses fails at
// once, unsent, with ErrRateLimited naming the schema and the limit as
// shared.
func TestRateLimitRedisRefusal(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			limit := env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1}
			a := newInvoker(t, fleetConfig(path, srv.URL(), r, r.Prefix+string(path)+":", limit))
			b := newInvoker(t, fleetConfig(path, srv.URL(), r, r.Prefix+string(path)+":", limit))
			if _, err := call(a, queryBody); err != nil {
				t.Fatal(err)
			}
			_, err := call(b, queryBody)
			want := `rate limit exceeded for source schema "products" (0.01/s, burst 1, shared): not sent`
			if !errors.Is(err, fault.ErrRateLimited) || !strings.Contains(err.Error(), want) {
				t.Fatalf("the other replica's call: %v, want ErrRateLimited with %q", err, want)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the schema got %d requests, want the first replica's alone", n)
			}
		})
	}
}

// The phases of TestRateLimitRedisDown.
const (
	phaseShared   int32 = iota // Redis up
	phaseStopping              // Redis stopped, the limits falling back
	phaseDown                  // both limits fallen back: measured
	phaseStarting              // Redis started, the limits returning
	phaseBack                  // both limits shared again: measured
	phaseDone
)

// TestRateLimitRedisDown: two transports on one Redis, callers sending as
// fast as they can to a schema limited to 100/s; Redis stopped mid-run,
// then started again. While it is down each rate_limit.on_store_error
// mode does as documented: local, each replica a bucket of local_share
// (0.25) of the rate, so the schema gets 2 × 25/s (±20% over 4 s); allow, no limit
// (more than twice the rate, nothing refused); deny, every call refused
// with ErrRateLimited saying the store could not be asked, and none sent.
// No call hangs (each is bounded, and fails the test past the bound).
// Each limit falls back once and returns once (telemetry, status page),
// and once both are back the schema gets the shared 100/s again. On
// every path and engine.
func TestRateLimitRedisDown(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, mode := range []string{env.OnStoreErrorLocal, env.OnStoreErrorAllow, env.OnStoreErrorDeny} {
		for _, path := range paths {
			t.Run(mode+"/"+string(path), func(t *testing.T) { redisDownRun(t, r, mode, path) })
		}
	}
}

func redisDownRun(t *testing.T, r *redistest.Redis, mode string, path env.Path) {
	const rps, share = 100, 0.25
	var phase atomic.Int32
	srv := newLimitServer(t, &phase)
	events := newLimitEvents()
	reader, tel := newMeterRig(t)
	prefix := r.Prefix + mode + "-" + string(path) + ":"
	// A burst of 20 (5 for a fallen back replica) absorbs a stall of the
	// loaded test machine of 200ms without losing turns, and adds at most
	// that much to a window.
	limit := env.RateLimitSettings{RequestsPerSecond: rps, Burst: 20, OnStoreError: mode, LocalShare: share, StoreTimeout: time.Second}
	// The local fall back's rate is the lowest measured: the longest window.
	downSpan := 2 * time.Second
	if mode == env.OnStoreErrorLocal {
		downSpan = 4 * time.Second
	}
	a := newInvoker(t, fleetConfig(path, srv.URL(), r, prefix, limit), transport.WithRateLimitEventHook(events.hook),
		transport.WithRedisPause(100*time.Millisecond), transport.WithTelemetry(tel))
	b := newInvoker(t, fleetConfig(path, srv.URL(), r, prefix, limit), transport.WithRateLimitEventHook(events.hook),
		transport.WithRedisPause(100*time.Millisecond))
	load := startLoad(t, &phase, []*transport.Transport{a, b}, 4)
	within(t, load.await(phaseShared, 100), "100 calls with Redis up")

	phase.Store(phaseStopping)
	r.Stop()
	within(t, events.await(transport.LimitFellBack, 2), "both limits to fall back")
	phase.Store(phaseDown)
	if mode == env.OnStoreErrorDeny {
		within(t, load.await(phaseDown, 400), "400 calls with Redis down")
	} else {
		within(t, srv.await(phaseDown, downSpan+500*time.Millisecond), "the schema's requests with Redis down to span the window")
	}
	checkLimitStatus(t, a, "fallen_back", mode)
	phase.Store(phaseStarting)
	r.Start()
	within(t, events.await(transport.LimitReturned, 2), "both limits to return once Redis is back")
	reached := srv.await(phaseBack, 2500*time.Millisecond)
	phase.Store(phaseBack)
	within(t, reached, "the schema's requests with Redis back to span 2.5 s")
	phase.Store(phaseDone)
	load.Stop()

	down, back := load.of(phaseDown), load.of(phaseBack)
	downRate, downTotal := srv.rate(phaseDown, 500*time.Millisecond, downSpan)
	backRate, _ := srv.rate(phaseBack, 500*time.Millisecond, 2*time.Second)
	t.Logf("down: %.1f/s at the schema, calls %d sent, %d refused, %d refused unchecked; back: %.1f/s, calls %d sent, %d refused",
		downRate, down.ok, down.refused, down.unchecked, backRate, back.ok, back.refused)
	for p, c := range map[string]phaseCalls{"down": down, "back": back, "shared": load.of(phaseShared)} {
		if len(c.other) > 0 {
			t.Errorf("with Redis %s, %d calls failed otherwise than refused, the first: %v", p, len(c.other), c.other[0])
		}
	}
	switch mode {
	case env.OnStoreErrorLocal:
		if want := 2 * share * rps; downRate < want*0.8 || downRate > want*1.2 || down.refused == 0 {
			t.Errorf("local: the schema got %.1f/s with %d refusals, want %.0f/s (2 replicas × %.2f × %d/s, ±20%%)", downRate, down.refused, want, share, rps)
		}
	case env.OnStoreErrorAllow:
		if downRate < 2*rps || down.refused+down.unchecked > 0 {
			t.Errorf("allow: the schema got %.1f/s with %d refusals, want no limit (above %d/s) and none", downRate, down.refused+down.unchecked, 2*rps)
		}
	case env.OnStoreErrorDeny:
		if downTotal > 0 || down.ok > 0 || down.refused > 0 || down.unchecked == 0 {
			t.Errorf("deny: the schema got %d requests, calls %+v; want every call refused unchecked, none sent", downTotal, down)
		}
	}
	if backRate < rps*0.8 || backRate > rps*1.2 || back.refused == 0 {
		t.Errorf("with Redis back the schema got %.1f/s, %d refusals; want the shared %d/s (±20%%)", backRate, back.refused, rps)
	}
	checkLimitStatus(t, a, "shared", mode)
	checkLimitMeters(t, reader)
}

// newMeterRig is a Telemetry whose metrics reader collects on demand.
func newMeterRig(t *testing.T) (*sdkmetric.ManualReader, *telemetry.Telemetry) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	return reader, tel
}

// checkLimitMeters: the limit's store counters hold one fall back, one
// return and some store errors, for products.
func checkLimitMeters(t *testing.T, reader *sdkmetric.ManualReader) {
	t.Helper()
	got := int64Sums(t, reader, func(name string, attrs attribute.Set) (string, bool) {
		v, _ := attrs.Value(telemetry.AttrSourceSchema)
		return name, v.AsString() == "products"
	})
	if got[telemetry.MetricRateLimitFallbacks] != 1 || got[telemetry.MetricRateLimitReturns] != 1 || got[telemetry.MetricRateLimitStoreErrors] == 0 {
		t.Errorf("metrics %v: want one fall back, one return, some store errors", got)
	}
}

// checkLimitStatus: the status page shows products' limit on the redis
// store in state, with mode, one fall back at most, and its counts; the
// HTML page shows the state too.
func checkLimitStatus(t *testing.T, inv *transport.Transport, state, mode string) {
	t.Helper()
	js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
	var doc struct {
		Schemas []struct {
			Name      string `json:"name"`
			RateLimit *struct {
				Store        string  `json:"store"`
				State        string  `json:"state"`
				OnStoreError string  `json:"on_store_error"`
				Rate         float64 `json:"requests_per_second"`
				Limited      int64   `json:"limited"`
				StoreErrors  int64   `json:"store_errors"`
				Fallbacks    int64   `json:"fallbacks"`
				LastError    string  `json:"last_error"`
			} `json:"rate_limit"`
		} `json:"schemas"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Schemas) != 1 || doc.Schemas[0].RateLimit == nil {
		t.Fatalf("status: no rate limit for products: %s", js)
	}
	l := doc.Schemas[0].RateLimit
	if l.Store != env.StoreRedis || l.State != state || l.OnStoreError != mode || l.Rate != 100 || l.Fallbacks != 1 || l.StoreErrors == 0 || l.LastError == "" {
		t.Errorf("status rate_limit %+v, want store redis, state %s, on_store_error %s, one fall back, store errors and their cause", *l, state, mode)
	}
	page, _ := callStatus(t, inv.StatusHandler(), "/status", "text/html")
	if !strings.Contains(string(page), `<td data-k="state"`) || !strings.Contains(string(page), ">"+state+"</td>") {
		t.Errorf("the status page does not show the limit %s", state)
	}
}

// TestRateLimitRedisReload: a reload with equal settings keeps a schema's
// shared limiter (its counts on the status page); one that changes only
// the Redis client (redis.timeout) builds the limiter anew on the new
// client, which answers (the old one is closed: a limiter kept on it
// would deny every call, its store unreachable); one back to the local
// store starts a full bucket.
func TestRateLimitRedisReload(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			limit := env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1, OnStoreError: env.OnStoreErrorDeny}
			cfg := fleetConfig(path, srv.URL(), r, r.Prefix+"reload-"+string(path)+":", limit)
			inv := newInvoker(t, cfg)
			refused := func(when string) {
				t.Helper()
				_, err := call(inv, queryBody)
				if !errors.Is(err, fault.ErrRateLimited) || strings.Contains(err.Error(), "its store could not be asked") {
					t.Fatalf("%s: %v, want a refusal of the shared limit", when, err)
				}
			}
			limited := func() int64 {
				js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
				var doc struct {
					Schemas []struct {
						RateLimit struct {
							Limited     int64 `json:"limited"`
							StoreErrors int64 `json:"store_errors"`
						} `json:"rate_limit"`
					} `json:"schemas"`
				}
				if err := json.Unmarshal(js, &doc); err != nil || len(doc.Schemas) != 1 {
					t.Fatalf("status: %v: %s", err, js)
				}
				if n := doc.Schemas[0].RateLimit.StoreErrors; n != 0 {
					t.Errorf("%d store errors", n)
				}
				return doc.Schemas[0].RateLimit.Limited
			}
			if _, err := call(inv, queryBody); err != nil {
				t.Fatal(err)
			}
			refused("the second call")
			if err := inv.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			refused("after a reload with equal settings")
			if n := limited(); n != 2 {
				t.Errorf("after a reload with equal settings the status counts %d refusals, want 2: the limiter was not kept", n)
			}
			moved := cfg
			moved.Redis.Timeout = 4 * time.Second
			if err := inv.Reload(moved); err != nil {
				t.Fatal(err)
			}
			refused("after a reload that changed the Redis client")
			if n := limited(); n != 1 {
				t.Errorf("after a reload that changed the Redis client the status counts %d refusals, want 1: the limiter was kept", n)
			}
			local := moved
			s := local.SourceSchemas["products"]
			s.RateLimit.Store = env.StoreLocal
			local.SourceSchemas = map[string]env.SourceSchema{"products": s}
			if err := inv.Reload(local); err != nil {
				t.Fatal(err)
			}
			if _, err := call(inv, queryBody); err != nil {
				t.Fatalf("after a reload to the local store: %v, want a full bucket", err)
			}
			if js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json"); !strings.Contains(string(js), `"store": "local"`) ||
				!strings.Contains(string(js), `"state": "local"`) {
				t.Errorf("the status page does not show the local store: %s", js)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("the schema got %d requests, want 2", n)
			}
		})
	}
}

// TestRateLimitRedisWait: with a wait, callers on two transports wait for
// their turns in the one shared limit: 12 callers at once against 10/s,
// burst 1, wait 400ms are served at most 1 + 4 (+1 for the edges) in all,
// not per transport, and more than the burst, so some waited; the rest
// are refused unsent; none is let through after its deadline (every
// third caller has 10ms), which an AttemptMiddleware, inside the limit,
// sees.
func TestRateLimitRedisWait(t *testing.T) {
	const callers = 12
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			var late atomic.Int32
			admit := func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					if req.Context().Err() != nil {
						late.Add(1)
					}
					return next.RoundTrip(req)
				})
			}
			limit := env.RateLimitSettings{RequestsPerSecond: 10, Burst: 1, Wait: 400 * time.Millisecond}
			var invs []*transport.Transport
			for range 2 {
				invs = append(invs, newInvoker(t, fleetConfig(path, srv.URL(), r, r.Prefix+"wait-"+string(path)+":", limit),
					transport.WithSchemaOptions("products", transport.SchemaOptions{AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{admit}})))
			}
			var served, refused atomic.Int32
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), limitBound)
					if i%3 == 2 {
						ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
					}
					defer cancel()
					resp, err := invs[i%2].Post(ctx, "products", []byte(queryBody))
					switch {
					case err == nil:
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						served.Add(1)
					case errors.Is(err, fault.ErrRateLimited):
						refused.Add(1)
					case i%3 == 2 && errors.Is(err, context.DeadlineExceeded):
						// Let through in time; the exchange outlived 10ms.
					default:
						t.Errorf("caller %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			t.Logf("%d callers on 2 transports: %d served, %d refused", callers, served.Load(), refused.Load())
			if s := served.Load(); s < 2 || s > 6 {
				t.Errorf("%d served in all, want more than the burst (some waited) and at most 6 (one shared limit)", s)
			}
			if n := late.Load(); n > 0 {
				t.Errorf("%d callers let through after their deadline", n)
			}
			// A caller let through whose exchange then outlived its 10ms
			// may have reached the schema too.
			if got := len(srv.Requests()); got < int(served.Load()) || got > 6 {
				t.Errorf("the schema got %d requests for %d served, want those and at most 6", got, served.Load())
			}
		})
	}
}

// TestRateLimitRedisPasswordHidden: with a Redis that cannot be reached,
// at a URL with a password, the limit's fall back log line and the status
// page name the server without the password.
func TestRateLimitRedisPasswordHidden(t *testing.T) {
	const password = "s3cr3t-pass"
	srv := newSchemaServer(t, nil)
	cfg := withSchema(env.PathLegacy, srv.URL(), func(s *env.SourceSchema) {
		s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 100, Store: env.StoreRedis, OnStoreError: env.OnStoreErrorAllow}
	})
	// A port nothing listens on: the dial is refused.
	cfg.Redis = env.RedisSettings{URL: "redis://user:" + password + "@" + wiretest.RefusedAddr(t) + "/0"}
	var logs logBuffer
	events := newLimitEvents()
	inv := newInvoker(t, cfg, transport.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), transport.WithRateLimitEventHook(events.hook))
	if _, err := call(inv, queryBody); err != nil {
		t.Fatalf("on_store_error allow: %v, want the call sent", err)
	}
	within(t, events.await(transport.LimitFellBack, 1), "the fall back")
	js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
	page, _ := callStatus(t, inv.StatusHandler(), "/status", "text/html")
	for what, text := range map[string]string{"the log": logs.String(), "the status JSON": string(js), "the status page": string(page)} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the password: %s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "the shared limit's Redis store failed") || !strings.Contains(string(js), `"last_error": "redis redis://user:xxxxx@`) {
		t.Errorf("the fall back is not logged, or the status page does not name the server:\n%s\n%s", logs.String(), js)
	}
}
