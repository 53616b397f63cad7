package transport_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// paths lists both paths, for tests whose behaviour is common.
var paths = []env.Path{env.PathLegacy, env.PathSockets}

// seen is what a source schema received.
type seen struct {
	Method string
	Path   string
	Header http.Header
	Body   string
	Remote string // client address: one per connection
	Host   string
}

// schemaServer is a loopback source schema that records what reaches it
// and which connections open and close.
type schemaServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	opened   []string
	closed   chan string // remote addresses, as the server sees them close
}

// newSchemaServer starts a recording server. A nil handler answers 200 with
// a small JSON body.
func newSchemaServer(t *testing.T, h http.HandlerFunc) *schemaServer {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"data":{"ok":true}}`)
		}
	}
	s := &schemaServer{closed: make(chan string, 64)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, seen{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body), Remote: r.RemoteAddr, Host: r.Host})
		s.mu.Unlock()
		h(w, r)
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.mu.Lock()
			s.opened = append(s.opened, c.RemoteAddr().String())
			s.mu.Unlock()
		case http.StateClosed, http.StateHijacked:
			select {
			case s.closed <- c.RemoteAddr().String():
			default:
			}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *schemaServer) URL() string { return s.Server.URL + "/graphql" }

// Requests returns a copy of what the server received so far.
func (s *schemaServer) Requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.requests...)
}

// Last returns the last request received; it fails the test if none was.
func (s *schemaServer) Last(t *testing.T) seen {
	t.Helper()
	r := s.Requests()
	if len(r) == 0 {
		t.Fatal("the source schema received no request")
	}
	return r[len(r)-1]
}

// Opened returns the client addresses of the connections opened so far.
func (s *schemaServer) Opened() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.opened...)
}

// waitClosed waits until the connection from remote is closed.
func (s *schemaServer) waitClosed(t *testing.T, ctx context.Context, remote string) {
	t.Helper()
	for {
		select {
		case addr := <-s.closed:
			if addr == remote {
				return
			}
		case <-ctx.Done():
			t.Fatalf("connection %s was not closed: %v", remote, ctx.Err())
		}
	}
}

// config is a Config for path with the named source schemas at urls
// (name, url, name, url, ...).
func config(path env.Path, nameURL ...string) env.Config {
	cfg := env.Config{Transport: path, SourceSchemas: map[string]env.SourceSchema{}}
	for i := 0; i+1 < len(nameURL); i += 2 {
		cfg.SourceSchemas[nameURL[i]] = env.SourceSchema{URL: nameURL[i+1]}
	}
	return cfg
}

// newInvoker builds an invoker and closes it when the test ends.
func newInvoker(t *testing.T, cfg env.Config, opts ...transport.Option) transport.Invoker {
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
