//go:build unix

package sockets

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// awaitSocket waits until c's socket holds bytes or an end, without taking
// any (MSG_PEEK), so that what the server did on the idle connection is
// there for Reserve to see; it fails the test after testTimeout.
func awaitSocket(t *testing.T, c *h1Conn) {
	t.Helper()
	rc, err := c.nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		rc.Read(func(fd uintptr) bool {
			n, err := peekFD(fd, b[:])
			return peekSaw(n, err)
		})
	}()
	guard := time.NewTimer(testTimeout)
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		c.nc.Close()
		<-done
		t.Fatalf("nothing reached the client's socket within %v", testTimeout)
	}
}

// TestH1ConnStaleIdle: the stray guard of an idle h1Conn. After a clean
// response the connection is free; when the server then writes to it
// (a response nobody asked for) or closes it, and that has reached the
// client's socket, the next Reserve fails with errH1Stale and closes the
// connection: no request is written on it (the server sees none), and
// the server sees the client's close.
func TestH1ConnStaleIdle(t *testing.T) {
	for _, act := range []string{"writes", "closes"} {
		t.Run("the server "+act, func(t *testing.T) {
			idleNow := make(chan struct{})
			srv := newScriptServer(t, func(n int, _ *http.Request, c net.Conn) (string, bool) {
				c.Write([]byte(answer(nth(n))))
				select {
				case <-idleNow:
				case <-time.After(testTimeout):
				}
				if act == "closes" {
					return "", true
				}
				return answer(`{"data":{"user":"alice"}}`), false
			})
			c := dialH1(t, srv.addr)
			if err := c.Reserve(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := readBody(t, resp); got != nth(1) {
				t.Fatalf("got %q, want %s", got, nth(1))
			}
			if c.Available() != 1 {
				t.Fatal("the connection is not free after a clean response")
			}
			close(idleNow)
			awaitSocket(t, c)
			if err := c.Reserve(); !errors.Is(err, errH1Stale) {
				t.Errorf("Reserve of the idle connection: %v, want errH1Stale", err)
			}
			if !errors.Is(c.Err(), errH1Stale) || c.Available() != 0 {
				t.Errorf("after the refused Reserve: Err %v, Available %d; want closed with errH1Stale", c.Err(), c.Available())
			}
			if act == "writes" {
				seen, _ := srv.requests()
				srv.waitClosed(t, c.nc.LocalAddr().String(), "Reserve must close a stale connection")
				if len(seen) != 1 {
					t.Errorf("the server saw %v, want only the first request", seen)
				}
			}
		})
	}
}
