package transport_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// paths lists both paths, for tests whose behaviour is common.
var paths = []env.Path{env.PathLegacy, env.PathSockets, pathH1}

// pathH1 is the sockets path on the h1 engine (defaults.engine: h1): the
// third configuration of every cross-path wire test. config turns it into
// env.PathSockets with that default.
const pathH1 env.Path = "sockets-h1"

// onSockets reports whether p is the sockets path, on either engine.
func onSockets(p env.Path) bool { return p == env.PathSockets || p == pathH1 }

// schemaServer is a loopback source schema that records what reaches it
// and which connections open and close: a cleartext wireServer.
type schemaServer = wireServer

// newSchemaServer starts a recording server. A nil handler answers 200 with
// a small JSON body.
func newSchemaServer(t *testing.T, h http.HandlerFunc) *schemaServer {
	t.Helper()
	return newWireServer(t, wiretest.Options{Handler: h})
}

// wireServer is a wiretest.Server under the names the root tests use: URL()
// and url are its source schema URL (wiretest.Server.SchemaURL), and
// Server.URL is the server's own base URL.
type wireServer struct {
	*wiretest.Server
	url string
}

// URL returns the source schema URL.
func (s *wireServer) URL() string { return s.url }

// wireRequest is one request as a wireServer saw it.
type wireRequest = wiretest.Request

// newWireServer starts a recording server (wiretest.NewServer).
func newWireServer(t *testing.T, o wiretest.Options) *wireServer {
	t.Helper()
	s := wiretest.NewServer(t, o)
	return &wireServer{Server: s, url: s.SchemaURL()}
}

// config is a Config for path with the named source schemas at urls
// (name, url, name, url, ...).
func config(path env.Path, nameURL ...string) env.Config {
	cfg := env.Config{Path: path, SourceSchemas: map[string]env.SourceSchema{}}
	switch path {
	case env.PathSockets:
		// "sockets" in paths is the nethttp engine; pathH1 the default, h1.
		cfg.Defaults.Engine = env.EngineNetHTTP
	case pathH1:
		cfg.Path = env.PathSockets
		cfg.Defaults.Engine = env.EngineH1
	}
	for i := 0; i+1 < len(nameURL); i += 2 {
		cfg.SourceSchemas[nameURL[i]] = env.SourceSchema{URL: nameURL[i+1]}
	}
	return cfg
}

// withSchema returns a Config for path with one source schema, products,
// at url, whose settings edit sets (nil: none).
func withSchema(path env.Path, url string, edit func(*env.SourceSchema)) env.Config {
	cfg := config(path, "products", url)
	if edit != nil {
		s := cfg.SourceSchemas["products"]
		edit(&s)
		cfg.SourceSchemas["products"] = s
	}
	return cfg
}

// newInvoker builds an invoker and closes it when the test ends.
func newInvoker(t testing.TB, cfg env.Config, opts ...transport.Option) *transport.Transport {
	t.Helper()
	opts = append([]transport.Option{transport.WithLookupEnv(noEnv), transport.WithLogger(quiet)}, opts...)
	inv, err := transport.New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { inv.Close() })
	return inv
}

func noEnv(string) (string, bool) { return "", false }

var quiet = slog.New(slog.DiscardHandler)

// gatewayCtx returns a context carrying a gateway request with headers h
// (name, value, name, value, ...).
func gatewayCtx(h ...string) context.Context {
	r, _ := http.NewRequest("POST", "http://gateway.test/graphql", nil)
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Add(h[i], h[i+1])
	}
	return transport.WithGatewayRequest(context.Background(), r)
}

// readAll reads and closes a response body; it fails the test on error.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

// post sends body to schema with Post and returns the response's body.
func post(t *testing.T, inv transport.Invoker, ctx context.Context, schema string) (*http.Response, string) {
	t.Helper()
	resp, err := inv.Post(ctx, schema, []byte(`{"query":"{ ok }"}`))
	if err != nil {
		t.Fatalf("Post %s: %v", schema, err)
	}
	return resp, readAll(t, resp)
}

// postAtOnce sends n Posts to schema at once, each with ctx, reads each
// answer to its end and returns their status codes; a call that fails
// fails the test.
func postAtOnce(t *testing.T, inv transport.Invoker, ctx context.Context, schema string, n int) (statuses []int) {
	t.Helper()
	return wiretest.StatusesAtOnce(t, n, func() (*http.Response, error) { return inv.Post(ctx, schema, []byte(`{}`)) })
}

// postResult is what a Post sent by postAsync got: the body read to its
// end, or the error of the call or of the read.
type postResult struct {
	body string
	err  error
}

// postAsync sends body to schema with Post from a goroutine and delivers
// what it got on the returned channel. The channel has room for the
// result, so the goroutine ends when the call does even if no one reads it.
func postAsync(inv transport.Invoker, ctx context.Context, schema, body string) <-chan postResult {
	done := make(chan postResult, 1)
	go func() {
		resp, err := inv.Post(ctx, schema, []byte(body))
		if err != nil {
			done <- postResult{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- postResult{string(b), err}
	}()
	return done
}

// failures is wiretest.Failures.
type failures = wiretest.Failures

// logBuffer is a log destination that a test reads while the invoker
// writes to it.
type logBuffer = wiretest.LogBuffer

// engines lists the sockets path's engines (env.Settings.Engine), for the
// sockets-only tests whose setting acts on both.
var engines = []string{env.EngineNetHTTP, env.EngineH1}

// forEngines runs f as one subtest per engine of the sockets path.
func forEngines(t *testing.T, f func(t *testing.T, engine string)) {
	t.Helper()
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

// onEngine returns an edit that runs edit (nil: none), then sets the
// schema's engine. On h1 over https it sets http_version "1.1" when edit
// left it unset: h1 serves no schema that could negotiate HTTP/2 and
// would fall back to nethttp (sockets engineFor).
func onEngine(engine string, edit func(*env.SourceSchema)) func(*env.SourceSchema) {
	return func(s *env.SourceSchema) {
		if edit != nil {
			edit(s)
		}
		s.Engine = engine
		if engine == env.EngineH1 && strings.HasPrefix(s.URL, "https:") && s.HTTPVersion == "" {
			s.HTTPVersion = "1.1"
		}
	}
}

// engineConfig is socketsConfig with the schema on engine (onEngine).
func engineConfig(engine, url string, edit func(*env.SourceSchema)) env.Config {
	return withSchema(env.PathSockets, url, onEngine(engine, edit))
}

// h1Fallback starts the Info line the sockets backend logs when engine h1
// cannot serve a source schema as configured and nethttp serves it.
const h1Fallback = "engine h1 does not serve this source schema as configured"

// infoLog is a WithLogger option writing Info and above to buf as text.
func infoLog(buf *logBuffer) transport.Option {
	return transport.WithLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
}

// checkRanOn fails the test if engine is h1 and log (written at Info
// level, infoLog) says that h1 fell back to nethttp: the test meant for
// h1 ran on nethttp.
func checkRanOn(t *testing.T, engine, log string) {
	t.Helper()
	if engine == env.EngineH1 && strings.Contains(log, h1Fallback) {
		t.Errorf("engine h1 fell back to nethttp, so the test did not run on h1; log:\n%s", log)
	}
}

// gapGuard bounds how long a gap test waits for something that the code
// under test does at once; it only keeps a broken build from hanging.
const gapGuard = 10 * time.Second

// newInvokerProcessEnv builds an invoker that reads the proxy variables
// from the process environment (no WithLookupEnv, unlike newInvoker), and
// closes it when the test ends.
func newInvokerProcessEnv(t *testing.T, cfg env.Config, opts ...transport.Option) *transport.Transport {
	t.Helper()
	inv, err := transport.New(cfg, append([]transport.Option{transport.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { inv.Close() })
	return inv
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// secondChance is a source schema handler's hold: each request is counted
// and held until a second one came or 200ms passed, so that a hedge or a
// shared call has its chance to show on the wire. Only the correct code's
// passing waits on the timer; no test reads a time.
type secondChance struct {
	mu     sync.Mutex
	n      int           // guarded by mu
	second chan struct{} // closed by the second request
}

func newSecondChance() *secondChance { return &secondChance{second: make(chan struct{})} }

// hold counts a request and holds it.
func (c *secondChance) hold() {
	c.mu.Lock()
	c.n++
	if c.n == 2 {
		close(c.second)
	}
	c.mu.Unlock()
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.second:
	case <-t.C:
	}
}

// count returns how many requests came.
func (c *secondChance) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
