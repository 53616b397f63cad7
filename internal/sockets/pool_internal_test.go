package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The pool tests build pools directly over loopback servers. They wait for
// events on channels, with testTimeout as a generous bound; no sleep is
// used to let another goroutine get somewhere.

const testTimeout = 10 * time.Second

// poolServer is a loopback test server that records, by the client's
// address as the server sees it, each connection it opened and closed. Its
// handler answers each request with that address in X-Remote, so a test
// knows which connection carried a request.
type poolServer struct {
	*httptest.Server

	mu      sync.Mutex
	opened  []string
	closed  []string
	changed chan struct{} // closed and replaced on every change
}

func newPoolServer(t *testing.T, h http.HandlerFunc, configure func(*http.Server)) *poolServer {
	t.Helper()
	s := &poolServer{changed: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Remote", r.RemoteAddr)
		if h != nil {
			h(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch st {
		case http.StateNew:
			s.opened = append(s.opened, c.RemoteAddr().String())
		case http.StateClosed, http.StateHijacked:
			s.closed = append(s.closed, c.RemoteAddr().String())
		default:
			return
		}
		close(s.changed)
		s.changed = make(chan struct{})
	}
	if configure != nil {
		configure(s.Config)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// counts reports the connections opened and closed so far.
func (s *poolServer) counts() (opened, closed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opened), slices.Clone(s.closed)
}

// isClosed reports whether the connection from remote has closed.
func (s *poolServer) isClosed(remote string) bool {
	_, closed := s.counts()
	return slices.Contains(closed, remote)
}

// waitUntil waits until cond holds for the server's connections.
func (s *poolServer) waitUntil(t *testing.T, what string, cond func(opened, closed []string) bool) {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, changed := cond(s.opened, s.closed), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			opened, closed := s.counts()
			t.Fatalf("not within %v: %s (server opened %v, closed %v)", testTimeout, what, opened, closed)
		}
	}
}

func (s *poolServer) addr() string { return s.Listener.Addr().String() }

// newTestPool returns a pool of HTTP/1 connections to srv, configured by
// configure, which drains when the test ends (before srv closes).
func newTestPool(t *testing.T, srv *poolServer, configure func(*pool)) *pool {
	t.Helper()
	p := &pool{tr: &http.Transport{DisableCompression: true}, scheme: "http", addr: srv.addr()}
	if configure != nil {
		configure(p)
	}
	t.Cleanup(func() {
		p.drain()
		p.tr.CloseIdleConnections()
	})
	return p
}

// result is what one request through a pool came to.
type result struct {
	c      *conn
	remote string // the connection, as the server saw it
	body   string
	err    error
}

// send runs one request through p as poolTransport.roundTrip does, reads its
// body and reports the connection that carried it.
func send(ctx context.Context, p *pool, method string) result {
	c, pending, err := p.get(ctx, time.Time{})
	if err != nil {
		return result{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.addr+"/", nil)
	if err != nil {
		p.done(c, pending)
		return result{c: c, err: err}
	}
	resp, err := c.cc.RoundTrip(req)
	p.done(c, pending)
	if err != nil {
		return result{c: c, err: err}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return result{c: c, remote: resp.Header.Get("X-Remote"), body: string(body), err: err}
}

// sendAsync runs send in a goroutine; the result arrives on the channel.
func sendAsync(ctx context.Context, p *pool) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- send(ctx, p, http.MethodGet) }()
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testTimeout):
		t.Fatalf("request not answered within %v", testTimeout)
		return result{}
	}
}

func mustSend(t *testing.T, p *pool) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r := send(ctx, p, http.MethodGet)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// waitForWaiter waits until a request waits in p.get for a connection.
func waitForWaiter(t *testing.T, p *pool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		p.mu.Lock()
		waiting := p.nwait > 0
		p.mu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request waited for a connection within %v", testTimeout)
		}
		// Gosched, not a sleep: this only yields until the other goroutine
		// has reached get's wait.
		runtime.Gosched()
	}
}

// gate is a handler that holds each request until release is closed, and
// announces each arrival on arrived.
type gate struct {
	arrived chan string
	release chan struct{}
}

func newGate() *gate {
	return &gate{arrived: make(chan string, 64), release: make(chan struct{})}
}

func (g *gate) handler(w http.ResponseWriter, r *http.Request) {
	g.arrived <- r.RemoteAddr
	<-g.release
	io.WriteString(w, "ok")
}

func (g *gate) awaitArrival(t *testing.T) string {
	t.Helper()
	select {
	case remote := <-g.arrived:
		return remote
	case <-time.After(testTimeout):
		t.Fatalf("no request reached the server within %v", testTimeout)
		return ""
	}
}

// TestPoolReusesIdleConnection: requests one after the other share one
// connection, and an idle connection is counted as such.
func TestPoolReusesIdleConnection(t *testing.T) {
	srv := newPoolServer(t, nil, nil)
	p := newTestPool(t, srv, nil)
	first := mustSend(t, p)
	if open, idle := p.stats(); open != 1 || idle != 1 {
		t.Errorf("after one request: %d open, %d idle; want 1 and 1", open, idle)
	}
	second := mustSend(t, p)
	if second.remote != first.remote || second.c != first.c {
		t.Errorf("second request on %s, first on %s: the idle connection was not reused", second.remote, first.remote)
	}
	if first.c.reused.Load() != true {
		t.Error("reused not set on a connection given to a second request")
	}
	if opened, _ := srv.counts(); len(opened) != 1 {
		t.Errorf("server saw %d connections, want 1", len(opened))
	}
}

// TestPoolMaxConns: at the connection limit, one more request waits, and
// takes the connection that frees up; a waiter whose context ends leaves
// with the context's cause, and the pool goes on serving.
func TestPoolMaxConns(t *testing.T) {
	cases := []struct {
		name   string
		max    int
		cancel bool
	}{
		{"max 1, waiter served", 1, false},
		{"max 2, waiter served", 2, false},
		{"max 1, waiter cancelled", 1, true},
		{"max 2, waiter cancelled", 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			srv := newPoolServer(t, g.handler, nil)
			p := newTestPool(t, srv, func(p *pool) { p.max = tc.max })
			busy := make([]<-chan result, tc.max)
			remotes := map[string]bool{}
			for i := range busy {
				busy[i] = sendAsync(context.Background(), p)
				remotes[g.awaitArrival(t)] = true
			}
			if len(remotes) != tc.max {
				t.Fatalf("%d requests held on %d connections, want %d", tc.max, len(remotes), tc.max)
			}

			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			waiter := sendAsync(ctx, p)
			waitForWaiter(t, p)
			select {
			case r := <-waiter:
				t.Fatalf("request %d got a connection (%v) while the limit is %d and all are busy", tc.max+1, r.err, tc.max)
			default:
			}
			if opened, _ := srv.counts(); len(opened) != tc.max {
				t.Fatalf("server saw %d connections with a limit of %d", len(opened), tc.max)
			}

			if tc.cancel {
				cause := errors.New("caller gave up")
				cancel(cause)
				r := await(t, waiter)
				if !errors.Is(r.err, cause) {
					t.Fatalf("cancelled waiter returned %v, want the context's cause %v", r.err, cause)
				}
				close(g.release)
				for _, ch := range busy {
					if r := await(t, ch); r.err != nil || r.body != "ok" {
						t.Fatalf("held request: %q, %v", r.body, r.err)
					}
				}
				// The pool still serves, on the connections it has.
				if r := mustSend(t, p); !remotes[r.remote] {
					t.Errorf("request after the cancelled waiter went on a new connection %s", r.remote)
				}
			} else {
				close(g.release)
				r := await(t, waiter)
				if r.err != nil || r.body != "ok" {
					t.Fatalf("waiter: %q, %v", r.body, r.err)
				}
				if !remotes[r.remote] {
					t.Errorf("waiter served on a new connection %s, want one of the %d that freed up", r.remote, tc.max)
				}
				for _, ch := range busy {
					if r := await(t, ch); r.err != nil {
						t.Fatal(r.err)
					}
				}
			}
			if opened, _ := srv.counts(); len(opened) != tc.max {
				t.Errorf("server saw %d connections, want %d", len(opened), tc.max)
			}
			if open, _ := p.stats(); open != tc.max {
				t.Errorf("pool has %d connections, want %d", open, tc.max)
			}
		})
	}
}

// TestPoolDrain: drain closes idle connections at once and busy ones when
// their request ends, without failing that request; get then returns
// errDrained.
func TestPoolDrain(t *testing.T) {
	g := newGate()
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			g.handler(w, r)
			return
		}
		io.WriteString(w, "ok")
	}, nil)
	p := newTestPool(t, srv, nil)

	held := make(chan result, 1)
	go func() {
		c, pending, err := p.get(context.Background(), time.Time{})
		if err != nil {
			held <- result{err: err}
			return
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/?hold", nil)
		resp, err := c.cc.RoundTrip(req)
		p.done(c, pending)
		if err != nil {
			held <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- result{c: c, remote: resp.Header.Get("X-Remote"), body: string(body), err: err}
	}()
	busy := g.awaitArrival(t)
	idle := mustSend(t, p).remote
	if idle == busy {
		t.Fatal("the second request shared the busy HTTP/1 connection")
	}
	if open, n := p.stats(); open != 2 || n != 1 {
		t.Fatalf("before drain: %d open, %d idle; want 2 and 1", open, n)
	}

	p.drain()
	srv.waitUntil(t, "the idle connection closes on drain", func(_, closed []string) bool { return slices.Contains(closed, idle) })
	if srv.isClosed(busy) {
		t.Fatal("drain closed the connection of a request in flight")
	}
	if _, _, err := p.get(context.Background(), time.Time{}); !errors.Is(err, errDrained) {
		t.Fatalf("get after drain: %v, want errDrained", err)
	}
	p.drain() // a second drain is harmless

	close(g.release)
	if r := await(t, held); r.err != nil || r.body != "ok" {
		t.Fatalf("request in flight during drain: %q, %v", r.body, r.err)
	}
	srv.waitUntil(t, "the busy connection closes when its request ends", func(_, closed []string) bool { return slices.Contains(closed, busy) })
	if open, _ := p.stats(); open != 0 {
		t.Errorf("after drain: %d connections left in the pool", open)
	}
}

// TestPoolLifetime: a connection past its lifetime takes no new request
// and closes, but only once the request on it has ended; an idle one
// closes when its lifetime ends.
func TestPoolLifetime(t *testing.T) {
	const lifetime = 50 * time.Millisecond
	g := newGate()
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			g.handler(w, r)
			return
		}
		io.WriteString(w, "ok")
	}, nil)
	p := newTestPool(t, srv, func(p *pool) { p.lifetime = lifetime })

	got := make(chan *conn, 1)
	held := make(chan result, 1)
	go func() {
		c, pending, err := p.get(context.Background(), time.Time{})
		got <- c
		if err != nil {
			held <- result{err: err}
			return
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/?hold", nil)
		resp, err := c.cc.RoundTrip(req)
		p.done(c, pending)
		if err != nil {
			held <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- result{c: c, body: string(body), err: err}
	}()
	old := g.awaitArrival(t)
	c := <-got
	if c == nil || c.expires.IsZero() {
		t.Fatal("connection without an expiry")
	}
	// Wait for the lifetime itself to pass: this is the clock under test,
	// not a wait for another goroutine.
	<-time.After(time.Until(c.expires))

	if srv.isClosed(old) {
		t.Fatal("the connection closed at its expiry with a request in flight")
	}
	next := mustSend(t, p)
	if next.remote == old {
		t.Fatal("a request was given a connection past its lifetime")
	}
	if srv.isClosed(old) {
		t.Fatal("the expired connection closed while its request was in flight")
	}
	close(g.release)
	if r := await(t, held); r.err != nil || r.body != "ok" {
		t.Fatalf("request held past the lifetime: %q, %v", r.body, r.err)
	}
	srv.waitUntil(t, "the expired connection closes when its request ends", func(_, closed []string) bool { return slices.Contains(closed, old) })
	// The second connection is idle; it closes when its own lifetime ends.
	srv.waitUntil(t, "the idle connection closes at its expiry", func(_, closed []string) bool { return slices.Contains(closed, next.remote) })
	if open, _ := p.stats(); open != 0 {
		t.Errorf("%d connections left in the pool after both expired", open)
	}
}

// TestPoolIdleTimeout: a connection idle for longer than the idle timeout
// closes, and the next request dials a new one.
func TestPoolIdleTimeout(t *testing.T) {
	srv := newPoolServer(t, nil, nil)
	p := newTestPool(t, srv, func(p *pool) { p.idle = 50 * time.Millisecond })
	first := mustSend(t, p)
	srv.waitUntil(t, "the idle connection closes", func(_, closed []string) bool { return slices.Contains(closed, first.remote) })
	if open, _ := p.stats(); open != 0 {
		t.Errorf("%d connections in the pool after the idle timeout", open)
	}
	if second := mustSend(t, p); second.remote == first.remote {
		t.Error("a request was given the connection closed for idleness")
	}
}

// TestPoolMaxIdle: connections beyond maxIdle close as they turn idle.
func TestPoolMaxIdle(t *testing.T) {
	cases := []struct{ conns, maxIdle int }{
		{3, 1},
		{4, 2},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d conns, maxIdle %d", tc.conns, tc.maxIdle), func(t *testing.T) {
			g := newGate()
			srv := newPoolServer(t, g.handler, nil)
			p := newTestPool(t, srv, func(p *pool) { p.maxIdle = tc.maxIdle })
			held := make([]<-chan result, tc.conns)
			for i := range held {
				held[i] = sendAsync(context.Background(), p)
				g.awaitArrival(t)
			}
			close(g.release)
			for _, ch := range held {
				if r := await(t, ch); r.err != nil {
					t.Fatal(r.err)
				}
			}
			srv.waitUntil(t, "idle connections beyond maxIdle close", func(_, closed []string) bool { return len(closed) == tc.conns-tc.maxIdle })
			if open, idle := p.stats(); open != tc.maxIdle || idle != tc.maxIdle {
				t.Errorf("%d open, %d idle; want %d and %d", open, idle, tc.maxIdle, tc.maxIdle)
			}
		})
	}
}

// TestPoolNoBodyResponseOnClosingConnection: net/http hands an HTTP/1
// connection back (InFlight 0, state hook run) before it delivers a
// response without a body. The request's claim must keep the pool from
// closing the connection in that window, when it is expired or the pool
// drains, until RoundTrip has returned.
func TestPoolNoBodyResponseOnClosingConnection(t *testing.T) {
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}, nil)
	p := newTestPool(t, srv, func(p *pool) { p.lifetime = time.Nanosecond }) // expired from the start
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		r := send(ctx, p, http.MethodGet)
		cancel()
		if r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
	}
	if open, _ := p.stats(); open != 0 {
		t.Errorf("%d expired connections left in the pool", open)
	}
}

// TestPoolStress is the regression test for a connection closed under the
// request it was just given: many requests on at most two connections
// whose idle timeout, 1ms, fires all the time between them.
func TestPoolStress(t *testing.T) {
	const goroutines, cycles = 8, 2000
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"ok":true}}`)
	}, nil)
	p := newTestPool(t, srv, func(p *pool) {
		p.idle = time.Millisecond
		p.max = 2
	})
	var failed atomic.Int64
	var mu sync.Mutex
	var first []string
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			// Pauses around the idle timeout between requests (not for
			// synchronisation): connections turn idle, their timers fire,
			// and requests arrive just as they do.
			pause := time.Duration(i*137) * time.Microsecond % (2 * time.Millisecond)
			for range cycles {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				r := send(ctx, p, http.MethodPost)
				cancel()
				time.Sleep(pause)
				pause = (pause + 311*time.Microsecond) % (2 * time.Millisecond)
				if r.err == nil && r.body != `{"data":{"ok":true}}` {
					r.err = fmt.Errorf("body %q", r.body)
				}
				if r.err != nil {
					failed.Add(1)
					mu.Lock()
					if len(first) < 5 {
						first = append(first, r.err.Error())
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed; first errors:\n\t%s", n, goroutines*cycles, strings.Join(first, "\n\t"))
	}
	opened, _ := srv.counts()
	t.Logf("%d requests on %d connections", goroutines*cycles, len(opened))
	p.drain()
	srv.waitUntil(t, "every connection closes after drain", func(opened, closed []string) bool { return len(closed) == len(opened) })
}

// TestPoolHTTP2ColdStart: concurrent requests from a cold start on a
// strict HTTP/2 pool share one connection and all succeed, whether the
// server allows one stream (the requests must not open streams before its
// SETTINGS lower the limit: the server would refuse them, and net/http
// would fail the rest with "client conn not usable") or 100 (what net/http
// assumes before SETTINGS, so nothing tells the pool they came: the
// requests must still go on together).
func TestPoolHTTP2ColdStart(t *testing.T) {
	cases := []struct {
		name       string
		maxStreams uint32
		requests   int
		together   bool // the server answers only once all requests are in
		rounds     int
	}{
		{"one stream", 1, 20, false, 20},
		// Each round waits for settleMax.
		{"100 streams, all in flight together", 100, 3, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for round := range tc.rounds {
				var arrived sync.WaitGroup
				arrived.Add(tc.requests)
				srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					if tc.together {
						arrived.Done()
						arrived.Wait()
					}
					io.WriteString(w, "ok")
				}, func(s *http.Server) {
					s.Protocols = new(http.Protocols)
					s.Protocols.SetUnencryptedHTTP2(true)
					s.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: int(tc.maxStreams)}
				})
				p := newTestPool(t, srv, func(p *pool) {
					p.tr.Protocols = new(http.Protocols)
					p.tr.Protocols.SetUnencryptedHTTP2(true)
					p.tr.HTTP2 = &http.HTTP2Config{StrictMaxConcurrentRequests: true}
					p.strictH2, p.onlyH2 = true, true
				})
				results := make([]<-chan result, tc.requests)
				for i := range results {
					ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
					t.Cleanup(cancel)
					results[i] = sendAsync(ctx, p)
				}
				for i, ch := range results {
					if r := await(t, ch); r.err != nil || r.body != "ok" {
						t.Fatalf("round %d, request %d: %q, %v", round, i, r.body, r.err)
					}
				}
				if opened, _ := srv.counts(); len(opened) != 1 {
					t.Fatalf("round %d: %d connections, want 1", round, len(opened))
				}
				p.drain()
				srv.waitUntil(t, "the connection closes after drain", func(opened, closed []string) bool { return len(closed) == len(opened) })
			}
		})
	}
}

// TestPoolWaitersFIFO: at the connection limit, waiting requests get the
// connection in the order they came, one wake per freed slot; a waiter
// that gives up leaves the queue without taking a turn.
func TestPoolWaitersFIFO(t *testing.T) {
	const n = 12
	next := make(chan struct{})
	order := make(chan string, n+1)
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		order <- r.Header.Get("X-N")
		<-next
		io.WriteString(w, "ok")
	}, nil)
	p := newTestPool(t, srv, func(p *pool) { p.max = 1 })
	sendN := func(ctx context.Context, i int) <-chan error {
		ch := make(chan error, 1)
		go func() {
			c, pending, err := p.get(ctx, time.Time{})
			if err != nil {
				ch <- err
				return
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+p.addr+"/", nil)
			req.Header.Set("X-N", strconv.Itoa(i))
			resp, err := c.cc.RoundTrip(req)
			p.done(c, pending)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			ch <- err
		}()
		return ch
	}
	done := []<-chan error{sendN(context.Background(), 0)}
	if got := <-order; got != "0" {
		t.Fatalf("first request %s", got)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	for i := 1; i <= n; i++ {
		ctx := context.Background()
		if i == 5 {
			ctx = cancelled
		}
		done = append(done, sendN(ctx, i))
		waitForWaiters(t, p, i)
	}
	cancel()
	if err := <-done[5]; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	var got []string
	for range n - 1 {
		next <- struct{}{}
		got = append(got, <-order)
	}
	next <- struct{}{}
	want := []string{"1", "2", "3", "4", "6", "7", "8", "9", "10", "11", "12"}
	if !slices.Equal(got, want) {
		t.Errorf("served %v, want %v (arrival order, the cancelled 5 left out)", got, want)
	}
	for i, ch := range done {
		if i != 5 {
			if err := <-ch; err != nil {
				t.Errorf("request %d: %v", i, err)
			}
		}
	}
}

// waitForWaiters waits until n requests wait in p.get.
func waitForWaiters(t *testing.T, p *pool, n int) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		p.mu.Lock()
		waiting := p.nwait
		p.mu.Unlock()
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waited for a connection within %v, want %d", waiting, testTimeout, n)
		}
		runtime.Gosched()
	}
}

// sendTagged sends one request through p with X-N: tag, reads its body
// and reports its error on the channel.
func sendTagged(ctx context.Context, p *pool, tag string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		c, pending, err := p.get(ctx, time.Time{})
		if err != nil {
			ch <- err
			return
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+p.addr+"/", nil)
		req.Header.Set("X-N", tag)
		resp, err := c.cc.RoundTrip(req)
		p.done(c, pending)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		ch <- err
	}()
	return ch
}

// TestPoolWokenWaiterBeforeNewcomer: at max_conns_per_host 1, a request
// that arrives just as the connection frees, after the waiting request was
// woken for it and before that one has looked, is served after it. The
// pool's testHookWoken holds the woken waiter at exactly that point while
// the newcomer arrives. It fails if a newcomer may look while a woken
// waiter has not (the newcomer would take the free connection).
func TestPoolWokenWaiterBeforeNewcomer(t *testing.T) {
	order := make(chan string, 3)
	next := make(chan struct{})
	stop := make(chan struct{}) // closed when the test ends: nothing stays held
	srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
		order <- r.Header.Get("X-N")
		select {
		case <-next:
		case <-stop:
		}
		io.WriteString(w, "ok")
	}, nil)
	woken := make(chan struct{})
	resume := make(chan struct{})
	var resumeOnce sync.Once
	release := func() { resumeOnce.Do(func() { close(resume) }) }
	p := newTestPool(t, srv, func(p *pool) {
		p.max = 1
		var calls atomic.Int32
		p.testHookWoken = func() {
			if calls.Add(1) == 1 { // the waiting request's wake; later ones pass
				woken <- struct{}{}
				<-resume
			}
		}
	})
	first := sendTagged(context.Background(), p, "first")
	if got := <-order; got != "first" {
		t.Fatalf("first request %s", got)
	}
	waiting := sendTagged(context.Background(), p, "waiting")
	waitForWaiters(t, p, 1)
	next <- struct{}{} // the first request ends: its connection frees
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The waiting request was woken for the free connection and stands in
	// the hook, before it looks.
	select {
	case <-woken:
	case <-time.After(testTimeout):
		t.Fatalf("the waiting request was not woken within %v", testTimeout)
	}
	p.mu.Lock()
	free := len(p.conns) == 1 && p.conns[0].idle() && p.conns[0].cc.Available() == 1
	p.mu.Unlock()
	if !free {
		t.Fatal("woken, but the connection is not free")
	}
	t.Cleanup(func() { close(stop); release() }) // before the pool's and server's cleanups
	newcomer := sendTagged(context.Background(), p, "newcomer")
	// The newcomer queues behind the woken request, or (the fault this
	// test is for) takes the connection and reaches the server.
	deadline := time.Now().Add(testTimeout)
	for {
		p.mu.Lock()
		queued := p.nwait == 2
		p.mu.Unlock()
		if queued {
			break
		}
		if len(order) > 0 {
			t.Fatalf("request %q was served while the woken request had not looked yet: a newcomer took the connection it was woken for", <-order)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the newcomer neither queued nor was served within %v", testTimeout)
		}
		runtime.Gosched() // yields until the newcomer's goroutine gets there
	}
	release()
	var got []string
	for range 2 {
		select {
		case n := <-order:
			got = append(got, n)
		case <-time.After(testTimeout):
			t.Fatalf("served %v within %v, want 2 requests", got, testTimeout)
		}
		next <- struct{}{}
	}
	if want := []string{"waiting", "newcomer"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v: the newcomer took the slot the woken request was woken for", got, want)
	}
	for _, ch := range []<-chan error{waiting, newcomer} {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
}
