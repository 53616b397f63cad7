package transport_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// paths lists both paths, for tests whose behaviour is common.
var paths = []env.Path{env.PathLegacy, env.PathSockets}

// seen is what a source schema received.
type seen = wireRequest

// schemaServer is a loopback source schema that records what reaches it
// and which connections open and close: a cleartext wireServer.
type schemaServer = wireServer

// newSchemaServer starts a recording server. A nil handler answers 200 with
// a small JSON body.
func newSchemaServer(t *testing.T, h http.HandlerFunc) *schemaServer {
	t.Helper()
	return newWireServer(t, wireOptions{handler: h})
}

// wireServer is a source schema that records what only a server sees: the
// protocol, TLS state, Host, request target and connection of each request,
// and which connections open and close.
type wireServer struct {
	*httptest.Server
	url    string
	mu     sync.Mutex
	reqs   []wireRequest
	opened []string
	closed chan string // remote addresses, as the server sees them close
}

// wireRequest is one request as a wireServer saw it.
type wireRequest struct {
	Method     string
	Path       string
	Body       string
	ProtoMajor int
	TLS        *tls.ConnectionState
	Header     http.Header
	Host       string
	RequestURI string
	Remote     string
}

// wireOptions say what kind of server newWireServer starts.
type wireOptions struct {
	handler    http.HandlerFunc // nil: 200 with {"data":{"ok":true}}
	tls        *tls.Config      // nil: cleartext
	alpn       []string         // the TLS server's ALPN list; nil: http/1.1 only
	h2cOnly    bool             // cleartext HTTP/2 with prior knowledge, nothing else
	maxStreams int              // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; 0: Go's default
	listener   net.Listener     // nil: a loopback TCP listener
	url        string           // the source schema URL; "": the server's own + /graphql
}

func newWireServer(t *testing.T, o wireOptions) *wireServer {
	t.Helper()
	h := o.handler
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"data":{"ok":true}}`)
		}
	}
	s := &wireServer{closed: make(chan string, 64)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, wireRequest{Method: r.Method, Path: r.URL.Path, Body: string(body), ProtoMajor: r.ProtoMajor, TLS: r.TLS, Header: r.Header.Clone(), Host: r.Host, RequestURI: r.RequestURI, Remote: r.RemoteAddr})
		s.mu.Unlock()
		h(w, r)
	}))
	if o.listener != nil {
		s.Listener.Close()
		s.Listener = o.listener
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are what several tests expect
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
	if o.maxStreams > 0 {
		s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: o.maxStreams}
	}
	if o.h2cOnly {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = p
	}
	if o.tls != nil {
		s.TLS = o.tls.Clone()
		s.TLS.NextProtos = o.alpn
		if s.TLS.NextProtos == nil {
			s.TLS.NextProtos = []string{"http/1.1"}
		}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	s.url = o.url
	if s.url == "" {
		s.url = s.Server.URL + "/graphql"
	}
	return s
}

func (s *wireServer) URL() string { return s.url }

// Requests returns a copy of what the server received so far.
func (s *wireServer) Requests() []wireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Last returns the last request received; it fails the test if none was.
func (s *wireServer) Last(t *testing.T) wireRequest {
	t.Helper()
	r := s.Requests()
	if len(r) == 0 {
		t.Fatal("the source schema received no request")
	}
	return r[len(r)-1]
}

// Opened returns the client addresses of the connections opened so far.
func (s *wireServer) Opened() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opened)
}

// waitClosedN waits until n connections have closed and returns their
// client addresses. why explains the expectation in the failure message.
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

// logBuffer is a log destination that a test reads while the invoker
// writes to it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
