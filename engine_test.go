package transport_test

// Wire tests of the sockets path's h1 engine (env.EngineH1): which source
// schemas it serves and which fall back to nethttp with one log line, when
// a connection goes back to the pool after a response, and how
// cancellation, a caller's deadline and header_timeout end a request.
// Which connection carried a request is its client address as the server
// saw it.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/h1"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// engineGuard bounds every wait of these tests, so that a broken engine
// fails them instead of hanging them; no test asserts on it.
const engineGuard = 10 * time.Second

// fallbackLines returns the lines of log that say engine h1 fell back.
func fallbackLines(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, h1Fallback) {
			out = append(out, line)
		}
	}
	return out
}

// TestEngineFallback: engine h1 asked for a source schema it does not
// serve (HTTP/2 possible over https, a proxy, h2c) serves it with nethttp:
// the request gets what nethttp gives it, and the log has exactly one
// line naming the schema and the key that decided it.
func TestEngineFallback(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cert := []tls.Certificate{pki.Server(t, "127.0.0.1")}
	h2TLS := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2", "http/1.1"}})
	h2c := newWireServer(t, wiretest.Options{H2COnly: true})
	target := newWireServer(t, wiretest.Options{})
	proxy := &wireServer{Server: wiretest.NewProxy(t)}
	const ok, viaProxy = `{"data":{"ok":true}}`, `{"data":{"via":"proxy"}}`
	cases := []struct {
		name      string
		reached   *wireServer // the server the request must reach
		url       string
		edit      func(*env.SourceSchema)
		wantKey   string
		wantProto int
		wantBody  string
	}{
		{"https, default http_version: HTTP/2 by ALPN", h2TLS, h2TLS.URL(), func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }, "http_version", 2, ok},
		{"proxy", proxy, target.URL(), func(s *env.SourceSchema) { s.Proxy = proxy.Server.URL }, "proxy", 1, viaProxy},
		{"h2c", h2c, h2c.URL(), func(s *env.SourceSchema) { s.HTTPVersion = "h2c" }, "http_version", 2, ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuffer
			inv := newInvoker(t, withSchema(pathH1, c.url, c.edit), infoLog(&logs))
			before := len(c.reached.Requests())
			resp, body := post(t, inv, context.Background(), "products")
			if body != c.wantBody || resp.ProtoMajor != c.wantProto {
				t.Errorf("got %s %q, want HTTP/%d %q as nethttp answers", resp.Proto, body, c.wantProto, c.wantBody)
			}
			if reqs := c.reached.Requests()[before:]; len(reqs) != 1 || reqs[0].ProtoMajor != c.wantProto {
				t.Errorf("the server saw %+v, want one HTTP/%d request", reqs, c.wantProto)
			}
			if c.reached != target && len(target.Requests()) != 0 {
				t.Errorf("the source schema was reached directly, not through the proxy")
			}
			lines := fallbackLines(logs.String())
			if len(lines) != 1 || !strings.Contains(lines[0], "source_schema=products") || !strings.Contains(lines[0], "key="+c.wantKey) {
				t.Errorf("fallback lines %q, want exactly one naming source_schema=products and key=%s; log:\n%s", lines, c.wantKey, logs.String())
			}
		})
	}
}

// TestEngineFallbackQuietByDefault: when h1 is only the built-in default
// (no engine set anywhere), an https schema that may speak HTTP/2 is served
// by nethttp without an Info line (that is the documented rule, not a
// surprise), and the same line is there at Debug.
func TestEngineFallbackQuietByDefault(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	srv := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2", "http/1.1"}})
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			cfg := withSchema(env.PathSockets, srv.URL(), func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile })
			cfg.Defaults.Engine = "" // the built-in default, h1
			var logs logBuffer
			inv := newInvoker(t, cfg, transport.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))))
			resp, _ := post(t, inv, context.Background(), "products")
			if resp.ProtoMajor != 2 {
				t.Errorf("got %s, want HTTP/2 from nethttp", resp.Proto)
			}
			lines := fallbackLines(logs.String())
			switch {
			case level == slog.LevelInfo && len(lines) != 0:
				t.Errorf("Info log has fallback lines %q for an engine nobody set", lines)
			case level == slog.LevelDebug && (len(lines) != 1 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "key=http_version")):
				t.Errorf("Debug log fallback lines %q, want one at DEBUG naming key=http_version", lines)
			}
		})
	}
}

// TestEngineH1OverTLS: over https with http_version "1.1", h1 serves the
// schema itself (no fallback line): it offers only http/1.1 by ALPN to a
// server that offers h2 first, the caller's response carries the TLS state,
// and two sequential requests share one connection.
func TestEngineH1OverTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	srv := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2", "http/1.1"}})
	var logs logBuffer
	inv := newInvoker(t, engineConfig(env.EngineH1, srv.URL(), func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }), infoLog(&logs))
	for i := range 2 {
		resp, body := post(t, inv, context.Background(), "products")
		if body != `{"data":{"ok":true}}` || resp.ProtoMajor != 1 {
			t.Errorf("request %d: got %s %q, want HTTP/1.1 and the server's answer", i, resp.Proto, body)
		}
		if resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" || resp.TLS.Version != tls.VersionTLS13 {
			t.Errorf("request %d: the caller's response has TLS state %+v, want TLS 1.3 with ALPN http/1.1", i, resp.TLS)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server saw %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.ProtoMajor != 1 || r.TLS == nil || r.TLS.NegotiatedProtocol != "http/1.1" {
			t.Errorf("request %d: the server saw HTTP/%d with ALPN %q, want HTTP/1.1 with http/1.1", i, r.ProtoMajor, alpnOf(r.TLS))
		}
	}
	if opened := srv.Opened(); len(opened) != 1 || reqs[1].Remote != reqs[0].Remote {
		t.Errorf("the server saw connections %v and requests from %s, %s; want one connection for both", opened, reqs[0].Remote, reqs[1].Remote)
	}
	if lines := fallbackLines(logs.String()); len(lines) != 0 {
		t.Errorf("h1 fell back: %q", lines)
	}
}

func alpnOf(cs *tls.ConnectionState) string {
	if cs == nil {
		return "(cleartext)"
	}
	return cs.NegotiatedProtocol
}

// h1Server is a loopback server written byte by byte: it answers the
// first request it receives with first, written at once, and every later
// one with a plain answer whose body names its number. It records which
// connection carried each request. Between requests it waits for the next
// one on the same connection, so a connection ends when the client closes
// it (rawServer.closed reports that).
type h1Server struct {
	*rawServer
	mu      sync.Mutex
	remotes []string // per request, in order
	conns   []string // per connection, in order of accept
}

func newH1Server(t *testing.T, first string) *h1Server {
	s := &h1Server{}
	s.rawServer = newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		s.mu.Lock()
		s.conns = append(s.conns, c.RemoteAddr().String())
		s.mu.Unlock()
		for {
			if _, err := readRequest(br); err != nil {
				return
			}
			s.mu.Lock()
			s.remotes = append(s.remotes, c.RemoteAddr().String())
			n := len(s.remotes)
			s.mu.Unlock()
			answer := first
			if n > 1 {
				body := fmt.Sprintf(`{"data":{"n":%d}}`, n)
				answer = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
	return s
}

func (s *h1Server) seen() (remotes, conns []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.remotes), slices.Clone(s.conns)
}

// waitClosed waits until the server sees the connection from remote
// closed; it fails the test after engineGuard.
func (s *rawServer) waitClosed(t *testing.T, remote, why string) {
	t.Helper()
	guard := time.NewTimer(engineGuard)
	defer guard.Stop()
	for {
		select {
		case addr := <-s.closed:
			if addr == remote {
				return
			}
		case <-guard.C:
			t.Fatalf("connection %s still open after %s: %s", remote, engineGuard, why)
		}
	}
}

// TestEngineH1ConnectionReuse: on h1 a connection carries the next request
// only when its response ended cleanly: body read to its end, or closed
// early with a small rest already buffered, or chunked with a trailer. A
// body closed early with more than h1.DrainLimit bytes not yet received, a
// response with Connection: close (the server keeps the connection open
// and would answer on it) and a response followed by stray bytes close the
// connection: the client closes it, and the next request, which must get
// its own answer, dials a new one.
func TestEngineH1ConnectionReuse(t *testing.T) {
	const body = `{"data":{"n":1}}`
	plain := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	readToEnd := func(t *testing.T, resp *http.Response) {
		if got := readAll(t, resp); got != body {
			t.Errorf("the first caller got %q, want %q", got, body)
		}
	}
	readThenClose := func(n int) func(*testing.T, *http.Response) {
		return func(t *testing.T, resp *http.Response) {
			buf := make([]byte, n)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				t.Fatalf("reading %d bytes of the body: %v", n, err)
			}
			resp.Body.Close()
		}
	}
	small := strings.Repeat("s", 200)
	cases := []struct {
		name      string
		first     string // the first response, written at once
		read      func(*testing.T, *http.Response)
		wantReuse bool
	}{
		{"body read to its end", plain, readToEnd, true},
		{"early Close, more than DrainLimit not yet received",
			fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n0123456789", 16*h1.DrainLimit), readThenClose(10), false},
		{"early Close, the small rest buffered",
			fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(small), small), readThenClose(10), true},
		{"Connection: close, the server keeps the connection open",
			fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body), readToEnd, false},
		{"chunked with a trailer",
			"HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"data\":\r\n8\r\n{\"n\":1}}\r\n0\r\nX-Sum: 42\r\n\r\n", func(t *testing.T, resp *http.Response) {
				readToEnd(t, resp)
				if got := resp.Trailer.Get("X-Sum"); got != "42" {
					t.Errorf("Trailer after EOF %v, want X-Sum: 42", resp.Trailer)
				}
			}, true},
		{"stray bytes after Content-Length",
			plain + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray", readToEnd, false},
		{"stray bytes after a chunked body",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + body + "\r\n0\r\n\r\nstray", readToEnd, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newH1Server(t, c.first)
			inv := newInvoker(t, withSchema(pathH1, srv.url, nil))
			ctx, cancel := context.WithTimeout(context.Background(), engineGuard)
			defer cancel()
			resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ n }"}`))
			if err != nil {
				t.Fatalf("first Post: %v", err)
			}
			c.read(t, resp)
			if _, got := post(t, inv, ctx, "products"); got != `{"data":{"n":2}}` {
				t.Errorf("the second caller got %q, want its own answer {\"data\":{\"n\":2}}", got)
			}
			remotes, conns := srv.seen()
			if len(remotes) != 2 {
				t.Fatalf("the server saw %d requests, want 2", len(remotes))
			}
			if reused := remotes[1] == remotes[0]; reused != c.wantReuse || len(conns) != map[bool]int{true: 1, false: 2}[c.wantReuse] {
				t.Errorf("requests came on %v, connections opened %v; want the second on the first's connection: %v", remotes, conns, c.wantReuse)
			}
			if !c.wantReuse {
				srv.waitClosed(t, remotes[0], "the client must close a connection it does not reuse")
			}
		})
	}
}

// TestEngineTrailers: a chunked response's trailer reaches the caller as
// the same resp.Trailer on both engines: with a Trailer header, the
// declared names with nil values before EOF and the values after; without
// one, nothing before EOF and the values after. The connection is reused.
func TestEngineTrailers(t *testing.T) {
	const chunks = "8\r\n{\"data\":\r\n3\r\n{}}\r\n0\r\nX-Sum: 42\r\nX-Count: 1\r\nX-Count: 2\r\n\r\n"
	type seen struct {
		before, after http.Header
		body          string
		reused        bool
	}
	after := http.Header{"X-Sum": {"42"}, "X-Count": {"1", "2"}}
	cases := []struct {
		name   string
		answer string
		want   seen
	}{
		{"declared", "HTTP/1.1 200 OK\r\nTrailer: X-Sum, X-Count\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks,
			seen{before: http.Header{"X-Sum": nil, "X-Count": nil}, after: after, body: `{"data":{}}`, reused: true}},
		{"undeclared", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks,
			seen{after: after, body: `{"data":{}}`, reused: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]seen{}
			forEngines(t, func(t *testing.T, engine string) {
				srv := newH1Server(t, c.answer)
				inv := newInvoker(t, engineConfig(engine, srv.url, nil))
				resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				var s seen
				s.before = resp.Trailer.Clone()
				s.body = readAll(t, resp)
				s.after = resp.Trailer.Clone()
				post(t, inv, context.Background(), "products")
				remotes, _ := srv.seen()
				s.reused = len(remotes) == 2 && remotes[0] == remotes[1]
				got[engine] = s
			})
			for _, e := range engines {
				if !reflect.DeepEqual(got[e], c.want) {
					t.Errorf("%s: caller saw %+v, want %+v", e, got[e], c.want)
				}
			}
			if !reflect.DeepEqual(got[env.EngineH1], got[env.EngineNetHTTP]) {
				t.Errorf("the engines differ: h1 %+v, nethttp %+v", got[env.EngineH1], got[env.EngineNetHTTP])
			}
		})
	}
}

// TestEngineH1StrayBytesOverTLS: over TLS, stray bytes in the same TLS
// record as the end of a body are decrypted by crypto/tls but not yet
// read: neither the connection's read buffer nor a look at the socket
// sees them. The caller reads the body with a large buffer, so that the
// read of its end asks crypto/tls for exactly the body's rest. The next
// request must still get its own answer, on a new connection. The server
// sends its records whole (no dynamic record sizing), so the body's end and
// the stray bytes share a record.
func TestEngineH1StrayBytesOverTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cfg := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}, DynamicRecordSizingDisabled: true}
	big := `{"data":{"n":"` + strings.Repeat("x", 10000) + `"}}`
	stray := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
	var mu sync.Mutex
	var remotes []string
	srv := newRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		tc := tls.Server(c, cfg)
		br := bufio.NewReader(tc)
		for {
			if _, err := readRequest(br); err != nil {
				return
			}
			mu.Lock()
			remotes = append(remotes, c.RemoteAddr().String())
			n := len(remotes)
			mu.Unlock()
			answer := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(big), big) + stray
			if n > 1 {
				body := fmt.Sprintf(`{"data":{"n":%d}}`, n)
				answer = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}
			if _, err := io.WriteString(tc, answer); err != nil {
				return
			}
		}
	})
	url := "https" + strings.TrimPrefix(srv.url, "http")
	forEngines(t, func(t *testing.T, engine string) {
		mu.Lock()
		remotes = nil
		mu.Unlock()
		var logs logBuffer
		inv := newInvoker(t, engineConfig(engine, url, func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }), infoLog(&logs))
		ctx, cancel := context.WithTimeout(context.Background(), engineGuard)
		defer cancel()
		resp, err := inv.Post(ctx, "products", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading the first body: %v", err)
			}
		}
		resp.Body.Close()
		if string(got) != big {
			t.Errorf("the first caller got %d bytes, want its own %d", len(got), len(big))
		}
		resp, err = inv.Post(ctx, "products", []byte(`{}`))
		if err != nil {
			t.Fatalf("second Post: %v", err)
		}
		if second := readAll(t, resp); second != `{"data":{"n":2}}` {
			t.Errorf("the second caller got %q, want its own answer {\"data\":{\"n\":2}}: the stray bytes after the first response reached it", second)
		}
		mu.Lock()
		seen := slices.Clone(remotes)
		mu.Unlock()
		if len(seen) == 2 && seen[0] == seen[1] {
			t.Errorf("the second request came on the first's connection %s, which had stray bytes after its response", seen[0])
		}
		checkRanOn(t, engine, logs.String())
	})
}

// TestEngineCancelDuringBodyRead: the caller's context is cancelled while
// it is blocked reading a body whose rest the server holds back. The Read
// returns an error matching context.Canceled, the connection closes (the
// server sees it), and the next request succeeds on a new connection.
func TestEngineCancelDuringBodyRead(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hold") == "" {
				io.WriteString(w, `{"data":{"ok":true}}`)
				return
			}
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "part:")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}})
		defer close(release)
		cfg := engineConfig(engine, srv.URL(), nil)
		cfg.ForwardHeaders = []string{"X-Hold"}
		inv := newInvoker(t, cfg)
		ctx, cancel := context.WithCancel(gatewayCtx("X-Hold", "1"))
		defer cancel()
		resp, err := inv.Post(ctx, "products", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		part := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "part:" {
			t.Fatalf("read %q, %v; want the part the server sent", part, err)
		}
		first := srv.Last(t).Remote
		read := make(chan error, 1)
		go func() {
			_, err := resp.Body.Read(make([]byte, 64))
			read <- err
		}()
		cancel()
		select {
		case err = <-read:
		case <-time.After(engineGuard):
			t.Fatal("Read still blocked after the context was cancelled")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read error %v, want one matching context.Canceled", err)
		}
		waitCtx, stop := context.WithTimeout(context.Background(), engineGuard)
		defer stop()
		srv.WaitClosed(t, waitCtx, first)
		post(t, inv, context.Background(), "products")
		if got := srv.Last(t).Remote; got == first || len(srv.Opened()) != 2 {
			t.Errorf("the next request came on %s (opened %v), want a new connection after %s", got, srv.Opened(), first)
		}
	})
}

// TestEngineHeaderWaitEnds: a server that never answers. A caller's
// deadline ends the wait for the header with an error matching
// context.DeadlineExceeded that is not a header_timeout; the schema's
// header_timeout ends it with the header_timeout error, also when the
// caller's own deadline is later. Either way the connection closes and
// the next request gets a new one.
func TestEngineHeaderWaitEnds(t *testing.T) {
	cases := []struct {
		name          string
		headerTimeout time.Duration
		deadline      time.Duration // the caller's; 0: none
		wantHeaderTO  bool
	}{
		{"caller's deadline", 0, 100 * time.Millisecond, false},
		{"header_timeout, no caller deadline", 100 * time.Millisecond, 0, true},
		// header_timeout applies only to a request without a deadline
		// (docs/configuration.md, Timeouts): the caller's deadline rules.
		{"header_timeout, a caller deadline", 100 * time.Millisecond, 300 * time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) {
				release := make(chan struct{})
				hold := wiretest.HoldHandler(release)
				srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("X-Hold") != "" {
						hold(w, r)
						return
					}
					io.WriteString(w, `{"data":{"ok":true}}`)
				}})
				defer close(release)
				cfg := engineConfig(engine, srv.URL(), func(s *env.SourceSchema) { s.HeaderTimeout = c.headerTimeout })
				cfg.ForwardHeaders = []string{"X-Hold"}
				inv := newInvoker(t, cfg)
				ctx, cancel := context.WithCancel(gatewayCtx("X-Hold", "1"))
				defer cancel()
				if c.deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				res := postAsync(inv, ctx, "products", `{}`)
				var err error
				select {
				case r := <-res:
					err = r.err
				case <-time.After(engineGuard):
					cancel()
					t.Fatal("Post still waited for the header")
				}
				errorNamesSchema(t, err)
				if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "header_timeout") != c.wantHeaderTO {
					t.Errorf("error %q, want one matching context.DeadlineExceeded that names header_timeout: %v", err, c.wantHeaderTO)
				}
				first := srv.Last(t).Remote
				waitCtx, stop := context.WithTimeout(context.Background(), engineGuard)
				defer stop()
				srv.WaitClosed(t, waitCtx, first)
				post(t, inv, context.Background(), "products")
				if got := srv.Last(t).Remote; got == first {
					t.Errorf("the next request came on the timed-out connection %s", first)
				}
			})
		})
	}
}

// TestEngineRequestBodies: Do with bodies of every framing reaches the
// source schema whole, byte for byte, with the framing net/http would use,
// on both engines, and each connection serves the next request: a body
// that leaves with the head (small), one written after it (past h1's
// one-write bound of 64 KiB), one of unknown length (chunked), and none.
func TestEngineRequestBodies(t *testing.T) {
	big := strings.Repeat(`{"query":"{ products { id name } }"}`, 4000) // 144,000 bytes
	cases := []struct {
		name        string
		body        func() io.Reader // nil: no body
		wantBody    string
		wantTE      string // Transfer-Encoding the server saw
		wantLengthH string // Content-Length header the server saw
	}{
		{"small, known length", func() io.Reader { return strings.NewReader(`{"query":"{ ok }"}`) }, `{"query":"{ ok }"}`, "", "18"},
		{"large, known length", func() io.Reader { return strings.NewReader(big) }, big, "", "144000"},
		{"unknown length", func() io.Reader {
			return io.MultiReader(strings.NewReader(big[:70000]), strings.NewReader(big[70000:]))
		}, big, "chunked", ""},
		{"none", nil, "", "", "0"},
	}
	forEngines(t, func(t *testing.T, engine string) {
		var mu sync.Mutex
		var seen []string // Transfer-Encoding and Content-Length per request, as the handler saw them
		srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, strings.Join(r.TransferEncoding, ",")+"|"+r.Header.Get("Content-Length"))
			mu.Unlock()
			io.WriteString(w, `{"data":{"ok":true}}`)
		}})
		inv := newInvoker(t, engineConfig(engine, srv.URL(), nil))
		for i, c := range cases {
			var body io.Reader
			if c.body != nil {
				body = c.body()
				if c.wantTE == "chunked" {
					body = struct{ io.Reader }{body} // hides the length from http.NewRequest
				}
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL(), body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := inv.Do(context.Background(), "products", req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := readAll(t, resp); got != `{"data":{"ok":true}}` {
				t.Errorf("%s: caller got %q", c.name, got)
			}
			r := srv.Last(t)
			if r.Body != c.wantBody {
				t.Errorf("%s: server got %d bytes, want %d", c.name, len(r.Body), len(c.wantBody))
			}
			mu.Lock()
			got := seen[i]
			mu.Unlock()
			if want := c.wantTE + "|" + c.wantLengthH; got != want {
				t.Errorf("%s: server saw Transfer-Encoding|Content-Length %q, want %q", c.name, got, want)
			}
		}
		if n := len(srv.Opened()); n != 1 {
			t.Errorf("%d connections for %d sequential requests, want 1", n, len(cases))
		}
	})
}
