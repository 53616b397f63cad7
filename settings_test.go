package transport_test

// Each setting of env.Settings, observed where it acts: on the wire, at a
// server that records what only a server sees (the TLS state, the protocol,
// the connection, the frames), or in the process (the log, the dialer).
// Settings the legacy path honours are run on both paths, the cross-path
// suite; those only the sockets path's pool and engines implement (TLS,
// http_version, HTTP/2, decompression, unix_socket, proxy, keep_alive and
// the connection lifetime on the sockets path) are internal/sockets'
// settings_internal_test.go.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// socketsConfig returns a sockets Config with one source schema, products,
// at url, whose settings edit sets.
func socketsConfig(url string, edit func(*env.SourceSchema)) env.Config {
	return withSchema(env.PathSockets, url, edit)
}

// errorNamesSchema fails the test unless err names source schema products.
func errorNamesSchema(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("call succeeded, want an error")
	}
	if !strings.Contains(err.Error(), `source schema "products"`) {
		t.Errorf("error %q does not name the source schema", err)
	}
}

// TestSettingMaxIdleConnsPerHost: three requests at once open three
// connections; with max_idle_conns_per_host 1, two of them close as they
// turn idle and the third serves the next request. The legacy path's
// shared transport takes the value from defaults (see Settings).
func TestSettingMaxIdleConnsPerHost(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{Handler: wiretest.BarrierHandler(3)})
			cfg := config(p, "products", srv.URL())
			cfg.ForwardHeaders = []string{"X-Barrier"}
			if p == env.PathLegacy {
				cfg.Defaults.MaxIdleConnsPerHost = 1 // the shared transport reads defaults only
			} else {
				s := cfg.SourceSchemas["products"]
				s.MaxIdleConnsPerHost = 1
				cfg.SourceSchemas["products"] = s
			}
			inv := newInvoker(t, cfg)
			postAtOnce(t, inv, gatewayCtx("X-Barrier", "1"), "products", 3)
			if n := len(srv.Opened()); n != 3 {
				t.Fatalf("the server saw %d connections, want 3", n)
			}
			closed := srv.WaitClosedN(t, 2, 3*time.Second, "max_idle_conns_per_host 1 keeps one idle connection and closes the others as they turn idle (env.Settings.MaxIdleConnsPerHost: per source schema on sockets, per host on legacy, whose shared transport reads defaults)")
			post(t, inv, context.Background(), "products")
			last := srv.Last(t).Remote
			if slices.Contains(closed, last) || !slices.Contains(srv.Opened(), last) || len(srv.Opened()) != 3 {
				t.Errorf("the next request came on %s (closed: %v, opened: %v); want the one kept idle", last, closed, srv.Opened())
			}
		})
	}
}

// TestSettingKeepAlive: keep_alive sets the TCP keep-alive probes of the
// source schema's connections; the legacy path's shared transport reads it
// from defaults. Probes cannot be seen on loopback without a packet
// capture, so the client socket's kernel timer is read instead. (The
// sockets path's engines: internal/sockets, TestSettingKeepAlive.)
func TestSettingKeepAlive(t *testing.T) {
	cases := []struct {
		name      string
		keepAlive time.Duration
		wantTimer bool
	}{
		{"defaults 3s", 3 * time.Second, true},
		{"defaults off", env.Off, false},
	}
	for _, c := range cases {
		t.Run(string(env.PathLegacy)+"/"+c.name, func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{})
			cfg := config(env.PathLegacy, "products", srv.URL())
			cfg.Defaults.KeepAlive = c.keepAlive
			inv := newInvoker(t, cfg)
			post(t, inv, context.Background(), "products")
			kind, left := wiretest.SocketTimer(t, srv.Last(t).Remote)
			switch {
			case c.wantTimer && (kind != "02" || left > c.keepAlive):
				t.Errorf("socket timer %s with %s left, want the keep-alive timer (02) within %s", kind, left, c.keepAlive)
			case !c.wantTimer && kind != "00":
				t.Errorf("socket timer %s with %s left, want none (00)", kind, left)
			}
		})
	}
}

// TestSettingTimeouts: request_timeout cuts a body that streams too long,
// unless the caller's deadline is earlier; header_timeout set on the
// schema bounds the wait for headers. (tls_handshake_timeout, which only
// the sockets path's engines implement: internal/sockets,
// TestSettingTLSHandshakeTimeout.)
func TestSettingTimeouts(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p)+"/request_timeout cuts the body", func(t *testing.T) {
			srv := newSchemaServer(t, wiretest.StreamingHandler)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.RequestTimeout = 100 * time.Millisecond
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			err := readBodyErr(inv.Post(context.Background(), "products", []byte(`{}`)))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want a request_timeout matching context.DeadlineExceeded", err)
			}
		})
		t.Run(string(p)+"/an earlier caller deadline wins", func(t *testing.T) {
			srv := newSchemaServer(t, wiretest.StreamingHandler)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.RequestTimeout = 5 * time.Second
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := readBodyErr(inv.Post(ctx, "products", []byte(`{}`)))
			if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want the caller's deadline (context.DeadlineExceeded, not request_timeout)", err)
			}
		})
		t.Run(string(p)+"/header_timeout of the schema", func(t *testing.T) {
			release := make(chan struct{})
			srv := newSchemaServer(t, wiretest.HoldHandler(release))
			defer close(release)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.HeaderTimeout = 50 * time.Millisecond
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			_, err := inv.Post(context.Background(), "products", []byte(`{}`))
			errorNamesSchema(t, err)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "header_timeout") {
				t.Errorf("error %v, want a header_timeout", err)
			}
		})
	}
}

// readBodyErr reads a response body to its end and returns the error that
// ended the call or the read.
func readBodyErr(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// TestSettingRetry: retry.* sends a query again on a listed status, never
// a mutation; by default nothing is retried.
func TestSettingRetry(t *testing.T) {
	const query, mutation = `{"query":"{ ok }"}`, `{"query":"mutation { order }"}`
	retry := env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
	cases := []struct {
		name      string
		retry     env.RetrySettings
		body      string
		wantTries int
		wantCode  int
	}{
		{"query retried", retry, query, 3, 200},
		{"mutation never retried", retry, mutation, 1, 503},
		{"default: one attempt", env.RetrySettings{}, query, 1, 503},
		{"status not listed", env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond, Statuses: []int{502}}, query, 1, 503},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(string(p)+"/"+c.name, func(t *testing.T) {
				var tries atomic.Int32
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					if tries.Add(1) < 3 {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
					io.WriteString(w, `{"data":{"ok":true}}`)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Retry = c.retry }))
				resp, err := inv.Post(context.Background(), "products", []byte(c.body))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if n := len(srv.Requests()); n != c.wantTries || resp.StatusCode != c.wantCode {
					t.Errorf("server saw %d tries, caller got %d; want %d tries and %d", n, resp.StatusCode, c.wantTries, c.wantCode)
				}
			})
		}
	}
}

// TestSettingDedupe: with dedupe, identical queries in flight at once share
// one source schema request; without it, each is sent.
func TestSettingDedupe(t *testing.T) {
	cases := []struct {
		toggle   env.Toggle
		wantSent int
	}{
		{env.Enabled, 1},
		{env.Inherit, 3},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(string(p)+"/"+c.toggle.String(), func(t *testing.T) {
				started := make(chan struct{})
				var arrived atomic.Int32
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					// Hold the answer until every caller has started, and a
					// little longer, so that all of them reach the invoker
					// while the first request is in flight.
					<-started
					time.Sleep(150 * time.Millisecond)
					io.WriteString(w, `{"data":{"shared":true}}`)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = c.toggle }))
				var wg sync.WaitGroup
				bodies := make(chan string, 3)
				for range 3 {
					wg.Go(func() {
						arrived.Add(1)
						resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ shared }"}`))
						if err != nil {
							t.Error(err)
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						bodies <- string(b)
					})
				}
				for arrived.Load() < 3 {
					time.Sleep(time.Millisecond)
				}
				close(started)
				wg.Wait()
				close(bodies)
				for b := range bodies {
					if b != `{"data":{"shared":true}}` {
						t.Errorf("a caller got %q", b)
					}
				}
				if n := len(srv.Requests()); n != c.wantSent {
					t.Errorf("the server received %d requests for 3 identical queries, want %d", n, c.wantSent)
				}
			})
		}
	}
}

// TestSettingHeaderRules: headers.forward, forward_matching, rename, set and
// the HeaderValues hook, on both paths and both calls; hop-by-hop names in
// any rule are never sent, and a header the caller set wins.
func TestSettingHeaderRules(t *testing.T) {
	gw := gatewayCtx(
		"X-Forward-Me", "f", "X-Tenant-Id", "acme", "X-Tenant-Region", "eu", "X-Other", "no",
		"X-User", "u1", "Te", "trailers", "X-Hop", "h", "X-Proxy", "p",
	)
	settings := env.HeaderSettings{
		Forward:         []string{"X-Forward-Me"},
		ForwardMatching: []string{"^X-Tenant-"},
		Rename:          map[string]string{"X-User": "X-Source-User", "Te": "X-Te", "X-Hop": "Keep-Alive", "X-Proxy": "Proxy-Token"},
		Set:             map[string]string{"X-Static": "static", "Upgrade": "websocket", "Proxy-Authorization": "Basic eDp5", "Keep-Alive": "timeout=5", "Trailer": "X-Sum"},
	}
	values := map[string]transport.HeaderValueFunc{ // what code outside the module writes
		"X-Computed": func(_ context.Context, gw *http.Request) (string, bool) {
			if gw == nil {
				return "", false
			}
			return "user=" + gw.Header.Get("X-User"), true
		},
		"Proxy-Authenticate": func(context.Context, *http.Request) (string, bool) { return "Basic", true },
	}
	want := map[string]string{ // "" : must not arrive
		"X-Forward-Me": "f", "X-Tenant-Id": "acme", "X-Tenant-Region": "eu", "X-Other": "",
		"X-Source-User": "u1", "X-User": "", "X-Te": "", "Te": "", "Proxy-Token": "",
		"X-Static": "static", "Upgrade": "", "Proxy-Authorization": "", "Keep-Alive": "", "Trailer": "",
		"X-Computed": "user=u1", "Proxy-Authenticate": "",
	}
	for _, p := range paths {
		for _, call := range []string{"Post", "Do", "Do with caller headers"} {
			t.Run(string(p)+"/"+call, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := config(p, "products", srv.URL())
				s := cfg.SourceSchemas["products"]
				s.Headers = settings
				cfg.SourceSchemas["products"] = s
				inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{HeaderValues: values}))
				w := want
				switch call {
				case "Post":
					post(t, inv, gw, "products")
				default:
					req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(`{}`))
					if call == "Do with caller headers" {
						req.Header.Set("X-Static", "caller")
						req.Header.Set("X-Computed", "caller")
						req.Header.Set("X-Tenant-Id", "caller")
						w = withPairs(want, "X-Static", "caller", "X-Computed", "caller", "X-Tenant-Id", "caller")
					}
					resp, err := inv.Do(gw, "products", req)
					if err != nil {
						t.Fatal(err)
					}
					readAll(t, resp)
					if call == "Do with caller headers" && (req.Header.Get("X-Forward-Me") != "" || len(req.Header) != 3) {
						t.Errorf("Do modified the caller's request headers: %v", req.Header)
					}
				}
				got := srv.Last(t).Header
				for name, v := range w {
					if g := strings.Join(got.Values(name), ", "); g != v {
						t.Errorf("%s: server saw %q, want %q", name, g, v)
					}
				}
			})
		}
	}
}

// withPairs returns a copy of m with the pairs kv set.
func withPairs(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// orderMiddleware appends name to the request's X-Order header on the way
// in and to the response's X-Order-Back on the way out.
func orderMiddleware(name string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return wiretest.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
			r2 := req.Clone(req.Context())
			r2.Header.Add("X-Order", name)
			resp, err := next.RoundTrip(r2)
			if err == nil {
				resp.Header.Add("X-Order-Back", name)
			}
			return resp, err
		})
	}
}

// TestSettingRoundTripperHook: the RoundTripper hook serves a source schema
// that has no server at all, with the header rules and middleware still
// applied, on both paths and both calls.
func TestSettingRoundTripperHook(t *testing.T) {
	const schemaURL = "http://products.fusion.invalid/graphql"
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var mu sync.Mutex
			var seenHeaders []http.Header
			ht := &wiretest.HandlerTransport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seenHeaders = append(seenHeaders, r.Header.Clone())
				mu.Unlock()
				io.WriteString(w, `{"data":{"in":"process"}}`)
			})}
			cfg := config(p, "products", schemaURL)
			cfg.ForwardHeaders = []string{"X-Tenant"}
			s := cfg.SourceSchemas["products"]
			s.Headers.Set = map[string]string{"X-Static": "static"}
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
				RoundTripper: ht,
				Middleware:   []func(http.RoundTripper) http.RoundTripper{orderMiddleware("schema")},
			}))
			if _, body := post(t, inv, gatewayCtx("X-Tenant", "acme"), "products"); body != `{"data":{"in":"process"}}` {
				t.Errorf("Post body %q", body)
			}
			req, _ := http.NewRequest(http.MethodGet, schemaURL+"?query=%7Bok%7D", nil)
			resp, err := inv.Do(gatewayCtx("X-Tenant", "acme"), "products", req)
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, resp); body != `{"data":{"in":"process"}}` {
				t.Errorf("Do body %q", body)
			}
			if n := ht.Calls(); n != 2 {
				t.Errorf("the hook served %d calls, want 2", n)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, h := range seenHeaders {
				if h.Get("X-Tenant") != "acme" || h.Get("X-Static") != "static" || h.Get("X-Order") != "schema" {
					t.Errorf("call %d: handler saw headers %v, want forwarded, set and middleware headers", i, h)
				}
			}
		})
	}
}

// TestSettingMiddlewareOrder: global middleware runs outside the schema's,
// each list in its order, on both paths.
func TestSettingMiddlewareOrder(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv := newInvoker(t, config(p, "products", srv.URL()),
				transport.WithMiddleware(orderMiddleware("global-1"), orderMiddleware("global-2")),
				transport.WithSchemaOptions("products", transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{
					orderMiddleware("schema-1"), orderMiddleware("schema-2"),
				}}))
			resp, _ := post(t, inv, context.Background(), "products")
			if got, want := srv.Last(t).Header.Values("X-Order"), []string{"global-1", "global-2", "schema-1", "schema-2"}; !slices.Equal(got, want) {
				t.Errorf("the request passed %v, want %v", got, want)
			}
			if got, want := resp.Header.Values("X-Order-Back"), []string{"schema-2", "schema-1", "global-2", "global-1"}; !slices.Equal(got, want) {
				t.Errorf("the response passed %v, want %v", got, want)
			}
		})
	}
}

// TestSettingReloadKeepsWarmConnections: three source schemas on three
// servers, warm; a reload that changes one setting of one schema. A
// transport setting gives that schema a new connection and keeps the
// others'; a per-request setting keeps all three. The client's source
// port, as each server sees it, tells which connection a request came on.
func TestSettingReloadKeepsWarmConnections(t *testing.T) {
	cases := []struct {
		path        env.Path
		name        string
		change      func(*env.SourceSchema)
		wantNewConn bool
	}{
		{env.PathSockets, "idle_conn_timeout", func(s *env.SourceSchema) { s.IdleConnTimeout = 30 * time.Second }, true},
		{env.PathSockets, "max_conns_per_host", func(s *env.SourceSchema) { s.MaxConnsPerHost = 8 }, true},
		{env.PathSockets, "max_pending_requests", func(s *env.SourceSchema) { s.MaxPendingRequests = 8 }, true}, // part of the pool key: a new pool
		{env.PathSockets, "request_timeout", func(s *env.SourceSchema) { s.RequestTimeout = 30 * time.Second }, false},
		{env.PathSockets, "decompression", func(s *env.SourceSchema) { s.Decompression = []string{"gzip"} }, false},
		{env.PathSockets, "headers.set", func(s *env.SourceSchema) { s.Headers.Set = map[string]string{"X-New": "1"} }, false},
		{env.PathLegacy, "idle_conn_timeout", func(s *env.SourceSchema) { s.IdleConnTimeout = 30 * time.Second }, false}, // legacy's transport reads defaults only
	}
	names := []string{"products", "reviews", "inventory"}
	for _, c := range cases {
		t.Run(string(c.path)+"/"+c.name, func(t *testing.T) {
			srvs := map[string]*schemaServer{}
			var nameURL []string
			for _, n := range names {
				srvs[n] = newSchemaServer(t, nil)
				nameURL = append(nameURL, n, srvs[n].URL())
			}
			cfg := config(c.path, nameURL...)
			inv := newInvoker(t, cfg)
			warm := map[string]string{}
			for _, n := range names {
				post(t, inv, context.Background(), n)
				warm[n] = srvs[n].Last(t).Remote
			}
			next := config(c.path, nameURL...)
			s := next.SourceSchemas["reviews"]
			c.change(&s)
			next.SourceSchemas["reviews"] = s
			if err := inv.Reload(next); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				post(t, inv, context.Background(), n)
				got := srvs[n].Last(t).Remote
				if moved, want := got != warm[n], n == "reviews" && c.wantNewConn; moved != want {
					t.Errorf("%s: came from %s, before the reload from %s; want a new connection: %v", n, got, warm[n], want)
				}
			}
		})
	}
}
