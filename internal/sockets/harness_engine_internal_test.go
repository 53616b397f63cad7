package sockets

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The harness of the engine, stray-byte, hostile-server and settings
// tests that came down from the root package (issue 31): they open a
// schema's pool as the request path does (openSchemaWith) with the hooks a
// transport.SchemaOptions would give it, and send on it what the request
// path would send, again when backend.Resend says so.

// hooks are what the request path hands a schema's Backend besides its
// settings: where its log goes (Info and above; nil: discarded), its
// SchemaOptions, the environment its proxy is read from (nil: empty) and
// the queue hook of transport.WithQueueHook.
type hooks struct {
	logs      *syncBuffer
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	verify    func(tls.ConnectionState) error
	lookupEnv func(string) (string, bool)
	onQueue   func(ctx context.Context, event backend.QueueEvent)
}

// openHooked opens source schema products of cfg with h, and drains it
// when the test ends.
func openHooked(t *testing.T, cfg env.Config, h hooks) *poolTransport {
	t.Helper()
	return openSchemaWith(t, cfg, func(s *backend.Schema) { h.apply(s) })
}

func (h hooks) apply(s *backend.Schema) {
	if h.logs != nil {
		s.Log = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	s.Options = backend.SchemaOptions{Dial: h.dial, VerifyConnection: h.verify}
	if h.lookupEnv != nil {
		s.LookupEnv = h.lookupEnv
	}
	s.OnQueue = h.onQueue
}

// engineOn is engineSchema with, on h1 over https, http_version "1.1"
// when edit left it unset: h1 serves no schema that could negotiate
// HTTP/2, and would fall back to nethttp (EngineFor).
func engineOn(engine, url string, edit func(*env.SourceSchema)) env.Config {
	return engineSchema(engine, url, func(s *env.SourceSchema) {
		if edit != nil {
			edit(s)
		}
		if engine == env.EngineH1 && strings.HasPrefix(url, "https:") && s.HTTPVersion == "" {
			s.HTTPVersion = "1.1"
		}
	})
}

// netHTTPOn is the schema at url on engine nethttp, edited by edit: the
// engine of every HTTP/2, h2c and proxied schema.
func netHTTPOn(url string, edit func(*env.SourceSchema)) env.Config {
	return engineSchema(env.EngineNetHTTP, url, edit)
}

// keyErr returns the error of source schema products' Key in cfg: what
// transport.New fails with when the schema cannot be built.
func keyErr(t *testing.T, cfg env.Config) error {
	t.Helper()
	settings, _ := cfg.Effective("products")
	u, err := url.Parse(cfg.SourceSchemas["products"].URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backend{}.Key(&backend.Schema{Name: "products", URL: u, Settings: settings, Config: &cfg, LookupEnv: func(string) (string, bool) { return "", false }, Log: slog.New(slog.DiscardHandler)})
	return err
}

// withMiddleware opens source schema products of cfg and returns its pool
// with the middleware the Backend adds for it (Backend.Middleware:
// decompression), outermost first, as the request path wraps it.
func withMiddleware(t *testing.T, cfg env.Config) http.RoundTripper {
	t.Helper()
	var schema *backend.Schema
	var rt http.RoundTripper = openSchemaWith(t, cfg, func(s *backend.Schema) { schema = s })
	mws := Backend{}.Middleware(schema)
	for i := len(mws) - 1; i >= 0; i-- {
		rt = mws[i](rt)
	}
	return rt
}

// gqlRequest is a GraphQL Post to u with ctx, its headers h (name, value,
// name, value, ...), as the request path hands it to the transport after
// its header rules: replayable (GetBody set).
func gqlRequest(ctx context.Context, u, body string, h ...string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		panic(err) // a test's own URL
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Add(h[i], h[i+1])
	}
	return req
}

// sendResending sends req on tr as the request path's sender does: again,
// with its body rewound, as long as backend.Resend says it may go again;
// the error a caller would see otherwise.
func sendResending(tr http.RoundTripper, req *http.Request) (*http.Response, error) {
	var tries backend.Tries
	for {
		resp, err := tr.RoundTrip(req)
		if err == nil {
			return resp, nil
		}
		if r := backend.Resend(req, err, &tries); r == backend.NoResend || r == backend.Moved {
			return nil, backend.Cause(err) // Moved: no reload here, nothing to move to
		}
		if req, err = backend.Rewind(req); err != nil {
			return nil, err
		}
	}
}

// sendRead is sendResending with the body read to its end: the body, or
// the error of the call or of the read.
func sendRead(tr http.RoundTripper, req *http.Request) (string, error) {
	resp, err := sendResending(tr, req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// mustSendRead is sendRead of a Post to u with ctx that fails the test on
// an error; it returns the response (its body read and closed) and body.
func mustSendRead(t *testing.T, tr http.RoundTripper, ctx context.Context, u string, h ...string) (*http.Response, string) {
	t.Helper()
	resp, err := sendResending(tr, gqlRequest(ctx, u, `{"query":"{ ok }"}`, h...))
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	return resp, readBody(t, resp)
}

// sendAtOnce sends n Posts to u at once with ctx and headers h, reads each
// answer to its end and returns their status codes; a call that fails
// fails the test.
func sendAtOnce(t *testing.T, tr http.RoundTripper, ctx context.Context, u string, n int, h ...string) (statuses []int) {
	t.Helper()
	return wiretest.StatusesAtOnce(t, n, func() (*http.Response, error) { return sendResending(tr, gqlRequest(ctx, u, `{}`, h...)) })
}

// failures is wiretest.Failures.
type failures = wiretest.Failures
