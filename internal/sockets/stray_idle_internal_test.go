//go:build unix

package sockets

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/tlsrecord"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The idle-stray suite: a server that writes to, or closes, a connection
// while it is idle in the pool, between one caller's answer and the next
// caller's request, with a Dial hook that wraps the connection as metrics
// and logging hooks do, in clear and over TLS. A test waits until what the
// server did has reached the client's socket (waitReadable) before the
// next request, so the guard is what is tested, not a race: a stray that
// leaves after the next request is indistinguishable from its answer.

// embedConn is what a typical Dial hook returns: a struct that embeds
// net.Conn to count or log, and offers nothing else. The h1 engine cannot
// find the socket under it. closed, if set, is closed at its first Close.
type embedConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *embedConn) Close() error {
	if c.closed != nil {
		c.once.Do(func() { close(c.closed) })
	}
	return c.Conn.Close()
}

// netConnConn is the same wrapper with the documented way to the socket:
// a NetConn method, as *tls.Conn has.
type netConnConn struct{ embedConn }

func (c *netConnConn) NetConn() net.Conn { return c.Conn }

// socketDial is a Dial hook that returns each connection as kind ("embed":
// embedConn, "netconn": netConnConn, "raw": the *net.TCPConn itself), and
// keeps the *net.TCPConn of each, so that a test can wait on the client's
// socket. With reader set (an engine with a background reader: nethttp),
// it tells when the first connection closes (not with raw).
type socketDial struct {
	kind   string
	reader bool
	mu     sync.Mutex
	socks  []*net.TCPConn
	closed chan struct{} // the first connection's, with reader
}

func (d *socketDial) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.socks = append(d.socks, tc)
	var closed chan struct{}
	if d.reader && len(d.socks) == 1 {
		closed = make(chan struct{})
		d.closed = closed
	}
	switch d.kind {
	case "embed":
		return &embedConn{Conn: tc, closed: closed}, nil
	case "netconn":
		return &netConnConn{embedConn{Conn: tc, closed: closed}}, nil
	}
	return tc, nil
}

// closedByReader waits, with reader set, until the engine has closed the
// first connection: its background reader saw what the server did on it.
// That is nethttp's guard; whether a request handed the connection in
// the moment before can get the stray is TestStrayCrowd's to measure.
func (d *socketDial) closedByReader(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed == nil {
		return
	}
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatalf("the engine did not close the connection within %v of the server's act on it", testTimeout)
	}
}

// sock returns the socket of the ith connection dialled.
func (d *socketDial) sock(t *testing.T, i int) *net.TCPConn {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.socks) {
		t.Fatalf("%d connections dialled, want at least %d", len(d.socks), i+1)
	}
	return d.socks[i]
}

// waitReadable waits until the client socket c has bytes or an end of
// stream to read, or until a reader that was parked in Read on it (net/http's)
// has returned with them: RawConn.Read takes the socket's read lock, which a
// Read in progress holds, and then waits for readability without taking
// any byte. It fails the test after testTimeout, closing c to end the wait.
func waitReadable(t *testing.T, c *net.TCPConn) {
	t.Helper()
	if err := awaitReadable(c); err != nil {
		t.Fatalf("what the server did on the idle connection: %v", err)
	}
}

// awaitReadable is waitReadable for any goroutine: it returns an error
// instead of failing the test.
func awaitReadable(c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		rc.Read(func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return !errors.Is(err, syscall.EAGAIN)
		}) // an error: the connection closed, which is readable enough
	}()
	guard := time.NewTimer(testTimeout)
	defer guard.Stop()
	select {
	case <-done:
		return nil
	case <-guard.C:
		c.Close()
		<-done
		return fmt.Errorf("not in the client's socket within %v", testTimeout)
	}
}

// idleServer is a loopback server written byte by byte, in clear or over
// TLS, whose answers echo the request's X-User header:
// {"data":{"user":"bob"}}. After its first answer to alice it waits until
// the test calls idle, then does its act on the connection, now idle in
// the client's pool, and tells idle it is done:
//
//   - "stray": writes a whole second response, carrying alice's data;
//   - "close": closes the connection (over TLS: close_notify, then FIN);
//   - "partial" (TLS): writes the first half of a TLS record of a stray
//     response, and never the rest;
//   - "ticket" (TLS 1.3): writes a NewSessionTicket, which is not stray;
//   - "empty" (TLS 1.3): writes an application data record with no data,
//     which is not stray either (RFC 8446, section 5.4).
//
// After "ticket" and "empty" it seals its later answers on that connection
// itself (tlsrecord.Sealer): its tls.Conn's record counter is one behind.
type idleServer struct {
	*wiretest.RawServer
	url   string
	act   string
	next  chan struct{} // closed by idle: alice has read her answer
	acted chan error    // the act is done (or failed)
	once  sync.Once     // the act happens once, on the first connection alice used

	mu      sync.Mutex
	remotes []string // per request, in order: the connection that carried it
	closes  []bool   // per request, in order: it asked to close the connection (Connection: close)
}

// aliceStray is the stray response: alice's data, nobody's answer.
const aliceStray = `{"data":{"user":"alice","card":"4111 1111 1111 1111"}}`

func answerFor(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func userAnswer(user string) string { return `{"data":{"user":"` + user + `"}}` }

// newIdleServer starts an idleServer; tlsCfg nil serves in clear.
func newIdleServer(t *testing.T, act string, tlsCfg *tls.Config) *idleServer {
	t.Helper()
	s := &idleServer{act: act, next: make(chan struct{}), acted: make(chan error, 1)}
	s.RawServer = wiretest.NewRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		var (
			r      io.Reader = c
			write            = func(b []byte) error { _, err := c.Write(b); return err }
			tc     *tls.Conn
			tap    *tlsrecord.Tap
			keylog strings.Builder
		)
		if tlsCfg != nil {
			cfg := tlsCfg.Clone()
			cfg.KeyLogWriter = &keylog // this connection's secrets, for a sealer
			tap = &tlsrecord.Tap{Conn: c}
			tc = tls.Server(tap, cfg)
			r = tc
			write = func(b []byte) error { _, err := tc.Write(b); return err }
		}
		br := bufio.NewReader(r)
		for {
			req, err := wiretest.ReadRequest(br)
			if err != nil {
				return
			}
			user := req.Header.Get("X-User")
			s.mu.Lock()
			s.remotes = append(s.remotes, c.RemoteAddr().String())
			s.closes = append(s.closes, req.Close)
			s.mu.Unlock()
			if err := write([]byte(answerFor(userAnswer(user)))); err != nil {
				return
			}
			first := false
			if user == "alice" {
				s.once.Do(func() { first = true })
			}
			if req.Close {
				// As a server does: the connection ends with this answer,
				// and there is no idle connection to act on.
				if first {
					s.acted <- nil
				}
				return
			}
			if !first {
				continue
			}
			select {
			case <-s.next:
			case <-time.After(testTimeout):
				s.acted <- errors.New("the test never said alice had read her answer")
				return
			}
			var err2 error
			closeAfter := false
			switch s.act {
			case "stray":
				err2 = write([]byte(answerFor(aliceStray)))
			case "close":
				if tc != nil {
					err2 = tc.Close()
				} else {
					err2 = c.Close()
				}
				closeAfter = true
			case "partial":
				tap.HoldBack(true)
				if err2 = write([]byte(answerFor(aliceStray))); err2 == nil {
					held := tap.HoldBack(false)
					_, err2 = c.Write(held[:len(held)/2])
				}
			case "ticket", "empty":
				var sealer *tlsrecord.Sealer
				if sealer, err2 = tlsrecord.NewSealer(keylog.String(), tc.ConnectionState().CipherSuite, tap.Written()); err2 != nil {
					break
				}
				if s.act == "ticket" {
					_, err2 = c.Write(sealer.Seal(tlsrecord.TypeHandshake, tlsrecord.NewSessionTicket()))
				} else {
					_, err2 = c.Write(sealer.Seal(tlsrecord.TypeApplicationData, nil))
				}
				// The tls.Conn's counter is behind now: later answers
				// are sealed here.
				write = func(b []byte) error { _, err := c.Write(sealer.Seal(tlsrecord.TypeApplicationData, b)); return err }
			default:
				err2 = fmt.Errorf("unknown act %q", s.act)
			}
			s.acted <- err2
			if closeAfter || err2 != nil {
				return
			}
		}
	})
	s.url = s.RawServer.URL
	if tlsCfg != nil {
		s.url = "https" + strings.TrimPrefix(s.url, "http")
	}
	return s
}

// idle lets the server act on alice's idle connection and waits until it
// has, and until its act has reached the client's socket c.
func (s *idleServer) idle(t *testing.T, c *net.TCPConn) {
	t.Helper()
	close(s.next)
	select {
	case err := <-s.acted:
		if err != nil {
			t.Fatalf("the server's %s on the idle connection: %v", s.act, err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("the server did not %s within %v", s.act, testTimeout)
	}
	waitReadable(t, c)
}

func (s *idleServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.remotes)
}

// askedClose reports, per request, whether it asked to close its
// connection.
func (s *idleServer) askedClose() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.closes)
}

// postAs sends a Post to u on tr as user (its X-User header, which the
// request path would have forwarded) and returns the body, or the error
// of the call or of the read.
func postAs(tr http.RoundTripper, u, user string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return sendRead(tr, gqlRequest(ctx, u, `{"query":"{ user }"}`, "X-User", user))
}

// idleConfig is the schema on engine at url with one connection at most.
func idleConfig(engine, url string, edit func(*env.SourceSchema)) env.Config {
	return engineOn(engine, url, func(s *env.SourceSchema) {
		s.MaxConnsPerHost = 1
		if edit != nil {
			edit(s)
		}
	})
}

// noSocketLine starts the Info line the sockets backend logs once per
// schema when a connection's socket cannot be found.
const noSocketLine = "h1 cannot look at the socket"

// noSocketLineNetHTTP begins nethttp's line for the same.
const noSocketLineNetHTTP = "nethttp cannot look at the socket"

// aliceThenBob: alice's Post, the server's act on the idle connection,
// then bob's Post, which must get bob's own answer. It returns the
// connections that carried the requests, as the server saw them.
func aliceThenBob(t *testing.T, tr http.RoundTripper, srv *idleServer, d *socketDial) (remotes []string) {
	t.Helper()
	got, err := postAs(tr, srv.url, "alice")
	if err != nil || got != userAnswer("alice") {
		t.Fatalf("alice got %q, %v; want her own answer", got, err)
	}
	srv.idle(t, d.sock(t, 0))
	d.closedByReader(t)
	got, err = postAs(tr, srv.url, "bob")
	switch {
	case err != nil:
		t.Errorf("bob's Post after the server's %s on the idle connection: %v; want it sent on a new connection", srv.act, err)
	case got != userAnswer("bob"):
		t.Errorf("bob got %s, want his own answer %s: what the server wrote on the idle connection became the next caller's answer", got, userAnswer("bob"))
	}
	remotes = srv.seen()
	return remotes
}

// TestStrayIdleWrappedDial (issue 17, item 2): a Dial hook returns a
// struct that embeds net.Conn and nothing else; with max_conns_per_host 1,
// after alice's answer the server writes a whole second response carrying
// alice's data on the idle connection. bob must get his own answer, on a
// new connection. On h1 the socket cannot be found under the wrapper: the
// sockets backend logs so once, at Info, naming the schema, and the
// connection carries one request, which asks the server to close it
// (Connection: close), so there is no idle connection to write to.
// nethttp, whose background reader sees the stray and closes the
// connection, is the control.
func TestStrayIdleWrappedDial(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := newIdleServer(t, "stray", nil)
		d := &socketDial{kind: "embed", reader: engine == env.EngineNetHTTP}
		var logs syncBuffer
		tr := openHooked(t, idleConfig(engine, srv.url, nil), hooks{logs: &logs, dial: d.Dial})
		ranOn(t, engine, tr)
		remotes := aliceThenBob(t, tr, srv, d)
		if len(remotes) != 2 || remotes[0] == remotes[1] {
			t.Errorf("requests came on %v; want bob's on a new connection", remotes)
		}
		if engine == env.EngineH1 {
			if n := strings.Count(logs.String(), noSocketLine); n != 1 || !strings.Contains(logs.String(), "source_schema=products") {
				t.Errorf("the log has %d lines %q naming the schema, want 1:\n%s", n, noSocketLine, logs.String())
			}
			if closes := srv.askedClose(); !slices.Equal(closes, []bool{true, true}) {
				t.Errorf("Connection: close per request %v, want on both: a connection h1 cannot look at carries one request", closes)
			}
		}
	})
}

// TestStrayIdleNetConnDial: the same, with a wrapper that has a NetConn
// method: h1 finds the socket through it and serves the connection itself
// (nothing is logged), its look at the socket sees the stray, and bob's
// request goes on a new connection.
func TestStrayIdleNetConnDial(t *testing.T) {
	srv := newIdleServer(t, "stray", nil)
	d := &socketDial{kind: "netconn"}
	var logs syncBuffer
	tr := openHooked(t, idleConfig(env.EngineH1, srv.url, nil), hooks{logs: &logs, dial: d.Dial})
	remotes := aliceThenBob(t, tr, srv, d)
	if len(remotes) != 2 || remotes[0] == remotes[1] {
		t.Errorf("requests came on %v; want bob's on a new connection", remotes)
	}
	if strings.Contains(logs.String(), noSocketLine) {
		t.Errorf("the socket was not found through NetConn:\n%s", logs.String())
	}
	if closes := srv.askedClose(); slices.Contains(closes, true) {
		t.Errorf("Connection: close per request %v, want none: the connection was meant to be reused", closes)
	}
	ranOn(t, env.EngineH1, tr)
}

// TestStrayIdleCloseWrappedDial: the server closes alice's connection
// while it is idle, with each kind of Dial hook wrapper: bob's Post goes
// on a new connection and succeeds (no "unexpected EOF").
func TestStrayIdleCloseWrappedDial(t *testing.T) {
	for _, kind := range []string{"embed", "netconn"} {
		t.Run(kind, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) {
				srv := newIdleServer(t, "close", nil)
				d := &socketDial{kind: kind, reader: engine == env.EngineNetHTTP}
				tr := openHooked(t, idleConfig(engine, srv.url, nil), hooks{dial: d.Dial})
				ranOn(t, engine, tr)
				remotes := aliceThenBob(t, tr, srv, d)
				if len(remotes) != 2 || remotes[0] == remotes[1] {
					t.Errorf("requests came on %v; want bob's on a new connection", remotes)
				}
			})
		})
	}
}

// TestStrayIdleTLS: over TLS (h1 with http_version 1.1; the Dial hook
// returns the TCP connection itself), what the server sends on alice's
// idle connection reaches the client's socket but not crypto/tls, which
// reads only when asked. A stray response, a close (close_notify and FIN)
// or half a record must keep bob off that connection, and he must get his
// own answer; a session ticket or an empty record, which crypto/tls
// consumes silently, must not: bob reuses the connection.
func TestStrayIdleTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS13}
	for _, c := range []struct {
		act   string
		reuse bool
	}{{"stray", false}, {"close", false}, {"partial", false}, {"ticket", true}, {"empty", true}} {
		t.Run(c.act, func(t *testing.T) {
			srv := newIdleServer(t, c.act, tlsCfg)
			d := &socketDial{kind: "raw"}
			var logs syncBuffer
			tr := openHooked(t, idleConfig(env.EngineH1, srv.url, func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }), hooks{logs: &logs, dial: d.Dial})
			remotes := aliceThenBob(t, tr, srv, d)
			if len(remotes) != 2 || (remotes[0] == remotes[1]) != c.reuse {
				t.Errorf("requests came on %v; want bob's on alice's connection: %v", remotes, c.reuse)
			}
			ranOn(t, env.EngineH1, tr)
			if strings.Contains(logs.String(), noSocketLine) {
				t.Errorf("the socket of a *net.TCPConn was not found:\n%s", logs.String())
			}
		})
	}
}

// TestStrayIdleTLSNetHTTP is TestStrayIdleTLS's stray on nethttp, the
// control: its background reader sees the stray and closes the
// connection.
func TestStrayIdleTLSNetHTTP(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}}
	srv := newIdleServer(t, "stray", tlsCfg)
	d := &socketDial{kind: "netconn", reader: true}
	tr := openHooked(t, idleConfig(env.EngineNetHTTP, srv.url, func(s *env.SourceSchema) { s.TLS.CAFile = pki.CAFile }), hooks{dial: d.Dial})
	if remotes := aliceThenBob(t, tr, srv, d); len(remotes) != 2 || remotes[0] == remotes[1] {
		t.Errorf("requests came on %v; want bob's on a new connection", remotes)
	}
}

// strayInjector puts stray responses on idle connections of a crowd, at
// points the server picks at random. Before an answer leaves, the server
// registers the byte of its connection's stream at which the answer ends;
// the client's connection (injectConn), once its reads reach that byte,
// lets the server write a stray response and waits until the stray is in
// its socket before it returns the answer's last bytes to the engine. So
// the stray arrives after its answer and before any next request: on a
// connection that is idle, or about to be.
type strayInjector struct {
	mu sync.Mutex
	at map[string]*injection // by the client's address: the server's RemoteAddr, the client's LocalAddr
}

type injection struct {
	end     int64         // the answer's end, in bytes of the server-to-client stream
	reached chan struct{} // closed by the client's connection once it has read through end
	sent    chan struct{} // closed by the server once the stray is written
}

// expect registers an injection after end on the connection from client.
func (s *strayInjector) expect(client string, end int64) *injection {
	inj := &injection{end: end, reached: make(chan struct{}), sent: make(chan struct{})}
	s.mu.Lock()
	s.at[client] = inj
	s.mu.Unlock()
	return inj
}

// reachedBy takes the injection of the connection from client if its
// reads, read bytes so far, have reached it.
func (s *strayInjector) reachedBy(client string, read int64) *injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	inj := s.at[client]
	if inj == nil || read < inj.end {
		return nil
	}
	delete(s.at, client)
	return inj
}

// injectConn is a Dial hook's wrapper (struct embedding net.Conn) that
// plays the client's part of a strayInjector.
type injectConn struct {
	net.Conn // the *net.TCPConn
	inj      *strayInjector
	key      string       // LocalAddr
	read     atomic.Int64 // bytes read so far
	fails    *failures
}

func (c *injectConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if inj := c.inj.reachedBy(c.key, c.read.Add(int64(n))); inj != nil {
			close(inj.reached)
			select {
			case <-inj.sent:
				if werr := awaitReadable(c.Conn.(*net.TCPConn)); werr != nil {
					c.fails.Add("the stray after byte %d on %s: %v", inj.end, c.key, werr)
				}
			case <-time.After(testTimeout):
				c.fails.Add("the server did not write its stray on %s within %v", c.key, testTimeout)
			}
		}
	}
	return n, err
}

// injectNetConn is injectConn with a NetConn method.
type injectNetConn struct{ *injectConn }

func (c injectNetConn) NetConn() net.Conn { return c.injectConn.Conn }

// newCrowdServer is a raw server, in clear or over TLS (tlsCfg), that
// answers each request with its X-User and X-Call headers and a pad of
// random length (so that answers end at varied points of the engines'
// buffers and TLS records), and after about one answer in 8, at most max
// in all, writes a stray response carrying that answer's user and call on
// the idle connection (see strayInjector). It counts the strays in sent,
// and in closes the requests that asked to close their connection, which
// it closes after their answer.
func newCrowdServer(t *testing.T, inj *strayInjector, tlsCfg *tls.Config, max int64, sent, closes *atomic.Int64) string {
	// rawServer reports each closed connection on a channel with room for
	// 1,024, and a crowd may open more: drain it until the server's own
	// cleanup, which runs first, has ended.
	stop, drained := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		<-drained
	})
	var srv *wiretest.RawServer
	defer func() {
		go func() {
			defer close(drained)
			for {
				select {
				case <-srv.Closed:
				case <-stop:
					return
				}
			}
		}()
	}()
	srv = wiretest.NewRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		var (
			r     io.Reader = c
			tc    *tls.Conn
			tap   *tlsrecord.Tap
			wrote int64 // bytes written to c so far, in clear
		)
		if tlsCfg != nil {
			tap = &tlsrecord.Tap{Conn: c}
			tc = tls.Server(tap, tlsCfg)
			r = tc
		}
		// send writes b, in clear or as TLS records, and returns the end
		// of what it wrote in the connection's stream; before is called
		// with that end before any of it leaves.
		send := func(b []byte, before func(end int64)) error {
			if tc == nil {
				before(wrote + int64(len(b)))
				_, err := c.Write(b)
				wrote += int64(len(b))
				return err
			}
			tap.HoldBack(true)
			if _, err := tc.Write(b); err != nil {
				tap.HoldBack(false)
				return err
			}
			held := tap.HoldBack(false)
			before(int64(len(tap.Written())))
			_, err := c.Write(held)
			return err
		}
		br := bufio.NewReader(r)
		for {
			req, err := wiretest.ReadRequest(br)
			if err != nil {
				return
			}
			user, call := req.Header.Get("X-User"), req.Header.Get("X-Call")
			body := `{"data":{"user":"` + user + `","call":"` + call + `","pad":"` + strings.Repeat("p", rand.N(9000)) + `"}}`
			var pending *injection
			if req.Close {
				// The connection ends with this answer: nothing to put a
				// stray on.
				closes.Add(1)
				send([]byte(answerFor(body)), func(int64) {})
				return
			}
			stray := rand.N(8) == 0 && sent.Add(1) <= max
			if err := send([]byte(answerFor(body)), func(end int64) {
				if stray {
					pending = inj.expect(c.RemoteAddr().String(), end)
				}
			}); err != nil {
				return
			}
			if pending == nil {
				continue
			}
			select {
			case <-pending.reached:
			case <-time.After(testTimeout):
				return
			}
			err = send([]byte(answerFor(`{"data":{"user":"`+user+`","call":"`+call+`","stray":"yes"}}`)), func(int64) {})
			close(pending.sent)
			if err != nil {
				return
			}
		}
	})
	if tlsCfg != nil {
		return "https" + strings.TrimPrefix(srv.URL, "http")
	}
	return srv.URL
}

// TestStrayCrowd: 8 users, 200 calls each, share 2 connections of a
// schema whose Dial hook wraps the connection, in clear and over TLS, on
// each engine,
// while the server puts stray responses carrying a user's data on idle
// connections at random points (strayInjector), after at most one call in
// 8. Each user's identity goes in a header the server echoes: no user may
// get an answer that is not theirs, and no call may fail. Without NetConn
// the wrapper hides the socket, and every request asks to close its
// connection (h1 and nethttp alike); with it, connections are reused and
// the engine's look at the socket must catch every stray: h1's (over TLS
// through crypto/tls), or, on nethttp, net/http's reader parked in
// watchedConn.Read, which waits for the socket without taking a byte, with
// the socket empty.
func TestStrayCrowd(t *testing.T) {
	users, calls := 8, 200
	if testing.Short() {
		calls = 50
	}
	pki := testpki.New(t, t.TempDir())
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}}
	for _, engine := range []string{env.EngineH1, env.EngineNetHTTP} {
		for _, scheme := range []string{"http", "https"} {
			for _, kind := range []string{"embed", "netconn"} {
				t.Run(engine+"/"+scheme+"/"+kind, func(t *testing.T) {
					inj := &strayInjector{at: map[string]*injection{}}
					var cfgTLS *tls.Config
					if scheme == "https" {
						cfgTLS = tlsCfg
					}
					var strays, closes atomic.Int64
					max := int64(users * calls / 8)
					url := newCrowdServer(t, inj, cfgTLS, max, &strays, &closes)
					var fails failures
					dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
						c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
						if err != nil {
							return nil, err
						}
						ic := &injectConn{Conn: c, inj: inj, key: c.LocalAddr().String(), fails: &fails}
						if kind == "netconn" {
							return injectNetConn{ic}, nil
						}
						return ic, nil
					}
					cfg := engineOn(engine, url, func(s *env.SourceSchema) {
						s.MaxConnsPerHost = 2
						s.TLS.CAFile = pki.CAFile
					})
					var logs syncBuffer
					tr := openHooked(t, cfg, hooks{logs: &logs, dial: dial})
					var wrong, errs failures
					var wg sync.WaitGroup
					for u := range users {
						wg.Go(func() {
							user := fmt.Sprintf("u%d", u)
							for i := range calls {
								call := fmt.Sprint(i)
								ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
								body, err := sendRead(tr, gqlRequest(ctx, url, `{"query":"{ user }"}`, "X-User", user, "X-Call", call))
								cancel()
								own := `{"data":{"user":"` + user + `","call":"` + call + `","pad":"`
								switch {
								case err != nil:
									errs.Add("%s call %s: %v", user, call, err)
								case !strings.HasPrefix(string(body), own) || !strings.HasSuffix(string(body), `"}}`):
									wrong.Add("%s call %s got %.80s", user, call, body)
								}
							}
						})
					}
					wg.Wait()
					nWrong, firstWrong := wrong.Report()
					nErr, firstErr := errs.Report()
					nFail, firstFail := fails.Report()
					total := int64(users * calls)
					t.Logf("%s %s/%s: %d calls, %d strays, %d asked to close, %d wrong answers, %d errors", engine, scheme, kind, total, min(strays.Load(), max), closes.Load(), nWrong, nErr)
					if nFail > 0 {
						t.Errorf("the injection failed %d times:\n\t%s", nFail, firstFail)
					}
					if nWrong > 0 {
						t.Errorf("%d callers got an answer that was not theirs; first:\n\t%s", nWrong, firstWrong)
					}
					if nErr > 0 {
						t.Errorf("%d calls failed; first:\n\t%s", nErr, firstErr)
					}
					ranOn(t, engine, tr)
					wantLines, wantCloses := 0, int64(0)
					if kind == "embed" {
						wantLines, wantCloses = 1, total
					}
					line := noSocketLine
					if engine == env.EngineNetHTTP {
						line = noSocketLineNetHTTP
					}
					if n := strings.Count(logs.String(), line); n != wantLines {
						t.Errorf("the log has %d lines %q, want %d:\n%s", n, line, wantLines, logs.String())
					}
					if closes.Load() != wantCloses {
						t.Errorf("%d requests asked to close their connection, want %d", closes.Load(), wantCloses)
					}
				})
			}
		}
	}
}
