// Package wiretest holds what the tests of several packages use to watch
// the transport on the wire: a loopback source schema that records what
// only a server sees (Server, NewProxy), one that counts its connections
// under load (CountingServer; OpenFDs, WaitFDs count descriptors), an HTTP/2 frame reader that sees
// and can drop PING frames (FrameReader, PingListener, NewPingServer), Dial
// hooks, connections and listeners (DialRecorder, CloseTimer, OnClose,
// SilentListener), handlers (BarrierHandler, StreamingHandler,
// CompressingHandler, HoldHandler) and in-process RoundTrippers
// (HandlerTransport, RoundTripFunc).
//
// It is for tests only: nothing but _test.go files may import it. It is a
// normal package, not a _test.go file, so that the tests of several
// packages can share it; its own test fails if a non-test file of the
// module imports it.
//
//	srv := wiretest.NewServer(t, wiretest.Options{})
//	// ... send a request to srv.SchemaURL() ...
//	got := srv.Last(t) // method, path, body, protocol, TLS state, remote address
package wiretest

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Server is a loopback source schema that records what only a server sees:
// the protocol, TLS state, Host, request target and connection of each
// request, and which connections open and close. The embedded
// httptest.Server's URL is the server's own base URL; SchemaURL is the
// source schema URL a configuration names.
type Server struct {
	*httptest.Server
	schemaURL string
	mu        sync.Mutex
	reqs      []Request
	opened    []string
	closed    chan string // remote addresses, as the server sees them close
}

// Request is one request as a Server saw it.
type Request struct {
	Method     string
	Path       string
	Body       string
	ProtoMajor int
	TLS        *tls.ConnectionState
	Header     http.Header
	Host       string
	RequestURI string
	Remote     string // the client's address, as the server sees it
}

// Options say what kind of server NewServer starts. The zero value is a
// cleartext HTTP/1.1 server on a loopback TCP port that answers 200 with
// {"data":{"ok":true}}.
type Options struct {
	Handler    http.HandlerFunc // nil: 200 with {"data":{"ok":true}}
	TLS        *tls.Config      // nil: cleartext
	ALPN       []string         // the TLS server's ALPN list; nil: http/1.1 only
	H2COnly    bool             // cleartext HTTP/2 with prior knowledge, nothing else
	MaxStreams int              // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; 0: Go's default
	Listener   net.Listener     // nil: a loopback TCP listener
	URL        string           // the source schema URL; "": the server's own + /graphql
}

// closedRoom is how many connection closes a Server keeps until a test
// reads them; it reports no more than that.
const closedRoom = 64

// NewServer starts a recording server and closes it when the test ends.
// Each request is recorded before the handler runs; the handler reads the
// body again. Failed handshakes are not logged: several tests expect them.
func NewServer(t testing.TB, o Options) *Server {
	t.Helper()
	h := o.Handler
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"data":{"ok":true}}`)
		}
	}
	s := &Server{closed: make(chan string, closedRoom)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Body: string(body), ProtoMajor: r.ProtoMajor, TLS: r.TLS, Header: r.Header.Clone(), Host: r.Host, RequestURI: r.RequestURI, Remote: r.RemoteAddr})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body)) // the handler reads it again
		h(w, r)
	}))
	if o.Listener != nil {
		s.Listener.Close()
		s.Listener = o.Listener
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
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
	if o.MaxStreams > 0 {
		s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: o.MaxStreams}
	}
	if o.H2COnly {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = p
	}
	if o.TLS != nil {
		s.TLS = o.TLS.Clone()
		s.TLS.NextProtos = o.ALPN
		if s.TLS.NextProtos == nil {
			s.TLS.NextProtos = []string{"http/1.1"}
		}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	s.schemaURL = o.URL
	if s.schemaURL == "" {
		s.schemaURL = s.URL + "/graphql"
	}
	return s
}

// NewProxy starts a forward proxy that answers every request itself with
// {"data":{"via":"proxy"}}: Requests counts what reached it, and the answer
// tells the caller that its request went through it. Its URL is the proxy
// URL.
func NewProxy(t testing.TB) *Server {
	t.Helper()
	return NewServer(t, Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":{"via":"proxy"}}`)
	}})
}

// SchemaURL returns the source schema URL: Options.URL, or the server's
// own URL with the path /graphql.
func (s *Server) SchemaURL() string { return s.schemaURL }

// Requests returns a copy of what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Last returns the last request received; it fails the test if none was.
func (s *Server) Last(t testing.TB) Request {
	t.Helper()
	r := s.Requests()
	if len(r) == 0 {
		t.Fatal("the source schema received no request")
	}
	return r[len(r)-1]
}

// Opened returns the client addresses of the connections opened so far.
func (s *Server) Opened() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opened)
}

// Closed reports the client address of each connection as the server sees
// it close (or hands it over, hijacked), in order. A close that finds 64
// unread ones is not reported. WaitClosed and WaitClosedN read from it too.
func (s *Server) Closed() <-chan string { return s.closed }

// WaitClosed waits until the connection from remote is closed, dropping
// the closes of other connections; it fails the test when ctx ends first.
func (s *Server) WaitClosed(t testing.TB, ctx context.Context, remote string) {
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

// WaitClosedN waits until n connections have closed and returns their
// client addresses; it fails the test when they have not within the given
// time. why explains the expectation in the failure message.
func (s *Server) WaitClosedN(t testing.TB, n int, within time.Duration, why string) []string {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	var got []string
	for len(got) < n {
		select {
		case addr := <-s.closed:
			got = append(got, addr)
		case <-timeout.C:
			t.Fatalf("%d of %d connections closed within %s (closed: %v). %s", len(got), n, within, got, why)
		}
	}
	return got
}
