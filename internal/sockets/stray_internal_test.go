//go:build unix

package sockets

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// heldConn is a Dial hook's connection that shows its socket in the
// documented way (NetConn, to a syscall.Conn) through a RawConn that can
// hold net/http's reader: once armed, when the reader's wait for the next
// response (watchedConn.waitReadable) finds something in the socket, it
// closes seen and waits for release before it goes on to take it. The
// bytes then sit in the socket with the reader parked, which is the
// moment golang/go#31259 is about, held for as long as the test needs.
//
// looked is closed by the first look at the socket (Control) after seen,
// and wrote by the first write after arming: the pool judged the
// connection, or handed it out.
type heldConn struct {
	net.Conn // the *net.TCPConn as dialled; immutable
	sock     *heldSock
}

func (c *heldConn) NetConn() net.Conn { return c.sock }

func (c *heldConn) Write(p []byte) (int, error) {
	if c.sock.raw.armed.Load() {
		c.sock.raw.wroteOnce.Do(func() { close(c.sock.raw.wrote) })
	}
	return c.Conn.Write(p)
}

// heldSock is what heldConn's NetConn returns: the socket, through heldRaw.
type heldSock struct {
	*net.TCPConn
	raw *heldRaw // immutable
}

func (s *heldSock) SyscallConn() (syscall.RawConn, error) { return s.raw, nil }

// heldRaw is the socket's RawConn with the hold. armed is set by the test;
// the channels are closed once each, guarded by their Once.
type heldRaw struct {
	syscall.RawConn
	armed                           atomic.Bool
	seen, looked, wrote, release    chan struct{}
	seenOnce, lookedOnce, wroteOnce sync.Once
	releaseOnce                     sync.Once
}

func (r *heldRaw) Read(f func(fd uintptr) bool) error {
	return r.RawConn.Read(func(fd uintptr) bool {
		done := f(fd)
		if done && r.armed.Load() {
			r.seenOnce.Do(func() { close(r.seen) })
			<-r.release
		}
		return done
	})
}

func (r *heldRaw) Control(f func(fd uintptr)) error {
	err := r.RawConn.Control(f)
	select {
	case <-r.seen:
		r.lookedOnce.Do(func() { close(r.looked) })
	default:
	}
	return err
}

func (r *heldRaw) letGo() { r.releaseOnce.Do(func() { close(r.release) }) }

// heldDial dials TCP and returns each connection as a heldConn; the first
// one's heldRaw is sent on first.
func heldDial(first chan<- *heldRaw) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var once sync.Once
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := c.(*net.TCPConn)
		rc, err := tc.SyscallConn()
		if err != nil {
			c.Close()
			return nil, err
		}
		raw := &heldRaw{RawConn: rc, seen: make(chan struct{}), looked: make(chan struct{}), wrote: make(chan struct{}), release: make(chan struct{})}
		once.Do(func() { first <- raw })
		return &heldConn{Conn: tc, sock: &heldSock{TCPConn: tc, raw: raw}}, nil
	}
}

// TestNetHTTPStrayBeforeHandOut: on the nethttp engine, what a server
// sends on an idle HTTP/1 connection (a response nobody asked for, or its
// close) that has reached the client's socket while net/http's reader is
// still parked must keep the connection from the next request: the pool
// looks at the socket (peeker.pending) before handing it out. The reader
// is held from the moment its wait sees the bytes until the pool has
// judged the connection (looked at the socket) or handed it out (a request
// was written on it); then it goes on. The next request goes on a new
// connection and gets its own answer.
func TestNetHTTPStrayBeforeHandOut(t *testing.T) {
	cases := []struct {
		name   string
		stray  string // written on the idle connection
		hangUp bool   // then the server closes it
	}{
		{"a response nobody asked for", answer(`{"data":{"user":"alice"}}`), false},
		{"the server's close", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			strayNow := make(chan struct{})
			srv := newScriptServer(t, func(n int, _ *http.Request, conn net.Conn) (string, bool) {
				if n > 1 {
					return answer(nth(n)), false
				}
				conn.Write([]byte(answer(nth(1))))
				select {
				case <-strayNow:
				case <-time.After(testTimeout):
				}
				return c.stray, c.hangUp
			})
			first := make(chan *heldRaw, 1)
			p := &pool{tr: &http.Transport{DialContext: watchDial(heldDial(first)), DisableCompression: true}, scheme: "http", addr: srv.addr}
			t.Cleanup(func() {
				p.drain()
				p.tr.CloseIdleConnections()
			})
			tr := &poolTransport{pool: p}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()

			resp, err := roundTrip(t, ctx, tr, http.MethodGet, srv.url, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := readBody(t, resp); got != nth(1) {
				t.Fatalf("the first caller got %q, want %s", got, nth(1))
			}
			raw := <-first
			defer raw.letGo()
			raw.armed.Store(true)
			close(strayNow)
			guard := time.NewTimer(testTimeout)
			defer guard.Stop()
			select {
			case <-raw.seen:
			case <-guard.C:
				t.Fatal("what the server sent never reached the parked reader's wait")
			}

			type res struct {
				body string
				err  error
			}
			done := make(chan res, 1)
			next, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				resp, err := tr.RoundTrip(next)
				if err != nil {
					done <- res{err: err}
					return
				}
				b := make([]byte, 256)
				n, _ := resp.Body.Read(b)
				resp.Body.Close()
				done <- res{body: string(b[:n])}
			}()
			select {
			case <-raw.looked:
			case <-raw.wrote:
			case <-guard.C:
				t.Fatal("the next request neither looked at the idle connection nor was written on it")
			}
			raw.letGo()
			var r res
			select {
			case r = <-done:
			case <-guard.C:
				t.Fatal("the next request got no answer")
			}
			if r.err != nil || r.body != nth(2) {
				t.Errorf("the next caller got %q, %v; want its own answer %s", r.body, r.err, nth(2))
			}
			if remotes := srv.remotes(); len(remotes) != 2 || remotes[0] == remotes[1] {
				t.Errorf("requests came on %v, want the second on a new connection", remotes)
			}
		})
	}
}
