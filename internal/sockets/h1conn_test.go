package sockets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/h1"
)

// The h1 engine's connection (h1Conn) tested at its level: through a pool
// of the h1 engine (openTransport, as the request path opens it) where the
// rule is which connection the next request goes on, and on one h1Conn
// opened by its dialer where the rule is the connection's own. The
// servers are written byte by byte (scriptServer), so that they can
// misbehave; which connection carried a request is its client address as
// the server saw it. No test sleeps: each waits for an event, bounded by
// testTimeout.

// scriptServer is a loopback HTTP/1.1 server that answers the n-th request
// it reads (from 1, over all its connections) with answer(n, req, c),
// written at once on c (answer may write on c itself first); hangUp then
// closes the connection. Between requests it waits
// for the next one on the same connection, so a connection it does not
// hang up ends when the client closes it: closed reports that.
type scriptServer struct {
	url     string                                                                 // immutable: the schema URL
	addr    string                                                                 // immutable: host:port
	answers func(n int, req *http.Request, c net.Conn) (reply string, hangUp bool) // immutable
	closed  chan string                                                            // remote addresses of the connections the client closed; buffered, written by serve
	wg      sync.WaitGroup                                                         // the accept loop and each connection's serve

	mu    sync.Mutex
	seen  []string   // guarded by mu: per request, in order, "METHOD remote"
	conns []string   // guarded by mu: per connection, in order of accept
	open  []net.Conn // guarded by mu: every accepted connection, closed at cleanup
}

func newScriptServer(t *testing.T, answer func(n int, req *http.Request, c net.Conn) (reply string, hangUp bool)) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptServer{addr: ln.Addr().String(), closed: make(chan string, 64), answers: answer}
	s.url = "http://" + s.addr + "/graphql"
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c.RemoteAddr().String())
			s.open = append(s.open, c)
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *scriptServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			s.closed <- c.RemoteAddr().String()
			return
		}
		io.Copy(io.Discard, req.Body)
		s.mu.Lock()
		s.seen = append(s.seen, req.Method+" "+c.RemoteAddr().String())
		n := len(s.seen)
		s.mu.Unlock()
		reply, hangUp := s.answers(n, req, c)
		if _, err := io.WriteString(c, reply); err != nil || hangUp {
			return
		}
	}
}

// requests reports the requests seen so far ("METHOD remote") and the
// connections accepted.
func (s *scriptServer) requests() (seen, conns []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen), slices.Clone(s.conns)
}

// remotes reports the connection that carried each request.
func (s *scriptServer) remotes() []string {
	seen, _ := s.requests()
	for i, r := range seen {
		_, seen[i], _ = strings.Cut(r, " ")
	}
	return seen
}

// waitClosed waits until the client has closed the connection from remote.
func (s *scriptServer) waitClosed(t *testing.T, remote, why string) {
	t.Helper()
	guard := time.NewTimer(testTimeout)
	defer guard.Stop()
	for {
		select {
		case addr := <-s.closed:
			if addr == remote {
				return
			}
		case <-guard.C:
			t.Fatalf("connection %s still open after %v: %s", remote, testTimeout, why)
		}
	}
}

// answer is a 200 with body, framed by Content-Length.
func answer(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// nth is the body of the plain answer to the n-th request.
func nth(n int) string { return fmt.Sprintf(`{"data":{"n":%d}}`, n) }

// plain answers every request with answer(nth(n)).
func plain(n int, _ *http.Request, _ net.Conn) (string, bool) { return answer(nth(n)), false }

// firstThenPlain answers the first request with first and every later one
// with answer(nth(n)).
func firstThenPlain(first string) func(int, *http.Request, net.Conn) (string, bool) {
	return func(n int, _ *http.Request, _ net.Conn) (string, bool) {
		if n == 1 {
			return first, false
		}
		return answer(nth(n)), false
	}
}

// h1Transport opens the h1 engine's pool for one source schema at url.
func h1Transport(t *testing.T, url string) *poolTransport {
	t.Helper()
	cfg := env.Config{Path: env.PathSockets, Defaults: env.Settings{Engine: env.EngineH1}, SourceSchemas: map[string]env.SourceSchema{"products": {URL: url}}}
	tr := openTransport(t, cfg, "products")
	if tr.pool.h1 == nil {
		t.Fatal("the pool is not the h1 engine's")
	}
	return tr
}

// roundTrip sends a request of method with a small body (none for GET and
// HEAD) on tr, asking the server to close the connection if closeReq.
func roundTrip(t *testing.T, ctx context.Context, tr http.RoundTripper, method, url string, closeReq bool) (*http.Response, error) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"query":"{ n }"}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Close = closeReq
	return tr.RoundTrip(req)
}

// readBody reads resp's body to its end and closes it.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return string(b)
}

// TestH1ConnReuse: a connection carries the next request only when its
// response ended cleanly and the request allowed it: body read to its end,
// closed early with a small rest already buffered, chunked with a trailer,
// a bodyless answer (204, Content-Length: 0, HEAD) with nothing after it.
// Otherwise the client closes it (the server sees the close) and the next
// request, which must get its own answer, dials a new one: a body closed
// early with more than h1.DrainLimit bytes not yet received; a response
// with Connection: close, or a request with it, while the server keeps the
// connection open and would answer on it; a response, with or without a
// body, followed by bytes nobody asked for in the same write.
func TestH1ConnReuse(t *testing.T) {
	const body = `{"data":{"n":1}}`
	const stray = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
	readToEnd := func(t *testing.T, resp *http.Response) {
		if got := readBody(t, resp); got != body {
			t.Errorf("the first caller got %q, want %q", got, body)
		}
	}
	readNothing := func(t *testing.T, resp *http.Response) {
		if got := readBody(t, resp); got != "" {
			t.Errorf("the first caller got %q, want no body", got)
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
	const noContent = "HTTP/1.1 204 No Content\r\n\r\n"
	const zeroLength = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	headAnswer := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body)) // the length the GET would have had
	cases := []struct {
		name      string
		method    string // of the first request
		closeReq  bool   // the first request says Connection: close
		first     string // the first response, written at once
		read      func(*testing.T, *http.Response)
		wantReuse bool
	}{
		{"body read to its end", http.MethodPost, false, answer(body), readToEnd, true},
		{"early Close, more than DrainLimit not yet received", http.MethodPost, false,
			fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n0123456789", 16*h1.DrainLimit), readThenClose(10), false},
		{"early Close, the small rest buffered", http.MethodPost, false,
			fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(small), small), readThenClose(10), true},
		{"response Connection: close, the server keeps the connection open", http.MethodPost, false,
			fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body), readToEnd, false},
		{"request Connection: close, the server keeps the connection open and says nothing", http.MethodPost, true,
			answer(body), readToEnd, false},
		{"chunked with a trailer", http.MethodPost, false,
			"HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"data\":\r\n8\r\n{\"n\":1}}\r\n0\r\nX-Sum: 42\r\n\r\n", func(t *testing.T, resp *http.Response) {
				readToEnd(t, resp)
				if got := resp.Trailer.Get("X-Sum"); got != "42" {
					t.Errorf("Trailer after EOF %v, want X-Sum: 42", resp.Trailer)
				}
			}, true},
		{"stray bytes after Content-Length", http.MethodPost, false, answer(body) + stray, readToEnd, false},
		{"stray bytes after a chunked body", http.MethodPost, false,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + body + "\r\n0\r\n\r\nstray", readToEnd, false},
		{"204", http.MethodPost, false, noContent, readNothing, true},
		{"Content-Length: 0", http.MethodPost, false, zeroLength, readNothing, true},
		{"HEAD", http.MethodHead, false, headAnswer, readNothing, true},
		{"stray bytes after a 204", http.MethodPost, false, noContent + stray, readNothing, false},
		{"stray bytes after Content-Length: 0", http.MethodPost, false, zeroLength + stray, readNothing, false},
		{"stray bytes after a HEAD answer", http.MethodHead, false, headAnswer + stray, readNothing, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScriptServer(t, firstThenPlain(c.first))
			tr := h1Transport(t, srv.url)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resp, err := roundTrip(t, ctx, tr, c.method, srv.url, c.closeReq)
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			c.read(t, resp)
			resp, err = roundTrip(t, ctx, tr, http.MethodPost, srv.url, false)
			if err != nil {
				t.Fatalf("second request: %v", err)
			}
			if got := readBody(t, resp); got != nth(2) {
				t.Errorf("the second caller got %q, want its own answer %s", got, nth(2))
			}
			remotes := srv.remotes()
			_, conns := srv.requests()
			if len(remotes) != 2 {
				t.Fatalf("the server saw %d requests, want 2", len(remotes))
			}
			wantConns := map[bool]int{true: 1, false: 2}[c.wantReuse]
			if reused := remotes[1] == remotes[0]; reused != c.wantReuse || len(conns) != wantConns {
				t.Errorf("requests came on %v, connections opened %v; want the second on the first's connection: %v", remotes, conns, c.wantReuse)
			}
			if !c.wantReuse {
				srv.waitClosed(t, remotes[0], "the client must close a connection it does not reuse")
			}
		})
	}
}

// TestH1ConnResendAfterPartialAnswer: a GET on a reused connection whose
// server closes it after reading the request may go again on another
// connection (the server may have closed the idle connection just as the
// request left), unless a byte of an answer came first: then the server
// has answered it, and the caller gets the error. What the request path
// does with the error is backend.Resend's decision, asked here as the
// request path asks it; root's TestResendPartialHead sees the GET leave
// once on the wire.
func TestH1ConnResendAfterPartialAnswer(t *testing.T) {
	cases := []struct {
		name       string
		second     string // the answer to the second request, after which the server hangs up
		wantResend backend.Reason
	}{
		{"no byte of an answer", "", backend.Stale},
		{"part of the status line", "HTTP/1.1 20", backend.NoResend},
		{"part of the head", "HTTP/1.1 200 OK\r\nContent-Le", backend.NoResend},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScriptServer(t, func(n int, _ *http.Request, _ net.Conn) (string, bool) {
				if n == 1 {
					return answer(nth(1)), false
				}
				return c.second, true
			})
			tr := h1Transport(t, srv.url)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resp, err := roundTrip(t, ctx, tr, http.MethodGet, srv.url, false)
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			readBody(t, resp)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err = tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("the second request succeeded on a connection the server closed")
			}
			var tries backend.Tries
			if got := backend.Resend(req, err, &tries); got != c.wantResend {
				t.Errorf("error %q: Resend says reason %d, want %d", err, got, c.wantResend)
			}
			remotes := srv.remotes()
			if len(remotes) != 2 || remotes[0] != remotes[1] {
				t.Errorf("requests came on %v, want both on one connection", remotes)
			}
		})
	}
}

// dialH1 opens one h1Conn to addr, closed when the test ends.
func dialH1(t *testing.T, addr string) *h1Conn {
	t.Helper()
	d := &h1Dialer{dial: (&net.Dialer{}).DialContext, addr: addr}
	dc, err := d.open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	c := dc.cc.(*h1Conn)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestH1ConnRules: the connection's own rules, one h1Conn at a time. It
// carries one request at a time, from Reserve to the end of the body; a
// request it refuses before writing (one that asks for a protocol upgrade,
// which the pool sends elsewhere: upgrade.go) leaves it free for the next;
// an idle connection the server wrote to or closed fails its Reserve
// (errH1Stale) and closes (TestH1ConnStaleIdle); a cancel of the request's
// context ends its wait for the header or a body read at once and closes
// the connection.
func TestH1ConnRules(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	get := func(t *testing.T, c *h1Conn, url string, edit func(*http.Request)) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(req)
		}
		return c.RoundTrip(req)
	}

	t.Run("one request at a time", func(t *testing.T) {
		srv := newScriptServer(t, plain)
		c := dialH1(t, srv.addr)
		if _, err := get(t, c, srv.url, nil); !errors.Is(err, errH1NotReserved) {
			t.Errorf("RoundTrip without Reserve: %v, want errH1NotReserved", err)
		}
		if err := c.Reserve(); err != nil {
			t.Fatal(err)
		}
		if err := c.Reserve(); err == nil {
			t.Error("a second Reserve of a reserved connection succeeded")
		}
		resp, err := get(t, c, srv.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Available() != 0 || c.InFlight() != 1 {
			t.Errorf("with the body unread: Available %d, InFlight %d; want 0 and 1", c.Available(), c.InFlight())
		}
		if got := readBody(t, resp); got != nth(1) {
			t.Errorf("got %q, want %s", got, nth(1))
		}
		if c.Available() != 1 || c.InFlight() != 0 || c.Err() != nil {
			t.Errorf("after the body: Available %d, InFlight %d, Err %v; want free and open", c.Available(), c.InFlight(), c.Err())
		}
	})

	t.Run("a request asking for a protocol upgrade is refused unwritten", func(t *testing.T) {
		srv := newScriptServer(t, plain)
		c := dialH1(t, srv.addr)
		if err := c.Reserve(); err != nil {
			t.Fatal(err)
		}
		_, err := get(t, c, srv.url, func(r *http.Request) {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		})
		if err == nil || !strings.Contains(err.Error(), "engine: nethttp") {
			t.Errorf("error %v, want the refusal naming engine: nethttp", err)
		}
		if c.written.Load() != 0 || c.Available() != 1 {
			t.Errorf("after the refusal: %d bytes written, Available %d; want none written and the connection free", c.written.Load(), c.Available())
		}
		if err := c.Reserve(); err != nil {
			t.Fatal(err)
		}
		resp, err := get(t, c, srv.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := readBody(t, resp); got != nth(1) {
			t.Errorf("the next request got %q, want the server's first answer %s", got, nth(1))
		}
		if seen, _ := srv.requests(); len(seen) != 1 || !strings.HasPrefix(seen[0], "GET ") {
			t.Errorf("the server saw %v, want only the plain GET", seen)
		}
	})

	for _, during := range []string{"the wait for the header", "a body read"} {
		t.Run("a cancel interrupts "+during, func(t *testing.T) {
			guard, stop := context.WithTimeout(context.Background(), testTimeout)
			defer stop()
			arrived, release := make(chan struct{}), make(chan struct{})
			defer close(release)
			srv := newScriptServer(t, func(n int, _ *http.Request, c net.Conn) (string, bool) {
				if during == "a body read" {
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart:"))
				}
				close(arrived)
				<-release
				return "", true
			})
			c := dialH1(t, srv.addr)
			if err := c.Reserve(); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(guard)
			defer cancel()
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, srv.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			type res struct {
				resp *http.Response
				err  error
			}
			done := make(chan res, 1)
			go func() {
				resp, err := c.RoundTrip(req)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				done <- res{resp, err}
			}()
			select {
			case <-arrived:
			case <-guard.Done():
				t.Fatal("the request never reached the server")
			}
			cancel()
			select {
			case r := <-done:
				if !errors.Is(r.err, context.Canceled) {
					t.Errorf("error %v, want one matching context.Canceled", r.err)
				}
			case <-guard.Done():
				t.Fatal("the request still waited after the cancel")
			}
			if c.Err() == nil || c.Available() != 0 {
				t.Errorf("after the cancel: Err %v, Available %d; want the connection closed", c.Err(), c.Available())
			}
		})
	}
}
