package sockets

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The engines of the sockets path on the wire, through the Backend as the
// request path opens a schema's pool (openSchema): which source schemas
// engine h1 serves and which fall back to nethttp with one log line, h1
// over TLS, what both engines give the caller for a trailer, bytes after a
// response in the same TLS record, and a cancel during a body read. (The
// header waits, bounded by header_timeout in the request path, are root's
// TestHeaderWaitEnds; the request bodies, root's TestRequestBodies.)

// engineSchema is a Config of the sockets path with one source schema,
// products, at url on engine (set for the schema itself, so that engine
// h1 is asked for, not only the built-in default; "": the built-in
// default), edited by edit (nil: none).
func engineSchema(engine, url string, edit func(*env.SourceSchema)) env.Config {
	s := env.SourceSchema{URL: url}
	s.Engine = engine
	if edit != nil {
		edit(&s)
	}
	return env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{"products": s}}
}

// overTLS is an edit for an https schema whose server's certificate the
// CA of caFile signed. On h1 it sets http_version "1.1": h1 serves no
// schema that could negotiate HTTP/2.
func overTLS(engine, caFile string) func(*env.SourceSchema) {
	return func(s *env.SourceSchema) {
		s.TLS.CAFile = caFile
		if engine == env.EngineH1 {
			s.HTTPVersion = "1.1"
		}
	}
}

// openSchema opens source schema products of cfg as the request path does
// (Backend.Key, Backend.Open), logging to log at level, and drains it when
// the test ends.
func openSchema(t *testing.T, cfg env.Config, logs *syncBuffer, level slog.Level) *poolTransport {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	return openSchemaWith(t, cfg, func(s *backend.Schema) { s.Log = log })
}

// openSchemaWith is openSchema with no log, the schema edited by edit
// before it opens (a Resolver, a hook).
func openSchemaWith(t *testing.T, cfg env.Config, edit func(*backend.Schema)) *poolTransport {
	t.Helper()
	settings, _ := cfg.Effective("products")
	u, err := url.Parse(cfg.SourceSchemas["products"].URL)
	if err != nil {
		t.Fatal(err)
	}
	s := &backend.Schema{Name: "products", URL: u, Settings: settings, Config: &cfg, LookupEnv: func(string) (string, bool) { return "", false }, Log: slog.New(slog.DiscardHandler)}
	edit(s)
	k, err := Backend{}.Key(s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Backend{}.Open(s, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Drain)
	return tr.(*poolTransport)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer = wiretest.LogBuffer

// fallbackLine starts the line Open logs when engine h1 cannot serve a
// source schema as configured and nethttp serves it.
const fallbackLine = "engine h1 does not serve this source schema as configured"

// fallbackLines returns the lines of log that say engine h1 fell back.
func fallbackLines(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, fallbackLine) {
			out = append(out, line)
		}
	}
	return out
}

// forEngines runs f as one subtest per engine.
func forEngines(t *testing.T, f func(t *testing.T, engine string)) {
	t.Helper()
	for _, e := range setting.Engines() {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

// ranOn fails the test if engine is h1 and the pool is not h1's: the test
// meant for h1 ran on nethttp.
func ranOn(t *testing.T, engine string, tr *poolTransport) {
	t.Helper()
	if engine == env.EngineH1 && tr.pool.h1 == nil {
		t.Error("engine h1 fell back to nethttp, so the test did not run on h1")
	}
}

// TestEngineFallback: engine h1 asked for a source schema it does not
// serve (HTTP/2 possible over https, a proxy, h2c) serves it with nethttp:
// the request gets what nethttp gives it, and the log has exactly one
// line naming the schema and the key that decided it.
func TestEngineFallback(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cert := []tls.Certificate{pki.Server(t, "127.0.0.1")}
	h2TLS := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2", "http/1.1"}})
	h2c := wiretest.NewServer(t, wiretest.Options{H2COnly: true})
	target := wiretest.NewServer(t, wiretest.Options{})
	proxy := wiretest.NewProxy(t)
	const ok, viaProxy = `{"data":{"ok":true}}`, `{"data":{"via":"proxy"}}`
	cases := []struct {
		name      string
		reached   *wiretest.Server // the server the request must reach
		url       string
		edit      func(*env.SourceSchema)
		wantKey   string
		wantProto int
		wantBody  string
	}{
		{"https, default http_version: HTTP/2 by ALPN", h2TLS, h2TLS.SchemaURL(), func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }, "http_version", 2, ok},
		{"proxy", proxy, target.SchemaURL(), func(s *env.SourceSchema) { s.Proxy = proxy.URL }, "proxy", 1, viaProxy},
		{"h2c", h2c, h2c.SchemaURL(), func(s *env.SourceSchema) { s.HTTPVersion = "h2c" }, "http_version", 2, ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs syncBuffer
			tr := openSchema(t, engineSchema(env.EngineH1, c.url, c.edit), &logs, slog.LevelInfo)
			before := len(c.reached.Requests())
			resp, err := roundTrip(t, context.Background(), tr, http.MethodPost, c.url, false)
			if err != nil {
				t.Fatal(err)
			}
			if body := readBody(t, resp); body != c.wantBody || resp.ProtoMajor != c.wantProto {
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
	srv := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2", "http/1.1"}})
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			cfg := engineSchema("", srv.SchemaURL(), func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }) // the built-in default, h1
			var logs syncBuffer
			tr := openSchema(t, cfg, &logs, level)
			resp, err := roundTrip(t, context.Background(), tr, http.MethodPost, srv.SchemaURL(), false)
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
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

func alpnOf(cs *tls.ConnectionState) string {
	if cs == nil {
		return "(cleartext)"
	}
	return cs.NegotiatedProtocol
}

// TestEngineH1OverTLS: over https with http_version "1.1", h1 serves the
// schema itself (no fallback line): it offers only http/1.1 by ALPN to a
// server that offers h2 first, the caller's response carries the TLS state,
// and two sequential requests share one connection.
func TestEngineH1OverTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	srv := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2", "http/1.1"}})
	var logs syncBuffer
	tr := openSchema(t, engineSchema(env.EngineH1, srv.SchemaURL(), overTLS(env.EngineH1, pki.CAFile)), &logs, slog.LevelInfo)
	for i := range 2 {
		resp, err := roundTrip(t, context.Background(), tr, http.MethodPost, srv.SchemaURL(), false)
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); body != `{"data":{"ok":true}}` || resp.ProtoMajor != 1 {
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
	if lines := fallbackLines(logs.String()); len(lines) != 0 || tr.pool.h1 == nil {
		t.Errorf("h1 fell back: %q", lines)
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
				srv := newScriptServer(t, firstThenPlain(c.answer))
				var logs syncBuffer
				tr := openSchema(t, engineSchema(engine, srv.url, nil), &logs, slog.LevelInfo)
				ranOn(t, engine, tr)
				resp, err := roundTrip(t, context.Background(), tr, http.MethodPost, srv.url, false)
				if err != nil {
					t.Fatal(err)
				}
				var s seen
				s.before = resp.Trailer.Clone()
				s.body = readBody(t, resp)
				s.after = resp.Trailer.Clone()
				resp, err = roundTrip(t, context.Background(), tr, http.MethodPost, srv.url, false)
				if err != nil {
					t.Fatal(err)
				}
				readBody(t, resp)
				remotes := srv.remotes()
				s.reused = len(remotes) == 2 && remotes[0] == remotes[1]
				got[engine] = s
			})
			for _, e := range setting.Engines() {
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

// TestEngineStrayBytesOverTLS: over TLS, stray bytes in the same TLS
// record as the end of a body are decrypted by crypto/tls but not yet
// read: neither the connection's read buffer nor a look at the socket
// sees them. The caller reads the body with a large buffer, so that the
// read of its end asks crypto/tls for exactly the body's rest. The next
// request must still get its own answer, on a new connection, on both
// engines. The server sends its records whole (no dynamic record sizing),
// so the body's end and the stray bytes share a record.
func TestEngineStrayBytesOverTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cfg := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}, DynamicRecordSizingDisabled: true}
	big := `{"data":{"n":"` + strings.Repeat("x", 10000) + `"}}`
	stray := answer("stray")
	forEngines(t, func(t *testing.T, engine string) {
		var mu sync.Mutex
		var remotes []string // guarded by mu: per request
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var conns []net.Conn // guarded by mu
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				wg.Go(func() {
					defer c.Close()
					tc := tls.Server(c, cfg)
					br := bufio.NewReader(tc)
					for {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						io.Copy(io.Discard, req.Body)
						mu.Lock()
						remotes = append(remotes, c.RemoteAddr().String())
						n := len(remotes)
						mu.Unlock()
						reply := answer(big) + stray
						if n > 1 {
							reply = answer(nth(n))
						}
						if _, err := io.WriteString(tc, reply); err != nil {
							return
						}
					}
				})
			}
		})
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
		u := "https://" + ln.Addr().String() + "/graphql"
		var logs syncBuffer
		tr := openSchema(t, engineSchema(engine, u, overTLS(engine, pki.CAFile)), &logs, slog.LevelInfo)
		ranOn(t, engine, tr)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		resp, err := roundTrip(t, ctx, tr, http.MethodPost, u, false)
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
		resp, err = roundTrip(t, ctx, tr, http.MethodPost, u, false)
		if err != nil {
			t.Fatalf("second request: %v", err)
		}
		if second := readBody(t, resp); second != nth(2) {
			t.Errorf("the second caller got %q, want its own answer %s: the stray bytes after the first response reached it", second, nth(2))
		}
		mu.Lock()
		seen := slices.Clone(remotes)
		mu.Unlock()
		if len(seen) == 2 && seen[0] == seen[1] {
			t.Errorf("the second request came on the first's connection %s, which had stray bytes after its response", seen[0])
		}
	})
}

// TestEngineCancelDuringBodyRead: the caller's context is cancelled while
// it is blocked reading a body whose rest the server holds back. The Read
// returns an error matching context.Canceled, the connection closes (the
// server sees it), and the next request succeeds on a new connection.
func TestEngineCancelDuringBodyRead(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
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
		var logs syncBuffer
		tr := openSchema(t, engineSchema(engine, srv.SchemaURL(), nil), &logs, slog.LevelInfo)
		ranOn(t, engine, tr)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.SchemaURL(), strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Hold", "1")
		resp, err := tr.RoundTrip(req)
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
		guard, stop := context.WithTimeout(context.Background(), testTimeout)
		defer stop()
		select {
		case err = <-read:
		case <-guard.Done():
			t.Fatal("Read still blocked after the context was cancelled")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read error %v, want one matching context.Canceled", err)
		}
		srv.WaitClosed(t, guard, first)
		resp2, err := roundTrip(t, guard, tr, http.MethodPost, srv.SchemaURL(), false)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp2)
		if got := srv.Last(t).Remote; got == first || len(srv.Opened()) != 2 {
			t.Errorf("the next request came on %s (opened %v), want a new connection after %s", got, srv.Opened(), first)
		}
	})
}
