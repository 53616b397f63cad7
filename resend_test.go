package transport_test

// Re-sending on a stale connection: a request that fails because the
// server had closed its keep-alive connection goes again, once, only when
// it is safe to.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

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

// TestStaleConnectionResend: on the sockets path, a request that fails
// on a reused connection before any answer is sent again only if it is
// idempotent. A POST (a mutation) reaches the server once and the caller
// gets the error, also when a middleware makes its body replayable (which
// is what lets a resend happen at all); a GET is sent again on a new
// connection and succeeds.
func TestStaleConnectionResend(t *testing.T) {
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
