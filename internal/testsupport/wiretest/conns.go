package wiretest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// DialRecorder is a Dial hook that records each address it is asked for.
// It dials To (a loopback address) instead of the address asked for when
// To is set, and otherwise refuses host names ending in .invalid.
type DialRecorder struct {
	To    string
	mu    sync.Mutex
	addrs []string
}

// Dial records "network addr" and dials.
func (d *DialRecorder) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, network+" "+addr)
	d.mu.Unlock()
	if d.To != "" {
		addr = d.To
	} else if host, _, _ := net.SplitHostPort(addr); strings.HasSuffix(host, ".invalid") {
		return nil, fmt.Errorf("dial %s: refused by the test's dialer", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// Addrs returns what Dial was asked for so far, as "network addr".
func (d *DialRecorder) Addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// OnClose returns c with closed called once, at its first Close, before c
// closes: a way to count or time the connections a pool closes. The
// wrapper shows c through NetConn, so that the sockets path's h1 engine
// still finds the socket (see SchemaOptions.Dial).
func OnClose(c net.Conn, closed func()) net.Conn {
	return &onCloseConn{Conn: c, closed: closed}
}

type onCloseConn struct {
	net.Conn
	closed func()
	once   sync.Once
}

func (c *onCloseConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}

// NetConn returns the connection under the wrapper.
func (c *onCloseConn) NetConn() net.Conn { return c.Conn }

// CloseTimer is a Dial hook that reports on Ages the age of each
// connection it dialled when the connection is first closed, measured from
// the end of the dial. An age that finds Ages full is dropped.
type CloseTimer struct {
	Ages chan time.Duration
}

// Dial dials addr and times the connection.
func (c *CloseTimer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	born := time.Now()
	return OnClose(conn, func() {
		select {
		case c.Ages <- time.Since(born):
		default:
		}
	}), nil
}

// SilentListener returns the address of a loopback listener that accepts
// TCP connections and never says a word on them. It closes them, and
// itself, when the test ends.
func SilentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// RefusedAddr returns a loopback host:port where nothing listens: a dial
// to it is refused at once.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
