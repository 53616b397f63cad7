package redisclient

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// keepAlive is go-redis's own TCP keep-alive policy (its default dialer's),
// kept by the client's dialer: probe after 30 s idle, give up after 3
// unanswered probes 5 s apart.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// dial is the client's go-redis Dialer: a TCP connection (TLS over it for
// rediss), bounded by ctx's deadline and redis.timeout, wrapped in a
// *conn.
//
// The wrapper is why the client has a dialer of its own. go-redis checks
// every connection it takes from its pool with a non-blocking read
// syscall (pool.connCheck, through SyscallConn: a syscall and three
// allocations per round trip, the largest cost of a cache hit's lookup
// after the round trip's own write and read), and only where the
// connection is a syscall.Conn: it skips a TLS connection already. A
// *conn is not one, so the check is skipped for every connection. What
// the check found, a connection Redis closed while it sat in the pool (a
// restart, Redis's idle timeout), the client finds instead when it sends
// on it: the wrapper marks that failure (closedError) and Do sends the
// round trip again on another connection (see retry).
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.timeout, KeepAliveConfig: keepAlive}
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if c.tls != nil {
		tc := tls.Client(nc, c.tls)
		// The handshake watches ctx's Done only, which Do's context does
		// not close at its deadline (round): the deadline goes on the
		// connection instead.
		deadline, ok := ctx.Deadline()
		if !ok || time.Until(deadline) > c.timeout {
			deadline = time.Now().Add(c.timeout)
		}
		_ = nc.SetDeadline(deadline)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		_ = nc.SetDeadline(time.Time{})
		nc = tc
	}
	return &conn{Conn: nc, seq: c.dials.Add(1)}, nil
}

// conn is a connection of the client's pool: net.Conn's methods alone,
// so that go-redis finds no SyscallConn (nor NetConn) to health-check it
// through. It marks the failures that show Redis had closed it before the
// round trip (closedError).
type conn struct {
	net.Conn        // the TCP or TLS connection; set in dial
	seq      uint64 // the client's count of dials when this one was made; set in dial
	// answered: a byte has been read since the last Write began. Atomic:
	// a PubSub's connection is written by one goroutine while another
	// reads it.
	answered atomic.Bool
}

func (c *conn) Write(p []byte) (int, error) {
	c.answered.Store(false)
	n, err := c.Conn.Write(p)
	if err != nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
		err = &closedError{err: err, seq: c.seq}
	}
	return n, err
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
	}
	if err != nil && !c.answered.Load() && peerClosed(err) {
		err = &closedError{err: err, seq: c.seq}
	}
	return n, err
}

// peerClosed reports whether a read's err says the other end closed the
// connection: an end of stream, or a reset (EPIPE is how Linux reports a
// reset that came after the end of stream).
func peerClosed(err error) bool {
	return err == io.EOF || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// closedError is the failure of a round trip on a connection that Redis
// had closed: the end of stream or a reset before any byte of the answer,
// or a write refused by a reset. Its text and Unwrap are the cause's.
type closedError struct {
	err error  // the cause: io.EOF, or an error wrapping ECONNRESET or EPIPE
	seq uint64 // the connection's conn.seq
}

func (e *closedError) Error() string { return e.err.Error() }

func (e *closedError) Unwrap() error { return e.err }

// staleConn reports whether err is a closedError of a connection dialed
// before the round trip began, when the client had made dials
// connections: one that sat in the pool while Redis closed it. A
// connection the round trip dialed itself is not stale: Redis closing it
// is a failure.
func staleConn(err error, dials uint64) bool {
	var ce *closedError
	return errors.As(err, &ce) && ce.seq <= dials
}
