package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/env"
)

// canaryGuard bounds a wait in the canary tests; it only fails a test that
// would otherwise hang, and never times anything.
const canaryGuard = 10 * time.Second

// bySockets reports whether a request reached the server through the
// sockets path: only the legacy client adds Accept-Encoding.
func bySockets(r *http.Request) bool { return r.Header.Get("Accept-Encoding") == "" }

// countPaths counts the requests a server saw per path.
func countPaths(srv *schemaServer) (legacy, sockets int) {
	for _, r := range srv.Requests() {
		if r.Header.Get("Accept-Encoding") == "" {
			sockets++
		} else {
			legacy++
		}
	}
	return legacy, sockets
}

// canaryConfig is a legacy Config with a canary over the named schemas at
// urls (name, url, ...).
func canaryConfig(c env.CanarySettings, nameURL ...string) env.Config {
	cfg := config(env.PathLegacy, nameURL...)
	cfg.Canary = c
	return cfg
}

// events collects the canary hook's events; the hook never blocks.
type events chan canary.Event

func (ch events) hook(ev canary.Event) {
	select {
	case ch <- ev:
	default:
	}
}

// failSockets makes the sockets side of source schema name fail at its
// dial, before anything is sent: its unix_socket, which only the sockets
// path reads, names a socket that does not exist, so legacy still reaches
// the server. (A SchemaOptions.Dial hook holds on both paths.) cfg's map
// is changed in place.
func failSockets(cfg env.Config, name string) env.Config {
	s := cfg.SourceSchemas[name]
	s.UnixSocket = "/nonexistent/fusion-canary-test.sock"
	cfg.SourceSchemas[name] = s
	return cfg
}

// canaryState reads CanaryHandler's JSON.
type canaryJSON struct {
	Schemas map[string]struct {
		Share         float64    `json:"share"`
		CooldownUntil *time.Time `json:"cooldown_until"`
		LastReason    string     `json:"last_reason"`
		Fallbacks     int        `json:"fallbacks"`
		Legacy        struct{ Requests, Failures int }
		Sockets       struct{ Requests, Failures int }
	} `json:"schemas"`
}

func canaryState(t *testing.T, inv *transport.Transport) canaryJSON {
	t.Helper()
	w := httptest.NewRecorder()
	inv.CanaryHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/canary", nil))
	var got canaryJSON
	if w.Code != http.StatusOK {
		t.Fatalf("CanaryHandler: status %d: %s", w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("CanaryHandler: %v: %s", err, w.Body)
	}
	return got
}

// TestCanaryShare: at rate 0.1, a tenth of 2,000 gateway requests (each its
// own, with no request id) is served by sockets, within binomial bounds
// (mean 200, standard deviation 13.4; the bounds are 7 deviations away),
// and no call is sent twice.
func TestCanaryShare(t *testing.T) {
	const n = 2000
	srv := newSchemaServer(t, nil)
	inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 0.1}, "products", srv.URL()))
	for range n {
		post(t, inv, gatewayCtx(), "products")
	}
	legacy, sockets := countPaths(srv)
	if legacy+sockets != n {
		t.Errorf("the server saw %d requests for %d Posts, want each once", legacy+sockets, n)
	}
	if sockets < 100 || sockets > 300 {
		t.Errorf("sockets served %d of %d gateway requests at rate 0.1, want 100 to 300 (mean 200)", sockets, n)
	}
	st := canaryState(t, inv).Schemas["products"]
	if st.Share != 0.1 || st.Sockets.Requests+st.Legacy.Requests == 0 {
		t.Errorf("state %+v, want share 0.1 with requests counted", st)
	}
}

// TestCanaryOneGatewayRequestOnePath: every call of one gateway request
// takes one path, whether the gateway request is keyed by its X-Request-Id
// (each call with a fresh *http.Request carrying the same id) or by itself
// (each call with the same context). At rate 0.5 both paths serve some.
func TestCanaryOneGatewayRequestOnePath(t *testing.T) {
	const gatewayRequests, calls = 100, 5
	srv := newSchemaServer(t, nil)
	cfg := canaryConfig(env.CanarySettings{Rate: 0.5}, "products", srv.URL())
	cfg.ForwardHeaders = []string{"X-Gw"}
	inv := newInvoker(t, cfg)
	for i := range gatewayRequests {
		id := strconv.Itoa(i)
		ctx := gatewayCtx("X-Gw", id)
		for range calls {
			if i%2 == 0 {
				ctx = gatewayCtx("X-Gw", id, "X-Request-Id", "req-"+id) // another *http.Request, same id
			}
			post(t, inv, ctx, "products")
		}
	}
	paths := map[string]map[bool]int{}
	for _, r := range srv.Requests() {
		id := r.Header.Get("X-Gw")
		if paths[id] == nil {
			paths[id] = map[bool]int{}
		}
		paths[id][r.Header.Get("Accept-Encoding") == ""]++
	}
	onSockets := map[bool]int{}
	for id, p := range paths {
		if len(p) != 1 {
			t.Errorf("gateway request %s: %d calls on sockets, %d on legacy; want all on one path", id, p[true], p[false])
		}
		for s, n := range p {
			if n != calls {
				t.Errorf("gateway request %s: %d calls, want %d", id, n, calls)
			}
			onSockets[s]++
		}
	}
	if onSockets[true] < 20 || onSockets[false] < 20 {
		t.Errorf("%d gateway requests on sockets, %d on legacy at rate 0.5; want both above 20", onSockets[true], onSockets[false])
	}
}

// TestCanaryFallbackAndRestart: a sockets side that cannot dial drops the
// share to zero within the window, and publishes it (hook, log line,
// handler); queries are sent again on legacy so no caller sees a failure;
// at share zero sockets gets nothing; after the cooldown the share comes
// back at the starting rate.
func TestCanaryFallbackAndRestart(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := failSockets(canaryConfig(env.CanarySettings{Rate: 0.5, Window: 20, MinRequests: 10, Cooldown: 50 * time.Millisecond}, "products", srv.URL()), "products")
	ev := make(events, 1000)
	var logs logBuffer
	inv := newInvoker(t, cfg,
		transport.WithCanaryHook(ev.hook),
		transport.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	select {
	case got := <-ev:
		if got.Reason != canary.Start || got.To != 0.5 {
			t.Fatalf("first event %+v, want the start at 0.5", got)
		}
	case <-time.After(canaryGuard):
		t.Fatal("no start event from the hook")
	}
	// Within the window: 10 failures on sockets and 10 answers on legacy
	// take about 20 gateway requests at 0.5; 200 is far beyond chance.
	var fell *canary.Event
	for i := 0; i < 200 && fell == nil; i++ {
		resp, body := post(t, inv, gatewayCtx(), "products")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "ok") {
			t.Fatalf("Post %d: %d %q, want legacy's answer", i, resp.StatusCode, body)
		}
		select {
		case e := <-ev:
			fell = &e
		default:
		}
	}
	if fell == nil || fell.Reason != canary.Fallback || fell.From != 0.5 || fell.To != 0 || fell.Sockets.Failures < 10 {
		t.Fatalf("event %+v, want a fallback from 0.5 to 0 after at least 10 sockets failures", fell)
	}
	if l := logs.String(); !strings.Contains(l, `msg="canary share changed" source_schema=products reason=fallback from=0.5 to=0`) {
		t.Errorf("log has no fallback line:\n%s", l)
	}
	st := canaryState(t, inv).Schemas["products"]
	if st.Share != 0 && st.LastReason != "restart" || st.Fallbacks != 1 {
		t.Errorf("handler state %+v, want share 0 (or restarted), one fallback", st)
	}
	if st.Share == 0 && st.CooldownUntil == nil {
		t.Errorf("handler state %+v: share 0 without a cooldown end", st)
	}
	if _, sockets := countPaths(srv); sockets != 0 {
		t.Errorf("the server saw %d requests by sockets, whose dial always fails", sockets)
	}

	// The cooldown ends; the next recorded call restarts the canary.
	deadline := time.Now().Add(canaryGuard)
	for {
		post(t, inv, gatewayCtx(), "products")
		var got canary.Event
		select {
		case got = <-ev:
		default:
			if time.Now().After(deadline) {
				t.Fatal("no restart event after the cooldown")
			}
			continue
		}
		if got.Reason != canary.Restart || got.From != 0 || got.To != 0.5 {
			t.Fatalf("event %+v, want a restart from 0 to 0.5", got)
		}
		break
	}
	if st := canaryState(t, inv).Schemas["products"]; st.Share != 0.5 && st.LastReason != "fallback" {
		t.Errorf("handler state after the cooldown %+v, want share 0.5", st)
	}
}

// TestCanaryResend: on sockets (rate 1), a query whose request failed
// without a response is sent again on legacy and succeeds; a mutation is
// returned as it failed, and the server saw it at most once; a 5xx from
// sockets is an answer, returned as is and never sent again.
func TestCanaryResend(t *testing.T) {
	const query, mutation = `{"query":"{ ok }"}`, `{"query":"mutation { buy }"}`
	reset := func(w http.ResponseWriter, r *http.Request) {
		if bySockets(r) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	}
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		if bySockets(r) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	}
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		dial        bool // the sockets dial fails
		body        string
		do          bool // send with Do instead of Post
		wantErr     bool
		wantStatus  int
		wantLegacy  int // requests the server saw by legacy
		maxSockets  int // and at most this many by sockets
		wantSockets int
	}{
		{name: "query, dial refused", dial: true, body: query, wantStatus: 200, wantLegacy: 1},
		{name: "query, reset", handler: reset, body: query, wantStatus: 200, wantLegacy: 1, maxSockets: 1, wantSockets: 1},
		{name: "query by Do, dial refused", dial: true, body: query, do: true, wantStatus: 200, wantLegacy: 1},
		{name: "mutation, dial refused", dial: true, body: mutation, wantErr: true},
		{name: "mutation, reset", handler: reset, body: mutation, wantErr: true, maxSockets: 1},
		{name: "mutation by Do, dial refused", dial: true, body: mutation, do: true, wantErr: true},
		{name: "query, 503", handler: unavailable, body: query, wantStatus: 503, maxSockets: 1, wantSockets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSchemaServer(t, tt.handler)
			cfg := canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL())
			if tt.dial {
				cfg = failSockets(cfg, "products")
			}
			inv := newInvoker(t, cfg)
			var resp *http.Response
			var err error
			if tt.do {
				req, _ := http.NewRequest(http.MethodPost, srv.URL(), bytes.NewReader([]byte(tt.body)))
				req.Header.Set("Content-Type", "application/json")
				resp, err = inv.Do(gatewayCtx(), "products", req)
			} else {
				resp, err = inv.Post(gatewayCtx(), "products", []byte(tt.body))
			}
			switch {
			case tt.wantErr && err == nil:
				readAll(t, resp)
				t.Fatalf("got %d, want the sockets error", resp.StatusCode)
			case !tt.wantErr && err != nil:
				t.Fatalf("got %v, want %d", err, tt.wantStatus)
			case err == nil:
				readAll(t, resp)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
				}
			}
			legacy, sockets := countPaths(srv)
			if legacy != tt.wantLegacy || sockets > tt.maxSockets || sockets < tt.wantSockets {
				t.Errorf("the server saw %d requests by legacy and %d by sockets; want %d by legacy and %d to %d by sockets", legacy, sockets, tt.wantLegacy, tt.wantSockets, tt.maxSockets)
			}
		})
	}
}

// TestCanaryReload: a reload keeps the canary state of the schemas it
// keeps (a fallen one stays at zero, with its cooldown), forgets a removed
// one, and starts an added one at the starting rate.
func TestCanaryReload(t *testing.T) {
	srv := newSchemaServer(t, nil)
	c := env.CanarySettings{Rate: 1, Window: 10, MinRequests: 5, Cooldown: time.Hour}
	cfg := failSockets(canaryConfig(c, "products", srv.URL(), "reviews", srv.URL()), "products")
	ev := make(events, 100)
	inv := newInvoker(t, cfg, transport.WithCanaryHook(ev.hook))
	// products' sockets fails; reviews' legacy side must have requests too,
	// so products' legacy side is fed by its resent queries.
	for i := 0; i < 50 && canaryState(t, inv).Schemas["products"].Share != 0; i++ {
		post(t, inv, gatewayCtx(), "products")
	}
	before := canaryState(t, inv).Schemas["products"]
	if before.Share != 0 || before.CooldownUntil == nil {
		t.Fatalf("products %+v, want fallen back", before)
	}

	next := failSockets(canaryConfig(c, "products", srv.URL(), "accounts", srv.URL()), "products")
	next.Defaults.HeaderTimeout = 30 * time.Second // a change that keeps every route's engine
	if err := inv.Reload(next); err != nil {
		t.Fatal(err)
	}
	got := canaryState(t, inv).Schemas
	p := got["products"]
	if p.Share != 0 || p.CooldownUntil == nil || !p.CooldownUntil.Equal(*before.CooldownUntil) || p.Fallbacks != 1 {
		t.Errorf("products after reload %+v, want its state kept: share 0, cooldown until %v, one fallback", p, before.CooldownUntil)
	}
	if _, ok := got["reviews"]; ok {
		t.Error("reviews is still in the canary state after the reload removed it")
	}
	if a, ok := got["accounts"]; !ok || a.Share != 1 {
		t.Errorf("accounts after reload %+v (present %v), want share 1", a, ok)
	}
	// products still serves on legacy only.
	n := len(srv.Requests())
	post(t, inv, gatewayCtx(), "products")
	if r := srv.Requests()[n]; r.Header.Get("Accept-Encoding") == "" {
		t.Error("products was sent on sockets after the reload, during its cooldown")
	}
}

// TestCanaryHandlerWithoutCanary: 404 from an invoker that runs no canary.
func TestCanaryHandlerWithoutCanary(t *testing.T) {
	srv := newSchemaServer(t, nil)
	inv := newInvoker(t, config(env.PathLegacy, "products", srv.URL()))
	w := httptest.NewRecorder()
	inv.CanaryHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", w.Code)
	}
}

// TestCanaryLimitedSchemas: with a schema list, only those schemas are
// canaried; the others are served by legacy alone.
func TestCanaryLimitedSchemas(t *testing.T) {
	srv := newSchemaServer(t, nil)
	other := newSchemaServer(t, nil)
	inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 1, Schemas: []string{"products"}}, "products", srv.URL(), "reviews", other.URL()))
	post(t, inv, gatewayCtx(), "products")
	post(t, inv, gatewayCtx(), "reviews")
	if _, s := countPaths(srv); s != 1 {
		t.Errorf("products: %d requests by sockets at rate 1, want 1", s)
	}
	if _, s := countPaths(other); s != 0 {
		t.Errorf("reviews (not listed): %d requests by sockets, want 0", s)
	}
	if _, ok := canaryState(t, inv).Schemas["reviews"]; ok {
		t.Error("reviews is in the canary state")
	}
}

// TestCanaryFallbackOn5xx: a 5xx answer counts as a failure: a sockets
// side that answers 503 drops the share to zero (the 503s are answers and
// reach their callers as they are).
func TestCanaryFallbackOn5xx(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if bySockets(r) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 0.5, Window: 20, MinRequests: 10, Cooldown: time.Hour}, "products", srv.URL()))
	for i := 0; i < 200 && canaryState(t, inv).Schemas["products"].Share != 0; i++ {
		post(t, inv, gatewayCtx(), "products")
	}
	if st := canaryState(t, inv).Schemas["products"]; st.Share != 0 || st.Fallbacks != 1 {
		t.Fatalf("state %+v after 200 gateway requests with sockets answering 503, want share 0 and one fallback", st)
	}
}

// TestCanaryResendSpendsBounds: under a canary, a query that failed on
// sockets is sent again on legacy only within what is left of its bounds.
// A sockets attempt that used the whole header_timeout or request_timeout
// is not sent again (the server sees one request, not two, and the caller
// waited one bound, not two); one that failed at once goes again on legacy
// with the same deadline as the first attempt.
func TestCanaryResendSpendsBounds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		header, request time.Duration
	}{
		{"header_timeout", 100 * time.Millisecond, 0},
		{"request_timeout", 0, 100 * time.Millisecond},
	} {
		for _, call := range []string{"Post", "Do"} {
			t.Run("spent/"+tc.name+"/"+call, func(t *testing.T) {
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					<-r.Context().Done() // never answers: every attempt runs out of its bound
				})
				cfg := canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL())
				s := cfg.SourceSchemas["products"]
				s.HeaderTimeout, s.RequestTimeout = tc.header, tc.request
				cfg.SourceSchemas["products"] = s
				inv := newInvoker(t, cfg)
				var err error
				if call == "Post" {
					_, err = inv.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
				} else {
					req, _ := http.NewRequest(http.MethodGet, srv.URL()+"?query=%7B+a+%7D", nil)
					_, err = inv.Do(context.Background(), "products", req)
				}
				if err == nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Post: %v, want the %s error", err, tc.name)
				}
				srv.Close() // every request the server will see has come
				if legacy, sockets := countPaths(srv); legacy != 0 || sockets != 1 {
					t.Errorf("the server saw %d requests on sockets and %d on legacy, want 1 and 0: the re-send started the bounds again (%v)", sockets, legacy, err)
				}
			})
		}
	}
	t.Run("left/request_timeout", func(t *testing.T) {
		srv := newSchemaServer(t, nil)
		cfg := failSockets(canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL()), "products")
		s := cfg.SourceSchemas["products"]
		s.RequestTimeout = time.Hour
		cfg.SourceSchemas["products"] = s
		var mu sync.Mutex
		var deadlines []time.Time
		record := func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				d, _ := req.Context().Deadline()
				mu.Lock()
				deadlines = append(deadlines, d)
				mu.Unlock()
				return next.RoundTrip(req)
			})
		}
		inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
			Middleware: []func(http.RoundTripper) http.RoundTripper{record},
		}))
		resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
		if err != nil {
			t.Fatalf("Post: %v, want the answer of the re-send on legacy", err)
		}
		readAll(t, resp)
		mu.Lock()
		defer mu.Unlock()
		if len(deadlines) != 2 || deadlines[0].IsZero() || !deadlines[0].Equal(deadlines[1]) {
			t.Errorf("attempt deadlines %v, want two, the re-send's the first's", deadlines)
		}
	})
}
