// Package wirecount counts the bytes a client writes on its connections,
// for benchmarks that report request bytes per call as they cross the
// wire. It imports only the standard library (the command links it: the
// benchmark gateway counts with it). Test and benchmark support only: no
// library package imports it.
package wirecount

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// Bytes counts the bytes written on the connections it dials: with
// its Dial as every source schema's transport.SchemaOptions.Dial (or an
// http.Transport's DialContext), the request bytes a gateway sends its
// source schemas, heads and bodies, as they cross the wire. The benchmark
// gateway (fusion-transport gateway -count-wire) and the real-gateway
// bench count with it. It is safe for concurrent use.
type Bytes struct {
	n atomic.Uint64
}

// Dial dials as the transport's default dialer does (a net.Dialer with a
// 15 s timeout and keep-alive) and counts what is written on the
// connection.
func (w *Bytes) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 15 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &w.n}, nil
}

// Total returns the bytes written so far.
func (w *Bytes) Total() uint64 { return w.n.Load() }

// countedConn counts its writes. It shows the connection it wraps
// (NetConn), through which it reads and writes, holding nothing back, so
// that engine h1 can look at the socket before it reuses the connection.
type countedConn struct {
	net.Conn
	n *atomic.Uint64
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(uint64(n))
	return n, err
}

// NetConn returns the connection c wraps.
func (c *countedConn) NetConn() net.Conn { return c.Conn }
