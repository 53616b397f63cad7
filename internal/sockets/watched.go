package sockets

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// watchedConn is a pooled connection as the pool dials it, under TLS if
// any: it tells the pool two things net/http's ClientConn does not.
//
//   - Whether net/http's reader is parked in Read, waiting for the next
//     response. After a response ends, net/http hands an HTTP/1 connection
//     back (its state hook runs) before its reader goes back to look for
//     bytes nobody asked for (golang/go#31259). A request written in that
//     window gets those bytes as its answer: one caller's connection bytes
//     in another caller's answer. The pool hands an idle HTTP/1 connection
//     to a request only once the reader is parked, with nothing buffered
//     (a reader that found bytes buffered never parks, and net/http closes
//     the connection as "unsolicited response") and nothing waiting in the
//     socket (pending).
//   - How many bytes were written, so that a request that failed before
//     any byte of it left can be sent again whatever its method.
type watchedConn struct {
	net.Conn
	// parked is set while a Read waits and has taken nothing from the
	// socket. Written only by the goroutine in Read (net/http's reader),
	// read by the pool. Where the socket is visible (peeker.raw), Read
	// first waits for the socket to hold something without taking it
	// (waitReadable), and clears parked before the read that takes it: so
	// a byte a parked reader will return is still in the socket, where
	// pending sees it. Where it is not, parked is set for the whole Read;
	// an HTTP/1 connection under which no socket was found (hidden) then
	// carries one request (conn.oneShot).
	parked  atomic.Bool
	reads   atomic.Uint64 // Reads that have returned; written by Read, read by the pool
	got     atomic.Int64  // bytes Reads have returned; written by Read, read by the request's goroutine
	written atomic.Int64  // bytes written so far
	// h2 is set by the pool (conn.setH2) once the connection is known to
	// speak HTTP/2, and never cleared: Read then skips waitReadable, since
	// the pool's guard does not apply to HTTP/2.
	h2 atomic.Bool
	// onPark, if set, runs when a Read begins: the pool's wake for a
	// connection it could not hand out because the reader was not parked.
	// Set once by dial before the connection is used.
	onPark func()
	// want is set by the pool when it needs onPark to run; the next Read
	// clears it and calls onPark.
	want atomic.Bool

	// peeker looks at the socket; pending is called with pool.mu held.
	peeker
	// hidden: no socket was found under the connection (errNoSocket), as
	// opposed to one that cannot be peeked at (no MSG_PEEK on this
	// platform, not a socket). Immutable after newWatchedConn.
	hidden bool

	// wait is waitReadable's callback for RawConn.Read, made once by
	// newWatchedConn so that Read allocates nothing; nil when peeker.raw
	// is nil. waitN, waitErr and waitBuf are its peek's result and buffer:
	// written and read only by the goroutine in Read, apart from the
	// peeker's own, which the pool uses.
	wait    func(fd uintptr) bool
	waitN   int
	waitErr error
	waitBuf [1]byte
}

func newWatchedConn(c net.Conn) *watchedConn {
	w := &watchedConn{Conn: c}
	switch err := w.peeker.init(c); {
	case err == nil:
		w.wait = w.waitFD
	case errors.Is(err, errNoSocket):
		w.hidden = true // an HTTP/1 connection carries one request (conn.oneShot)
	}
	// Otherwise (no MSG_PEEK here, or not a socket) the parked reader
	// alone guards it.
	return w
}

// waitFD is RawConn.Read's callback in waitReadable: it looks at the
// socket without taking bytes from it and without waiting
// (MSG_PEEK|MSG_DONTWAIT), and reports whether the socket holds bytes, an
// end or an error (true), or nothing yet (false: the runtime's poller
// waits for the socket to be readable and calls it again).
func (w *watchedConn) waitFD(fd uintptr) bool {
	w.waitN, w.waitErr = peekFD(fd, w.waitBuf[:])
	return peekSaw(w.waitN, w.waitErr)
}

// waitReadable waits, without taking a byte, until the socket holds
// bytes, an end or an error. The runtime's poller honours the read
// deadline and a Close; on such an error (os.ErrDeadlineExceeded, a closed
// connection) the caller's Read, which follows, fails the same way at once
// and returns what net/http expects from Read. An error the peek itself
// took from the socket (a reset) is left in waitErr for Read to return.
func (w *watchedConn) waitReadable() {
	w.waitN, w.waitErr = 0, nil
	_ = w.peeker.raw.Read(w.wait)
}

// peeker looks at a socket without taking bytes from it. Its methods are
// called by one goroutine at a time: the pool with pool.mu held, or the
// request that holds the connection.
type peeker struct {
	raw  syscall.RawConn  // nil: pending cannot look at the socket; set by init
	peek func(fd uintptr) // made once, so that pending allocates nothing; set by init
	// peekN and peekErr are the last peek's result, written and read only
	// by pending (and init).
	peekN   int
	peekErr error
	buf     [1]byte
}

// errNoSocket is peeker.init's error for a connection under which
// socketOf finds no socket.
var errNoSocket = errors.New("the connection is not a syscall.Conn and has no NetConn method that leads to one")

// init sets pk up to look at the socket under c (socketOf). It fails when
// there is none, or when the socket cannot be peeked at (not a socket, or
// no MSG_PEEK on this platform): then pending always says false.
func (pk *peeker) init(c net.Conn) error {
	raw := socketOf(c)
	if raw == nil {
		return errNoSocket
	}
	pk.raw, pk.peek = raw, pk.peekFD
	pk.peekN, pk.peekErr = 0, nil
	err := raw.Control(pk.peek)
	if err == nil && !peekable(pk.peekErr) {
		err = pk.peekErr
	}
	if err != nil {
		pk.raw, pk.peek = nil, nil
		return err
	}
	return nil
}

// maxWrappers bounds how many wrappers socketOf looks through.
const maxWrappers = 8

// socketOf returns the socket under c: c's own if c is a syscall.Conn,
// else that of the connection its NetConn method returns, looked at the
// same way, through at most maxWrappers wrappers. This is the documented
// way for a SchemaOptions.Dial hook's wrapper to show its socket: a
// wrapper must read and write through what NetConn returns, holding no
// byte it read back. So a *tls.Conn, whose NetConn returns the
// connection under its records, is not looked through: the bytes it has
// read and not yet returned are not in the socket. Nil: no socket found.
func socketOf(c net.Conn) syscall.RawConn {
	for range 1 + maxWrappers { // c, then each wrapper's NetConn
		switch w := c.(type) {
		case *tls.Conn:
			return nil
		case syscall.Conn:
			raw, err := w.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		case interface{ NetConn() net.Conn }:
			if c = w.NetConn(); c == nil {
				return nil
			}
		default:
			return nil
		}
	}
	return nil
}

func (w *watchedConn) Read(p []byte) (int, error) {
	w.parked.Store(true)
	if w.want.Load() && w.want.CompareAndSwap(true, false) && w.onPark != nil {
		w.onPark()
	}
	if w.wait != nil && !w.h2.Load() && len(p) > 0 {
		w.waitReadable()
		w.parked.Store(false) // before the read that takes the bytes
		if err := w.waitErr; err != nil && peekSaw(0, err) {
			// The peek took the socket's error (a reset): the kernel
			// reports it once, so the read would see only an end. Return
			// it as net's Read would have.
			w.waitErr = nil
			w.reads.Add(1)
			return 0, &net.OpError{Op: "read", Net: w.Conn.LocalAddr().Network(), Source: w.Conn.LocalAddr(), Addr: w.Conn.RemoteAddr(), Err: os.NewSyscallError("read", err)}
		}
	}
	n, err := w.Conn.Read(p)
	w.parked.Store(false)
	if n > 0 {
		w.got.Add(int64(n))
	}
	w.reads.Add(1)
	return n, err
}

func (w *watchedConn) Write(p []byte) (int, error) {
	n, err := w.Conn.Write(p)
	w.written.Add(int64(n))
	return n, err
}

// pending reports whether the socket holds bytes (or an end) that nobody
// has read: for a connection about to be handed out, a server that closed
// it or sent what nobody asked for. False where it cannot tell.
func (pk *peeker) pending() bool {
	if pk.raw == nil {
		return false
	}
	pk.peekN, pk.peekErr = 0, nil
	if err := pk.raw.Control(pk.peek); err != nil {
		return true // closed
	}
	return peekSaw(pk.peekN, pk.peekErr)
}

// dialSlot carries the watchedConn from the Transport's dial function back
// to the pool's dial, through the dial's context.
type dialSlot struct {
	to   string       // the address to dial instead of the Transport's (the pool's choice); empty: the Transport's
	conn *watchedConn // set by the dial
}

type dialSlotKey struct{}

// watchDial wraps dial so that each connection it opens is a watchedConn,
// put in the context's dialSlot for the pool.
func watchDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		slot, _ := ctx.Value(dialSlotKey{}).(*dialSlot)
		if slot != nil && slot.to != "" {
			addr = slot.to
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w := newWatchedConn(c)
		if slot != nil {
			slot.conn = w
		}
		return w, nil
	}
}
