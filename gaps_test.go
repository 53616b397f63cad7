package transport_test

// Tests that close gaps a mutation study found: for each, a behaviour that
// could be broken while every other test still passed. Each test watches
// the wire: what a server received, on which connection, and what the
// caller got.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

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

// TestGapLegacyRedirectAuthorization: the legacy path follows a 307 and
// forwards the gateway's Authorization only to hops on the first request's
// host (URL.Host, port included). The other server is on another port of
// 127.0.0.1, so it is another host.
func TestGapLegacyRedirectAuthorization(t *testing.T) {
	const secret = "Bearer gateway-secret"
	cases := []struct {
		name      string
		otherHost bool // the 307 points to another server; else to a path on the same one
		wantAuth  bool // the redirect's hop carries Authorization
	}{
		{"to another host", true, false},
		{"to the same host", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			other := newSchemaServer(t, nil)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					io.WriteString(w, `{"data":{"ok":true}}`)
					return
				}
				location := "/elsewhere"
				if c.otherHost {
					location = other.URL()
				}
				http.Redirect(w, r, location, http.StatusTemporaryRedirect)
			})
			cfg := config(env.PathLegacy, "products", srv.URL())
			cfg.ForwardHeaders = []string{"Authorization"}
			inv := newInvoker(t, cfg)
			resp, body := post(t, inv, gatewayCtx("Authorization", secret), "products")
			if resp.StatusCode != http.StatusOK || body != `{"data":{"ok":true}}` {
				t.Fatalf("caller got %d %q, want the redirect followed", resp.StatusCode, body)
			}
			first := srv.Requests()[0]
			if got := first.Header.Get("Authorization"); got != secret {
				t.Errorf("the first hop carried Authorization %q, want %q", got, secret)
			}
			hops := srv.Requests()[1:]
			if c.otherHost {
				hops = other.Requests()
			}
			if len(hops) != 1 || hops[0].Method != http.MethodPost || hops[0].Body != `{"query":"{ ok }"}` {
				t.Fatalf("the redirect's target received %+v, want the POST once", hops)
			}
			if got, has := hops[0].Header["Authorization"]; has != c.wantAuth {
				t.Errorf("the redirect's hop to %s carried Authorization %q; want it: %v (forwarded only to the first request's host)", hops[0].Host, got, c.wantAuth)
			}
		})
	}
}

// staleServer is a raw HTTP/1.1 server: it answers the first request on
// each connection with a keep-alive 200, and reads the second request in
// full and hangs up without answering, as a server that closed a
// keep-alive connection just as a request arrived. It records every
// request it read, across connections.
type staleServer struct {
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	got    []string // "METHOD body"
}

func newStaleServer(t *testing.T) *staleServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &staleServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				continue
			}
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		s.closed = true
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *staleServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.got = append(s.got, req.Method+" "+string(body))
		s.mu.Unlock()
		if n == 2 {
			return // read in full, never answered: the connection closes
		}
		const answer = `{"data":{"ok":true}}`
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer); err != nil {
			return
		}
	}
}

func (s *staleServer) URL() string { return "http://" + s.ln.Addr().String() + "/graphql" }

// count returns how many requests read so far were "method body".
func (s *staleServer) count(method, body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.got {
		if g == method+" "+body {
			n++
		}
	}
	return n
}

// Connections returns how many connections the server accepted.
func (s *staleServer) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// TestGapStaleConnectionResend: on the sockets path, a request that fails
// on a reused connection before any answer is sent again only if it is
// idempotent. A POST (a mutation) reaches the server once and the caller
// gets the error, also when a middleware makes its body replayable (which
// is what lets a resend happen at all); a GET is sent again on a new
// connection and succeeds.
func TestGapStaleConnectionResend(t *testing.T) {
	const mutation = `{"query":"mutation { m }"}`
	passThrough := func(next http.RoundTripper) http.RoundTripper { return next }
	cases := []struct {
		name      string
		opts      []transport.Option
		get       bool // Do with a GET; else Post of the mutation
		wantSent  int  // times the probe reached the server
		wantConns int  // connections the server accepted in all
	}{
		{"POST mutation", nil, false, 1, 1},
		{"POST mutation, body replayable by a middleware", []transport.Option{transport.WithMiddleware(passThrough)}, false, 1, 1},
		{"GET via Do", nil, true, 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newStaleServer(t)
			inv := newInvoker(t, config(env.PathSockets, "products", srv.URL()), c.opts...)
			post(t, inv, context.Background(), "products") // warms the connection the probe reuses
			var resp *http.Response
			var err error
			method, body := http.MethodPost, mutation
			if c.get {
				method, body = http.MethodGet, ""
				req, rerr := http.NewRequest(http.MethodGet, srv.URL()+"?query=%7B%20ok%20%7D", nil)
				if rerr != nil {
					t.Fatal(rerr)
				}
				resp, err = inv.Do(context.Background(), "products", req)
			} else {
				resp, err = inv.Post(context.Background(), "products", []byte(mutation))
			}
			if sent := srv.count(method, body); sent != c.wantSent {
				t.Errorf("the server read the %s %d times, want %d", method, sent, c.wantSent)
			}
			if n := srv.Connections(); n != c.wantConns {
				t.Errorf("the server accepted %d connections, want %d", n, c.wantConns)
			}
			if c.get {
				if err != nil {
					t.Fatalf("Do GET: %v, want the answer of the resend", err)
				}
				if got := readAll(t, resp); got != `{"data":{"ok":true}}` {
					t.Errorf("Do GET: body %q", got)
				}
				return
			}
			if err == nil {
				readAll(t, resp)
				t.Fatal("Post of the mutation succeeded, want the error of the connection that closed")
			}
			errorNamesSchema(t, err)
		})
	}
}

// TestGapSocketsIgnoresProcessProxy: with HTTP_PROXY set in the process
// environment and no WithLookupEnv, the sockets path goes direct unless the
// schema says proxy: environment. The schema has a name that is not
// loopback, so Go's loopback exemption cannot hide a proxy; a Dial hook
// takes that name to the schema's server and dials any other address as
// asked.
func TestGapSocketsIgnoresProcessProxy(t *testing.T) {
	proxy := wiretest.NewProxy(t)
	for _, k := range []string{"HTTP_PROXY", "http_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}
	cases := []struct {
		proxy     string
		wantProxy bool
	}{
		{"", false},
		{"off", false},
		{"environment", true}, // the control: the proxy would see the request
	}
	for _, c := range cases {
		t.Run("proxy="+c.proxy, func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			name := net.JoinHostPort("products.internal", port)
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == name {
					addr = srv.Listener.Addr().String()
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			before := len(proxy.Requests())
			inv := newInvokerProcessEnv(t, socketsConfig("http://"+name+"/graphql", func(s *env.SourceSchema) { s.Proxy = c.proxy }),
				transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dial}))
			_, body := post(t, inv, context.Background(), "products")
			viaProxy, direct := len(proxy.Requests())-before, len(srv.Requests())
			if c.wantProxy {
				if viaProxy != 1 || direct != 0 || body != `{"data":{"via":"proxy"}}` {
					t.Errorf("proxy saw %d, schema %d, body %q; want the request through HTTP_PROXY", viaProxy, direct, body)
				}
				return
			}
			if viaProxy != 0 || direct != 1 {
				t.Errorf("proxy saw %d requests, schema %d; want the request direct, HTTP_PROXY of the process ignored", viaProxy, direct)
			}
		})
	}
}

// TestGapReloadRemovedSchemaClosesConnections: on the sockets path a
// reload that removes a source schema closes its pool's idle connections.
func TestGapReloadRemovedSchemaClosesConnections(t *testing.T) {
	a := newSchemaServer(t, nil)
	b := newSchemaServer(t, nil)
	inv := newInvoker(t, config(env.PathSockets, "a", a.URL(), "b", b.URL()))
	post(t, inv, context.Background(), "b")
	warm := b.Last(t).Remote
	if err := inv.Reload(config(env.PathSockets, "a", a.URL())); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	closed := b.WaitClosedN(t, 1, gapGuard, "a reload that removes source schema b drains its pool, whose idle connection closes at once")
	if closed[0] != warm {
		t.Errorf("connection %s closed, want b's warm connection %s", closed[0], warm)
	}
	if _, err := inv.Post(context.Background(), "b", []byte(`{}`)); !errors.Is(err, transport.ErrUnknownSchema) {
		t.Errorf("Post to the removed schema: %v, want ErrUnknownSchema", err)
	}
}

// TestGapRequestTimeoutUnderLaterDeadline: request_timeout still cuts a
// streaming body when the caller's deadline is later, on both paths: the
// read fails with the request_timeout error and the server sees its
// request end.
func TestGapRequestTimeoutUnderLaterDeadline(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			release := make(chan struct{})
			var releaseOnce sync.Once
			cancelled := make(chan struct{})
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "chunk\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					close(cancelled)
				case <-release:
				}
			})
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the server closes
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.RequestTimeout = 200 * time.Millisecond }))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			read := make(chan error, 1)
			go func() { read <- readBodyErr(resp, nil) }()
			select {
			case err = <-read:
			case <-time.After(gapGuard):
				releaseOnce.Do(func() { close(release) })
				t.Fatalf("the body still streamed long after request_timeout: the caller's later deadline replaced it (read after release: %v)", <-read)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want a request_timeout matching context.DeadlineExceeded", err)
			}
			if ctx.Err() != nil {
				t.Errorf("the caller's context ended (%v): the test's deadline is a minute", ctx.Err())
			}
			select {
			case <-cancelled:
			case <-time.After(gapGuard):
				t.Error("the server never saw its request end")
			}
		})
	}
}

// TestGapShadowSampleRate: shadow mode sends a sample of queries through
// the sockets path at its rate. Both sides reach the same server; the
// sockets side is told apart by its missing Accept-Encoding (viaSockets).
// For n = 2000 at p = 0.1 the count is binomial, mean 200 and standard
// deviation 13.4; the bounds are more than 7 deviations away.
func TestGapShadowSampleRate(t *testing.T) {
	const n = 2000
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	// Enough comparison slots that no sampled query is dropped as busy.
	cfg.Shadow = env.ShadowSettings{Rate: 0.1, MaxConcurrent: 64}
	inv := newInvoker(t, cfg)
	for range n {
		post(t, inv, context.Background(), "products")
	}
	inv.Close() // waits for the comparisons, so every shadow request has arrived
	legacy, sockets := 0, 0
	for _, r := range srv.Requests() {
		if r.Header.Get("Accept-Encoding") == "" {
			sockets++
		} else {
			legacy++
		}
	}
	if legacy != n {
		t.Errorf("the legacy path sent %d queries, want every one of %d", legacy, n)
	}
	if sockets < 100 || sockets > 320 {
		t.Errorf("the sockets path was sent %d of %d queries at shadow rate 0.1, want 100 to 320 (mean 200)", sockets, n)
	}
}

// TestGapShadowCallerNeverWaits: in shadow mode the caller's Post returns,
// and its body reads to the end, while the candidate's request (the
// sockets path's: no Accept-Encoding) is still held by the server.
func TestGapShadowCallerNeverWaits(t *testing.T) {
	arrived := make(chan struct{})
	var arrivedOnce sync.Once
	release := make(chan struct{})
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			arrivedOnce.Do(func() { close(arrived) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the server closes
	cfg := config(env.PathLegacy, "products", srv.URL())
	// The candidate's own bound is far beyond the test.
	cfg.Shadow = env.ShadowSettings{Rate: 1, Timeout: time.Minute}
	inv := newInvoker(t, cfg)

	done := postAsync(inv, context.Background(), "products", `{"query":"{ ok }"}`)
	select {
	case <-arrived:
	case <-time.After(gapGuard):
		releaseAll()
		<-done
		t.Fatal("the candidate's request never reached the server")
	}
	var res postResult
	select {
	case res = <-done:
	case <-time.After(gapGuard):
		t.Error("the caller's Post did not return while the candidate was held: it waited for the candidate")
		releaseAll()
		res = <-done
	}
	releaseAll()
	if res.err != nil || res.body != `{"data":{"ok":true}}` {
		t.Errorf("caller got %q, %v; want the legacy answer read to its end", res.body, res.err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the server received %d requests, want the primary's and the candidate's", n)
	}
}

// TestGapLegacyReloadKeepsTransportOnHeaderTimeout: defaults.header_timeout
// acts per request; a reload that changes only it keeps the legacy path's
// shared transport, so the next request reuses the warm connection and no
// connection closes.
func TestGapLegacyReloadKeepsTransportOnHeaderTimeout(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	warm := srv.Last(t).Remote
	next := config(env.PathLegacy, "products", srv.URL())
	next.Defaults.HeaderTimeout = 30 * time.Second
	if err := inv.Reload(next); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	post(t, inv, context.Background(), "products")
	if got := srv.Last(t).Remote; got != warm {
		t.Errorf("the request after the reload came on %s, want the warm connection %s (opened: %v)", got, warm, srv.Opened())
	}
	if n := len(srv.Opened()); n != 1 {
		t.Errorf("the server saw %d connections, want 1", n)
	}
	select {
	case addr := <-srv.Closed():
		t.Errorf("connection %s closed after a reload that changed only defaults.header_timeout", addr)
	default:
	}
}

// TestGapLegacyCGIIgnoresHTTPProxy: under CGI (REQUEST_METHOD set) the
// legacy path ignores HTTP_PROXY, which a CGI client can set with a Proxy
// header (httpoxy). The schema's name does not resolve, so a request that
// does not go through the proxy fails; what counts is whether the proxy
// saw it. The control, without REQUEST_METHOD, goes through the proxy.
func TestGapLegacyCGIIgnoresHTTPProxy(t *testing.T) {
	const schemaURL = "http://products.fusion.invalid/graphql"
	proxy := wiretest.NewProxy(t)
	cases := []struct {
		name      string
		cgi       bool
		wantProxy bool
	}{
		{"REQUEST_METHOD set", true, false},
		{"no REQUEST_METHOD", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) {
				switch {
				case k == "HTTP_PROXY":
					return proxy.URL, true
				case k == "REQUEST_METHOD" && c.cgi:
					return "GET", true
				}
				return "", false
			}
			before := len(proxy.Requests())
			cfg := config(env.PathLegacy, "products", schemaURL)
			cfg.Defaults.ConnectTimeout = 2 * time.Second
			inv := newInvoker(t, cfg, transport.WithLookupEnv(lookup))
			resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
			viaProxy := len(proxy.Requests()) - before
			if !c.wantProxy {
				if err == nil {
					readAll(t, resp)
					t.Error("the call succeeded: it cannot without the proxy")
				}
				if viaProxy != 0 {
					t.Errorf("the proxy saw %d requests under CGI, want none: HTTP_PROXY must be ignored", viaProxy)
				}
				return
			}
			if err != nil {
				t.Fatalf("Post: %v, want the proxy's answer", err)
			}
			if body := readAll(t, resp); body != `{"data":{"via":"proxy"}}` || viaProxy != 1 {
				t.Errorf("body %q, proxy saw %d requests; want the request through HTTP_PROXY", body, viaProxy)
			}
		})
	}
}

// stepHandler holds each request carrying X-Step: k until k requests of
// step k have arrived (or its context ends), so that step k has k requests
// in flight at once; requests without X-Step are answered at once.
func stepHandler() http.HandlerFunc {
	var mu sync.Mutex
	arrived := map[string]int{}
	all := map[string]chan struct{}{}
	return func(w http.ResponseWriter, r *http.Request) {
		if step := r.Header.Get("X-Step"); step != "" {
			k, _ := strconv.Atoi(step)
			mu.Lock()
			ch := all[step]
			if ch == nil {
				ch = make(chan struct{})
				all[step] = ch
			}
			if arrived[step]++; arrived[step] == k {
				close(ch)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{}}`)
	}
}

// TestGapConnLifetimeJitterOnTheWire: conn_lifetime_jitter gives each
// sockets connection its own lifetime, so connections opened together are
// replaced at different moments. Eight connections are opened one at a
// time (step k holds k requests at once, so it opens exactly one more),
// with 32 sequential requests between the steps. Without jitter every
// connection lives exactly conn_lifetime from its dial, so they close in
// the order they opened, the sequential requests keeping the expiries far
// enough apart for the server to see that order. With a jitter of 1.5s,
// far more than the whole setup, the order is shuffled: all 8 close in
// opening order about once in 8! = 40,320 runs. The setup (50 to 200ms
// under -race here) ends well inside the shortest lifetime, 500ms, so no
// connection is replaced before all 8 are open.
func TestGapConnLifetimeJitterOnTheWire(t *testing.T) {
	const conns = 8
	forEngines(t, func(t *testing.T, engine string) {
		srv := newWireServer(t, wiretest.Options{Handler: stepHandler()})
		cfg := engineConfig(engine, srv.URL(), func(s *env.SourceSchema) {
			s.ConnLifetime = 2 * time.Second
			s.ConnLifetimeJitter = 1500 * time.Millisecond // each lifetime in (500ms, 2s]: the setup fits in the shortest
		})
		cfg.ForwardHeaders = []string{"X-Step"}
		inv := newInvoker(t, cfg)
		for k := 1; k <= conns; k++ {
			postAtOnce(t, inv, gatewayCtx("X-Step", strconv.Itoa(k)), "products", k)
			for range 32 { // spaces the dials apart, so that without jitter the expiries are too
				post(t, inv, context.Background(), "products")
			}
			if n := len(srv.Opened()); n != k {
				t.Fatalf("after step %d the server saw %d connections, want %d (one more per step; none may expire yet)", k, n, k)
			}
		}
		opened := srv.Opened()
		closed := srv.WaitClosedN(t, conns, gapGuard, "every connection closes at the end of its lifetime")
		if got, want := slices.Sorted(slices.Values(closed)), slices.Sorted(slices.Values(opened)); !slices.Equal(got, want) {
			t.Fatalf("closed %v, want the %d connections opened %v", closed, conns, opened)
		}
		if slices.Equal(closed, opened) {
			t.Errorf("the %d connections closed in the order they opened (%v): their lifetimes carry no jitter", conns, closed)
		}
	})
}

// TestGapConnectTimeoutCoversTLS: on the sockets path connect_timeout
// bounds the TLS handshake too. The server accepts and never speaks; with
// tls_handshake_timeout and header_timeout off and a caller context
// without deadline, only connect_timeout can end the call.
func TestGapConnectTimeoutCoversTLS(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		addr := wiretest.SilentListener(t)
		var logs logBuffer
		inv := newInvoker(t, engineConfig(engine, "https://"+addr+"/graphql", func(s *env.SourceSchema) {
			s.ConnectTimeout = 300 * time.Millisecond
			s.TLSHandshakeTimeout = env.Off
			s.HeaderTimeout = env.Off
		}), infoLog(&logs))
		ctx, cancel := context.WithCancel(context.Background()) // no deadline
		defer cancel()
		done := make(chan error, 1)
		go func() {
			resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(gapGuard):
			t.Error("Post still waited for the TLS handshake long after connect_timeout")
			cancel()
			err = <-done
		}
		errorNamesSchema(t, err)
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("error %v, want a timeout (context.DeadlineExceeded or a net.Error whose Timeout() is true)", err)
		}
		checkRanOn(t, engine, logs.String())
	})
}
