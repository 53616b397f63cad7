package legacy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/headers"
)

// TestMain fails the package if a shared transport's connections outlive
// the tests that opened them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// connServer is a loopback server that tells each response which client
// address (which connection) its request came from, in the X-Remote
// header, and closes a channel per connection when the server sees that
// connection close.
type connServer struct {
	*httptest.Server
	mu     sync.Mutex
	closed map[string]chan struct{} // by client address
}

func newConnServer(t *testing.T, h http.HandlerFunc) *connServer {
	t.Helper()
	s := &connServer{closed: map[string]chan struct{}{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Remote", r.RemoteAddr)
		h(w, r)
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			close(s.closedCh(c.RemoteAddr().String()))
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *connServer) closedCh(addr string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.closed[addr]
	if !ok {
		ch = make(chan struct{})
		s.closed[addr] = ch
	}
	return ch
}

// isClosed reports whether the server has seen the connection from addr
// close.
func (s *connServer) isClosed(addr string) bool {
	select {
	case <-s.closedCh(addr):
		return true
	default:
		return false
	}
}

// waitClosed waits until the server sees the connection from addr close.
// The guard only turns a connection that never closes into a failure
// instead of a hung test.
func (s *connServer) waitClosed(t *testing.T, addr, what string) {
	t.Helper()
	select {
	case <-s.closedCh(addr):
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the server never saw the connection from %s close", what, addr)
	}
}

// get sends a GET for u through rt, reads the whole body and returns it
// with the client address the server saw.
func get(t *testing.T, rt http.RoundTripper, u string) (remote, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", u, err)
	}
	return resp.Header.Get("X-Remote"), string(b)
}

var discard = slog.New(slog.DiscardHandler)

func noEnv(string) (string, bool) { return "", false }

// schema returns source schema name of cfg as the request path passes it
// to the backend.
func schema(t *testing.T, cfg *env.Config, name string) *backend.Schema {
	t.Helper()
	u, err := url.Parse(cfg.SourceSchemas[name].URL)
	if err != nil {
		t.Fatal(err)
	}
	eff, ok := cfg.Effective(name)
	if !ok {
		t.Fatalf("schema %q not configured", name)
	}
	return &backend.Schema{Name: name, URL: u, Settings: eff, Config: cfg, LookupEnv: noEnv, Log: discard}
}

// openOn keys s on b and opens its Transport; it fails the test on error.
func openOn(t *testing.T, b backend.Backend, s *backend.Schema) backend.Pool {
	t.Helper()
	k, err := b.Key(s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := b.Open(s, k)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// hop is one request a server received.
type hop struct {
	server string // "first" or "other"
	path   string
	header http.Header
}

// countingRT counts the requests it passes on.
type countingRT struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// TestFrontHeadersOnFirstHost: the schema's client follows a redirect and
// sends every hop through the pipeline, but applies the header rules only to
// hops that go to the first request's host, as http.Client keeps
// credentials from another host. The caller's request is not modified.
func TestFrontHeadersOnFirstHost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameHost  bool // the redirect stays on the first server
		wantFirst bool // the second hop carries the rules' headers
	}{
		{"redirect on the same host", true, true},
		{"redirect to another host", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hops := make(chan hop, 4)
			record := func(server string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hops <- hop{server, r.URL.Path, r.Header.Clone()}
					io.WriteString(w, server+r.URL.Path)
				}
			}
			other := httptest.NewServer(record("other"))
			t.Cleanup(other.Close)
			var first *httptest.Server
			first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/start" {
					record("first")(w, r)
					return
				}
				hops <- hop{"first", r.URL.Path, r.Header.Clone()}
				to := first.URL + "/next"
				if !tc.sameHost {
					to = other.URL + "/next"
				}
				http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(first.Close)

			rules, err := headers.New(headers.Spec{Forward: []string{"X-Tenant"}, Set: map[string]string{"X-Gateway": "fusion"}})
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			next := &countingRT{next: tr}
			b := New()
			t.Cleanup(b.Close)
			cfg := &env.Config{SourceSchemas: map[string]env.SourceSchema{"x": {URL: first.URL + "/start"}}}
			front := b.Front(schema(t, cfg, "x"), rules, next)

			gw := httptest.NewRequest(http.MethodPost, "http://gateway/graphql", nil)
			gw.Header.Set("X-Tenant", "t1")
			req, err := http.NewRequestWithContext(gateway.WithRequest(context.Background(), gw), http.MethodGet, first.URL+"/start", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := front.RoundTrip(req)
			if err != nil {
				t.Fatalf("round trip: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantServer := "other"
			if tc.sameHost {
				wantServer = "first"
			}
			if string(body) != wantServer+"/next" {
				t.Errorf("body = %q, want %q: the redirect was not followed", body, wantServer+"/next")
			}

			h1, h2 := <-hops, <-hops
			if h1.server != "first" || h1.path != "/start" || h2.server != wantServer || h2.path != "/next" {
				t.Fatalf("hops = %s%s, %s%s; want first/start, %s/next", h1.server, h1.path, h2.server, h2.path, wantServer)
			}
			if h1.header.Get("X-Tenant") != "t1" || h1.header.Get("X-Gateway") != "fusion" {
				t.Errorf("first hop headers = %v, want X-Tenant and X-Gateway", h1.header)
			}
			got := h2.header.Get("X-Tenant") == "t1" && h2.header.Get("X-Gateway") == "fusion"
			if leaked := h2.header.Get("X-Tenant") != "" || h2.header.Get("X-Gateway") != ""; got != tc.wantFirst || (!tc.wantFirst && leaked) {
				t.Errorf("second hop (%s) headers = %v; want the rules' headers: %v", h2.server, h2.header, tc.wantFirst)
			}
			if n := next.n.Load(); n != 2 {
				t.Errorf("the pipeline ran %d times, want once per hop (2)", n)
			}
			if len(req.Header) != 0 {
				t.Errorf("the caller's request headers were modified: %v", req.Header)
			}
		})
	}
}

// TestKey: every source schema of one configuration has the same key, and
// only the shared settings of defaults and the handler lifetime change it.
func TestKey(t *testing.T) {
	base := func() env.Config {
		return env.Config{SourceSchemas: map[string]env.SourceSchema{
			"a": {URL: "http://a.test/graphql"},
			"b": {URL: "http://b.test/graphql", Settings: env.Settings{ConnectTimeout: time.Second, HeaderTimeout: time.Second}},
		}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*env.Config)
		equal bool
	}{
		{"same configuration", func(*env.Config) {}, true},
		{"a schema's own setting", func(c *env.Config) {
			c.SourceSchemas["a"] = env.SourceSchema{URL: "http://a.test/graphql", Settings: env.Settings{IdleConnTimeout: time.Second}}
		}, true},
		{"defaults.header_timeout", func(c *env.Config) { c.Defaults.HeaderTimeout = time.Second }, true},
		{"defaults.conn_lifetime", func(c *env.Config) { c.Defaults.ConnLifetime = time.Second }, true},
		{"defaults.http_version", func(c *env.Config) { c.Defaults.HTTPVersion = "1.1" }, true},
		{"built-in value spelled out", func(c *env.Config) { c.Defaults.ConnectTimeout = env.DefaultConnectTimeout }, true},
		{"defaults.connect_timeout", func(c *env.Config) { c.Defaults.ConnectTimeout = time.Second }, false},
		{"defaults.idle_conn_timeout", func(c *env.Config) { c.Defaults.IdleConnTimeout = time.Second }, false},
		{"defaults.max_conns_per_host", func(c *env.Config) { c.Defaults.MaxConnsPerHost = 3 }, false},
		{"defaults.max_idle_conns_per_host", func(c *env.Config) { c.Defaults.MaxIdleConnsPerHost = 3 }, false},
		{"defaults.keep_alive", func(c *env.Config) { c.Defaults.KeepAlive = env.Off }, false},
		{"legacy.handler_lifetime", func(c *env.Config) { c.Legacy.HandlerLifetime = time.Second }, false},
		{"legacy.handler_lifetime off", func(c *env.Config) { c.Legacy.HandlerLifetime = env.Off }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			old, edited := base(), base()
			tc.edit(&edited)
			ka, _ := b.Key(schema(t, &old, "a"))
			kb, _ := b.Key(schema(t, &old, "b"))
			if !ka.Equal(kb) {
				t.Fatal("two schemas of one configuration have different keys")
			}
			k2, _ := b.Key(schema(t, &edited, "a"))
			if got := ka.Equal(k2); got != tc.equal {
				t.Errorf("key equal after the edit = %v, want %v", got, tc.equal)
			}
			if got := k2.Equal(ka); got != tc.equal {
				t.Errorf("key equal after the edit, reversed = %v, want %v", got, tc.equal)
			}
		})
	}
}

// closeRecorder is a request body that records Close.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

// TestOpenShares: Transports opened with equal keys share one rotator, so
// the requests of both schemas arrive on one client connection; another
// key opens another rotator, with its own connection. Draining one of two
// Transports keeps the shared connections; draining the last closes them,
// and a request on a drained Transport fails with backend.ErrDrained
// without being sent.
func TestOpenShares(t *testing.T) {
	srv := newConnServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
	cfg := &env.Config{
		Legacy: env.LegacySettings{HandlerLifetime: env.Off},
		SourceSchemas: map[string]env.SourceSchema{
			"a": {URL: srv.URL + "/a"},
			"b": {URL: srv.URL + "/b"},
		},
	}
	other := &env.Config{
		Defaults:      env.Settings{IdleConnTimeout: time.Minute},
		Legacy:        cfg.Legacy,
		SourceSchemas: map[string]env.SourceSchema{"c": {URL: srv.URL + "/c"}},
	}
	b := New()
	t.Cleanup(b.Close)
	open := func(cfg *env.Config, name string) backend.Pool { return openOn(t, b, schema(t, cfg, name)) }
	ta, tb, tc := open(cfg, "a"), open(cfg, "b"), open(other, "c")
	t.Cleanup(tc.Drain)

	ra, body := get(t, ta, srv.URL+"/a")
	if body != "/a" {
		t.Fatalf("body = %q", body)
	}
	if rb, _ := get(t, tb, srv.URL+"/b"); rb != ra {
		t.Errorf("schemas with equal keys: requests came from %s and %s, want one shared connection", ra, rb)
	}
	rc, _ := get(t, tc, srv.URL+"/c")
	if rc == ra {
		t.Errorf("a different key sent on the shared connection %s, want a rotator of its own", rc)
	}

	ta.Drain()
	ta.Drain() // Drain is once per Transport: a second call must not release b's share
	if srv.isClosed(ra) {
		t.Errorf("draining one of two Transports closed the shared connection %s", ra)
	}
	if rb, _ := get(t, tb, srv.URL+"/b"); rb != ra {
		t.Errorf("after draining a: b's request came from %s, want the shared connection %s", rb, ra)
	}

	tb.Drain()
	srv.waitClosed(t, ra, "draining the last Transport")
	if rc2, _ := get(t, tc, srv.URL+"/c"); rc2 != rc {
		t.Errorf("draining a and b moved c from %s to %s", rc, rc2)
	}

	for name, tr := range map[string]backend.Pool{"a": ta, "b": tb} {
		body := &closeRecorder{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/"+name, body)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		if !errors.Is(err, backend.ErrDrained) {
			t.Errorf("RoundTrip on drained %s = %v, want backend.ErrDrained", name, err)
		}
		if !body.closed.Load() {
			t.Errorf("RoundTrip on drained %s did not close the request body", name)
		}
	}
}

// TestIgnored: the keys set in a configuration that the legacy path does
// not read. It reads the shared settings under defaults only, and the
// per-request settings at both levels.
func TestIgnored(t *testing.T) {
	schemas := func(s map[string]env.Settings) map[string]env.SourceSchema {
		m := map[string]env.SourceSchema{}
		for name, set := range s {
			m[name] = env.SourceSchema{URL: "http://" + name + ".test/graphql", Settings: set}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		cfg  env.Config
		want []string
	}{
		{"nothing set", env.Config{}, nil},
		{"schemas without settings", env.Config{SourceSchemas: schemas(map[string]env.Settings{"x": {}})}, nil},
		{"defaults.conn_lifetime ignored", env.Config{Defaults: env.Settings{ConnLifetime: time.Minute}}, []string{"defaults.conn_lifetime"}},
		{"defaults.conn_lifetime off ignored", env.Config{Defaults: env.Settings{ConnLifetime: env.Off}}, []string{"defaults.conn_lifetime"}},
		{"defaults.connect_timeout read", env.Config{Defaults: env.Settings{ConnectTimeout: time.Second}}, nil},
		{"defaults shared and per-request keys read", env.Config{Defaults: env.Settings{
			IdleConnTimeout: time.Second, MaxConnsPerHost: 2, MaxIdleConnsPerHost: 2, KeepAlive: env.Off,
			HeaderTimeout: time.Second, RequestTimeout: time.Second, Headers: env.HeaderSettings{Forward: []string{"X-A"}},
			Retry: env.RetrySettings{MaxAttempts: 2}, Dedupe: env.Enabled,
		}}, nil},
		{"defaults sockets keys ignored, in key order", env.Config{Defaults: env.Settings{
			Proxy: "http://egress.test:3128", HTTPVersion: "h2c", TLS: env.TLSSettings{CAFile: "ca.pem"},
		}}, []string{"defaults.http_version", "defaults.tls.ca_file", "defaults.proxy"}},
		{"source_schemas.x.connect_timeout ignored", env.Config{SourceSchemas: schemas(map[string]env.Settings{"x": {ConnectTimeout: time.Second}})}, []string{"source_schemas.x.connect_timeout"}},
		{"defaults.max_pending_requests ignored", env.Config{Defaults: env.Settings{MaxPendingRequests: 8}}, []string{"defaults.max_pending_requests"}},
		{"source_schemas.x.max_pending_requests ignored", env.Config{SourceSchemas: schemas(map[string]env.Settings{"x": {MaxPendingRequests: env.NoLimit}})}, []string{"source_schemas.x.max_pending_requests"}},
		{"source_schemas.x.header_timeout read", env.Config{SourceSchemas: schemas(map[string]env.Settings{"x": {HeaderTimeout: time.Second}})}, nil},
		{"source_schemas per-request keys read", env.Config{SourceSchemas: schemas(map[string]env.Settings{"x": {
			RequestTimeout: time.Second, Headers: env.HeaderSettings{Set: map[string]string{"X-A": "1"}}, Retry: env.RetrySettings{WaitMin: time.Second}, Dedupe: env.Enabled,
		}})}, nil},
		{"traffic shaping keys read at both levels", env.Config{
			Defaults:      env.Settings{RequestCompression: env.RequestCompressionSettings{Codec: "gzip", MinBytes: 2048}},
			SourceSchemas: schemas(map[string]env.Settings{"x": {RateLimit: env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10, Wait: time.Millisecond}}}),
		}, nil},
		{"defaults first, then schemas by name", env.Config{
			Defaults: env.Settings{UnixSocket: "/run/x.sock", HeaderTimeout: time.Second},
			SourceSchemas: schemas(map[string]env.Settings{
				"c": {HTTPVersion: "1.1"}, "b": {KeepAlive: time.Second}, "a": {IdleConnTimeout: time.Second, HeaderTimeout: time.Second}, "d": {Proxy: "off"},
			}),
		}, []string{"defaults.unix_socket", "source_schemas.a.idle_conn_timeout", "source_schemas.b.keep_alive", "source_schemas.c.http_version", "source_schemas.d.proxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New().Ignored(&tc.cfg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Ignored mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIgnoredLoaded: a configuration loaded from files that set nothing the
// legacy path ignores reports nothing, although Load fills built-in
// defaults into Config.Defaults. The zero Loader is env.Load without the
// process environment, so that the machine's variables cannot change the
// result.
func TestIgnoredLoaded(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"empty file", "", nil},
		{"one schema, url only", "source_schemas:\n  x:\n    url: http://x.test/graphql\n", nil},
		{"read keys only", "defaults:\n  connect_timeout: 3s\n  header_timeout: 5s\nlegacy:\n  handler_lifetime: 1m\nsource_schemas:\n  x:\n    url: http://x.test/graphql\n    request_timeout: 9s\n", nil},
		{"built-in value spelled out", "defaults:\n  conn_lifetime: 2m\n", nil},
		{"defaults.conn_lifetime", "defaults:\n  conn_lifetime: 1m\n", []string{"defaults.conn_lifetime"}},
		{"max_pending_requests at its built-in value", "defaults:\n  max_pending_requests: 1024\n", nil},
		{"defaults.max_pending_requests", "defaults:\n  max_pending_requests: 10\n", []string{"defaults.max_pending_requests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fusion.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := env.Loader{}.Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := New().Ignored(&cfg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Ignored mismatch (-want +got):\n%s\nDefaults as loaded: %+v", diff, cfg.Defaults)
			}
		})
	}
}
