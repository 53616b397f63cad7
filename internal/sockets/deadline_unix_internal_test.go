//go:build unix

package sockets

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// deadlineConn is what a metrics Dial hook returns: it shows its socket
// (NetConn), so that engine h1 reuses the connection, and it counts the
// deadline changes the engine makes on it. expired gets a send (if there
// is room) each time a read ends at a read deadline.
type deadlineConn struct {
	net.Conn
	read, both, write atomic.Int64 // SetReadDeadline, SetDeadline, SetWriteDeadline calls
	expired           chan struct{}
}

func newDeadlineConn(c net.Conn) *deadlineConn {
	return &deadlineConn{Conn: c, expired: make(chan struct{}, 1)}
}

func (c *deadlineConn) NetConn() net.Conn { return c.Conn }

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.read.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.both.Add(1)
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.write.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		select {
		case c.expired <- struct{}{}:
		default:
		}
	}
	return n, err
}

// dialCounting is a Dial hook that wraps each connection it opens in a
// deadlineConn, which it hands on conns.
func dialCounting(conns chan<- *deadlineConn) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dc := newDeadlineConn(c)
		conns <- dc
		return dc, nil
	}
}

// TestH1OneReadDeadlinePerCall: over plain TCP, a call under a header
// bound (RoundTripWithin, as the request path sends a request without a
// deadline) changes its connection's read deadline once: it arms the
// bound, and leaves it to lapse once the head is in rather than clear it
// (docs/benchmarks.md); a call without a bound changes none. The calls
// share one connection, so the count is per call.
func TestH1OneReadDeadlinePerCall(t *testing.T) {
	const calls = 10
	for _, tc := range []struct {
		name  string
		bound time.Duration // RoundTripWithin's; 0: RoundTrip
		want  int64         // read-deadline changes (SetReadDeadline or SetDeadline) in all
	}{
		{"header bound", time.Minute, calls},
		{"no bound", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, `{"data":{}}`)
			}))
			t.Cleanup(srv.Close)
			conns := make(chan *deadlineConn, calls)
			tr := openHooked(t, engineOn(env.EngineH1, srv.URL, nil), hooks{dial: dialCounting(conns)})
			ranOn(t, env.EngineH1, tr)
			for range calls {
				req := gqlRequest(context.Background(), srv.URL, `{"query":"{ ok }"}`)
				var resp *http.Response
				var err error
				if tc.bound > 0 {
					resp, err = tr.RoundTripWithin(req, tc.bound)
				} else {
					resp, err = tr.RoundTrip(req)
				}
				if err != nil {
					t.Fatal(err)
				}
				if body := readBody(t, resp); body != `{"data":{}}` {
					t.Fatalf("body %q", body)
				}
			}
			if n := len(conns); n != 1 {
				t.Fatalf("%d connections dialled for %d calls, want 1: the count is not per call", n, calls)
			}
			c := <-conns
			if got := c.read.Load() + c.both.Load(); got != tc.want {
				t.Errorf("%d read-deadline changes for %d calls (SetReadDeadline %d, SetDeadline %d), want %d", got, calls, c.read.Load(), c.both.Load(), tc.want)
			}
			if n := c.write.Load(); n != 0 {
				t.Errorf("%d write-deadline changes, want none", n)
			}
		})
	}
}

// TestH1BodyReadAfterHeaderDeadline: the header bound's read deadline,
// left on a plain TCP connection once the head is in, bounds nothing
// after it: a body read that meets it (the server sends the rest of the
// body only once the client's read has ended at the deadline) is read
// again without it, and the body arrives whole, without an error.
func TestH1BodyReadAfterHeaderDeadline(t *testing.T) {
	// bound leaves a loopback server time to send the head under load;
	// the test takes about that long.
	const bound = 200 * time.Millisecond
	conns := make(chan *deadlineConn, 1)
	metDeadline := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "first,")
		http.NewResponseController(w).Flush()
		// The rest waits for the client's body read to end at the header
		// deadline; were the deadline cleared instead, it goes after a
		// bound, so that the test fails rather than hang.
		c := <-conns
		select {
		case <-c.expired:
			metDeadline <- true
		case <-time.After(10 * time.Second):
			metDeadline <- false
		}
		io.WriteString(w, "rest")
	}))
	t.Cleanup(srv.Close)
	tr := openHooked(t, engineOn(env.EngineH1, srv.URL, nil), hooks{dial: dialCounting(conns)})
	ranOn(t, env.EngineH1, tr)
	resp, err := tr.RoundTripWithin(gqlRequest(context.Background(), srv.URL, `{}`), bound)
	if err != nil {
		t.Fatalf("RoundTripWithin: %v; want the head within %v", err, bound)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "first,rest" {
		t.Errorf("body %q, error %v; want first,rest and none", body, err)
	}
	if !<-metDeadline {
		t.Error("no body read met the header deadline: the test's premise (the bound's deadline lingers over plain TCP) does not hold")
	}
}
