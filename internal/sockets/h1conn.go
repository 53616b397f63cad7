package sockets

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/h1"
)

// The h1 engine: HTTP/1.1 written and read on the goroutine of the request
// that holds the connection, with no goroutine of its own, by package
// internal/h1. It serves the schemas that would speak HTTP/1.1 anyway and
// use no proxy (see EngineFor); the pool around it is the nethttp engine's,
// rules unchanged. See docs/design.md, "The h1 engine".

// oneWriteMax bounds the request that leaves in one write: request line,
// header and a body of known length up to this size are built in the
// connection's buffer and written at once. A larger body follows the
// header in writes of its own; a body of unknown length goes chunked.
const oneWriteMax = 64 << 10

// h1Dialer opens the h1 engine's connections. Immutable after newPool,
// but for once.
type h1Dialer struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	addr      string
	tls       *tls.Config   // nil over http; offers only http/1.1 by ALPN
	handshake time.Duration // bounds the TLS handshake; 0: no bound of its own
	maxHeader int64         // the response header bound (h1.ReadResponse)

	// schema and log name the schema in noSocket's line; once makes it
	// one line per pool.
	schema string
	log    *slog.Logger
	once   sync.Once
}

// open dials a connection, with TLS over https. A connection whose socket
// cannot be looked at (peeker.init) carries one request (h1Conn.oneShot).
// addr is the address chosen by the pool; empty: the host's (d.addr).
func (d *h1Dialer) open(ctx context.Context, addr string) (dialed, error) {
	if addr == "" {
		addr = d.addr
	}
	nc, err := d.dial(ctx, "tcp", addr)
	if err != nil {
		return dialed{}, err
	}
	c := &h1Conn{nc: nc, maxHeader: d.maxHeader}
	c.onDone = c.interrupt
	if err := c.peeker.init(nc); err != nil {
		c.oneShot = true
		d.noSocket(err)
	}
	if d.tls != nil {
		hctx := ctx
		if d.handshake > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, d.handshake)
			defer cancel()
		}
		var under net.Conn = nc
		var raw *tlsRaw
		if !c.oneShot {
			raw = &tlsRaw{Conn: nc, pk: &c.peeker}
			under = raw
		}
		tc := tls.Client(under, d.tls)
		if err := tc.HandshakeContext(hctx); err != nil {
			nc.Close()
			if ctx.Err() == nil && hctx.Err() != nil {
				// The handshake's own bound, not the caller's: say so, as
				// net/http does.
				return dialed{}, fmt.Errorf("TLS handshake timeout (tls_handshake_timeout %v): %w", d.handshake, err)
			}
			return dialed{}, err
		}
		st := tc.ConnectionState()
		c.nc, c.tls, c.raw = tc, &st, raw
	}
	c.br = bufio.NewReaderSize(readerOf{c}, 4<<10)
	return dialed{cc: c, written: &c.written}, nil
}

// noSocket says, once per pool, at Info, that the schema's connections
// carry one request each, and why.
func (d *h1Dialer) noSocket(why error) {
	d.once.Do(func() {
		if d.log == nil {
			return // a pool built by a test
		}
		d.log.Info("h1 cannot look at the socket of this source schema's connections, so it cannot tell whether the server closed an idle one or wrote to it: each connection carries one request (Connection: close). A Dial hook shows the socket by returning a syscall.Conn, or a wrapper with a NetConn method (see SchemaOptions.Dial)",
			"source_schema", d.schema, "reason", why.Error())
	})
}

// The states of an h1Conn.
const (
	h1Free     int32 = iota // open, no request on it
	h1Reserved              // a request holds it (Reserve), not yet sent
	h1Busy                  // a request or its response body is in flight
)

// h1Conn is one connection of the h1 engine. It implements clientConn for
// the pool: one request at a time, from Reserve through the end of its
// response body.
//
// Ownership: the fields marked "holder" belong to the request holding the
// connection, from a successful Reserve until its body ends (BodyDone) or
// its RoundTrip fails; the pool hands the connection to no one else in
// that time, and the state's atomic transitions order one holder's writes
// before the next holder's reads.
type h1Conn struct {
	nc        net.Conn                  // immutable after open (the TLS conn over https); Close and SetDeadline are safe from any goroutine
	tls       *tls.ConnectionState      // immutable after open; nil over http; every response's TLS
	raw       *tlsRaw                   // immutable after open; nil over http and when oneShot: what crypto/tls reads and writes
	maxHeader int64                     // immutable
	oneShot   bool                      // immutable after open: the socket cannot be looked at, so the connection carries one request, which asks the server to close it
	peeker                              // holder: looks at the socket before the connection is reused
	written   atomic.Int64              // bytes written so far
	state     atomic.Int32              // h1Free, h1Reserved or h1Busy
	err       atomic.Pointer[error]     // set once, when the connection closes
	hook      atomic.Pointer[stateHook] // the pool's state hook

	br   *bufio.Reader   // holder; reads through readerOf
	wbuf []byte          // holder: the request being written
	used bool            // holder: a request was sent on it before
	ctx  context.Context // holder: the request's context when it can end (Done not nil, or a request bound); nil otherwise
	stop func() bool     // holder: stops the AfterFunc of the context watched (ctx, or its parent under a request bound); nil if none
	// onDone is c.interrupt as a func value, made once at open: a method
	// value made per request would be an allocation per call. Immutable.
	onDone func()
	// bound is the connection's own timer for the request bound of a
	// request whose context is bound.RequestBound's: it interrupts the
	// request at the bound's end, as that context's timer would, so the
	// context needs none. Made by the first such request and reset by each
	// (no allocation); it calls onDone, which touches only nc. Holder.
	bound *time.Timer
	// bounded: bound is armed for the holder's request; endRequest stops
	// it. Holder.
	bounded bool
	timed   bool // holder: a deadline is set on nc that endRequest must clear
	// lingers: a header bound's read deadline may still be set on nc after
	// its header came (plain TCP only): roundTrip leaves it rather than
	// clear it, which saves a deadline change (a runtime timer operation)
	// per request, and a read that it ends is read again without it
	// (readerOf). The next bound replaces it. Holder.
	lingers bool
	reuse   bool  // holder: the request allows reuse (not req.Close)
	read    int64 // holder: bytes read on nc so far
}

// stateHook is the pool's hook, boxed for the atomic pointer.
type stateHook struct{ f func(*http.ClientConn) }

// errH1HeaderTimeout is the h1 engine's header timeout: poolTransport
// turns it into a *fault.HeaderTimeoutError.
var errH1HeaderTimeout = errors.New("response header timeout")

// errH1Stale is Reserve's error for an idle connection that the server
// closed or wrote to: the pool drops it and looks again.
var errH1Stale = errors.New("h1: idle connection closed or written to by the server")

var errH1NotReserved = errors.New("h1: connection not reserved")

// readerOf reads the connection for its bufio.Reader, counting the bytes,
// and gives the holder's context's cause for a read that its cancellation
// or deadline ended, as net/http does.
type readerOf struct{ c *h1Conn }

func (r readerOf) Read(p []byte) (int, error) {
	c := r.c
	n, err := c.nc.Read(p)
	if n == 0 && err != nil && c.lingers && errors.Is(err, os.ErrDeadlineExceeded) && (c.ctx == nil || c.ctx.Err() == nil) {
		// The deadline was a header bound's whose header came: it bounds
		// nothing now.
		c.lingers = false
		c.nc.SetReadDeadline(time.Time{})
		n, err = c.nc.Read(p)
	}
	c.read += int64(n)
	if err != nil && c.ctx != nil {
		err = c.ctxErr(err)
	}
	return n, err
}

// ctxErr returns the holder's context's cause in place of err when the
// context ended the read or write: it was cancelled, or its deadline (set
// on the connection, or kept by the connection's bound timer, whose
// interrupt closes it) passed, which the connection may see a moment
// before the context does.
func (c *h1Conn) ctxErr(err error) error {
	ctx := c.ctx
	if ctx.Err() == nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			<-ctx.Done()
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// Available reports whether a request may reserve the connection.
func (c *h1Conn) Available() int {
	if c.state.Load() == h1Free && c.err.Load() == nil {
		return 1
	}
	return 0
}

// InFlight reports whether a request or its response body is in flight.
func (c *h1Conn) InFlight() int {
	if c.state.Load() == h1Busy {
		return 1
	}
	return 0
}

// Reserve takes the connection for one request. A connection that carried
// a request before is looked at first: if the server has closed it or
// written to it since, it closes and Reserve fails.
func (c *h1Conn) Reserve() error {
	if err := c.Err(); err != nil {
		return err
	}
	if !c.state.CompareAndSwap(h1Free, h1Reserved) {
		return errors.New("h1: connection busy")
	}
	if c.used && c.stale() {
		c.fail(errH1Stale)
		return errH1Stale
	}
	return nil
}

// stale reports whether the server closed the idle connection or sent
// something nobody asked for. Over http, a MSG_PEEK at the socket tells.
//
// Over TLS, what is unread may be in three places: decrypted in
// crypto/tls (bytes that came in one record with the last response's
// end), in whole or part records crypto/tls has read from the socket and
// not opened, or in the socket. And a record may be a session ticket or
// an empty record, which crypto/tls consumes and which are not stray. So
// the connection is read through crypto/tls with tlsRaw looking: what
// crypto/tls holds is opened without touching the socket, a read of the
// socket happens only when a peek shows it holds bytes (or an end), and
// one that would wait fails at once with a timeout, which crypto/tls
// survives. Bytes or an end are stale. A timeout alone means nothing is
// there, unless crypto/tls has read part of a record: then the server is
// sending something, which the next request would read first.
//
// A read deadline already past would not do: the runtime's poller fails
// a read with an expired deadline without reading the socket, so records
// in the socket would go unseen.
func (c *h1Conn) stale() bool {
	switch {
	case c.oneShot:
		return true // never reused; nothing to look at
	case c.raw == nil:
		return c.pending()
	}
	c.raw.look = true
	_, err := c.br.Peek(1)
	c.raw.look = false
	return !errors.Is(err, os.ErrDeadlineExceeded) || c.raw.midRecord()
}

// tlsRaw is what an h1 connection's crypto/tls reads and writes: the
// connection as dialled. It follows the stream of TLS records that
// crypto/tls reads (RFC 8446, section 5.1: a 5-byte header, the last two
// bytes the length of what follows), and, while stale looks, reads only
// what the socket holds already.
//
// Ownership: the fields marked "holder" are the h1Conn's holder's (see
// h1Conn), and, before that, open's: crypto/tls reads on the goroutine of
// the handshake or of the holder's read.
type tlsRaw struct {
	net.Conn         // as dialled; immutable
	pk       *peeker // the h1Conn's, on the socket under Conn; immutable
	look     bool    // holder: stale is looking
	hdr      [5]byte // holder: the header of the record being read, as far as read (hn)
	hn       int     // holder: bytes of hdr read; 0 between headers
	left     int     // holder: bytes of the current record not read yet
}

func (r *tlsRaw) Read(p []byte) (int, error) {
	if r.look && !r.pk.pending() {
		return 0, os.ErrDeadlineExceeded // a net.Error crypto/tls treats as temporary
	}
	n, err := r.Conn.Read(p)
	r.follow(p[:n])
	return n, err
}

// follow moves through the record framing over b, the next bytes read.
func (r *tlsRaw) follow(b []byte) {
	for len(b) > 0 {
		if r.left > 0 {
			k := min(r.left, len(b))
			r.left -= k
			b = b[k:]
			continue
		}
		k := copy(r.hdr[r.hn:], b)
		r.hn += k
		b = b[k:]
		if r.hn == len(r.hdr) {
			r.left = int(r.hdr[3])<<8 | int(r.hdr[4])
			r.hn = 0
		}
	}
}

// midRecord reports whether crypto/tls has read part of a record.
func (r *tlsRaw) midRecord() bool { return r.hn > 0 || r.left > 0 }

// Release gives back a reservation that was not used.
func (c *h1Conn) Release() {
	if c.state.CompareAndSwap(h1Reserved, h1Free) {
		c.runHook()
	}
}

// Close closes the connection.
func (c *h1Conn) Close() error {
	c.fail(net.ErrClosed)
	return nil
}

// Err is the reason the connection closed, or nil while it is open.
func (c *h1Conn) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// SetStateHook sets the hook run, with a nil argument, after each change
// of the connection's state: a request's end, a release, a close.
func (c *h1Conn) SetStateHook(f func(*http.ClientConn)) {
	c.hook.Store(&stateHook{f})
	c.runHook()
}

func (c *h1Conn) runHook() {
	if h := c.hook.Load(); h != nil && h.f != nil {
		h.f(nil)
	}
}

// fail closes the connection for good with err (the first reason stays),
// and tells the pool.
func (c *h1Conn) fail(err error) {
	if c.err.CompareAndSwap(nil, &err) {
		c.nc.Close()
	}
	c.state.Store(h1Free) // nothing is in flight on a closed connection
	c.runHook()
}

// RoundTrip sends req, which holds a reservation, and reads its response
// head; the body is read by the caller, on its goroutine.
func (c *h1Conn) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.roundTrip(req, 0)
}

// roundTrip sends req and reads its response head, within d if d > 0
// (errH1HeaderTimeout past it; the connection closes).
func (c *h1Conn) roundTrip(req *http.Request, d time.Duration) (*http.Response, error) {
	if !c.state.CompareAndSwap(h1Reserved, h1Busy) {
		gqlhttp.CloseBody(req)
		return nil, errH1NotReserved
	}
	if err := c.check(req); err != nil {
		// Nothing was written: the connection serves the next request.
		gqlhttp.CloseBody(req)
		c.state.Store(h1Free)
		c.runHook()
		return nil, err
	}
	reused := c.used
	c.used = true
	c.reuse = !req.Close && !c.oneShot
	ctx := req.Context()
	// Under a request bound made by the request path (bound.RequestBound)
	// the connection's timer keeps the bound and the caller's context is
	// watched for the rest: the request's own context is never asked for
	// its Done, which would make it a context and a timer of its own.
	watch, end, bounded := ctx, time.Time{}, false
	if parent, e, ok := bound.RequestBound(ctx); ok {
		watch, end, bounded = parent, e, true
	}
	watched := watch.Done() != nil
	if watched || bounded {
		c.ctx = ctx
		if err := ctx.Err(); err != nil {
			gqlhttp.CloseBody(req)
			c.state.Store(h1Free)
			c.ctx = nil
			c.runHook()
			return nil, context.Cause(ctx)
		}
		if watched {
			c.stop = context.AfterFunc(watch, c.onDone)
		}
		if bounded {
			c.armBound(end)
		}
	}
	// The connection's deadline is the context's, except under a request
	// bound: its timer ends the request first, and the caller's later
	// deadline is the caller's context's to keep (watched).
	deadline, hasDeadline := time.Time{}, false
	if !bounded {
		deadline, hasDeadline = ctx.Deadline()
	}
	headerBy := c.setDeadlines(deadline, hasDeadline, d)
	readBefore, writtenBefore := c.read, c.written.Load()
	if err := c.write(req); err != nil {
		return nil, c.failed(err, reused, writtenBefore, readBefore, headerBy)
	}
	borrow := backend.BorrowOf(ctx)
	var lent *lentResponse
	var into *h1.Lent
	if borrow != nil {
		lent = lentResponses.Get().(*lentResponse)
		into = &lent.Lent
	}
	resp, err := h1.ReadResponseIn(c.br, req, c.maxHeader, c, into)
	if err != nil {
		if lent != nil {
			lent.Return() // no response was made of it
		}
		return nil, c.failed(err, reused, writtenBefore, readBefore, headerBy)
	}
	if borrow != nil {
		borrow.Keep(lent)
	}
	if !headerBy.IsZero() {
		c.endHeaderBound(deadline, hasDeadline)
	}
	resp.TLS = c.tls
	if resp.Body == http.NoBody {
		c.BodyDone(!resp.Close && c.br.Buffered() == 0)
	}
	return resp, nil
}

// setDeadlines sets the connection's deadlines for a request: the
// context's deadline (when hasDeadline) for the whole exchange, and the
// header bound d (when d > 0) for the response head. headerBy is the
// bound's end, zero when there is none or the context's deadline comes
// first.
func (c *h1Conn) setDeadlines(deadline time.Time, hasDeadline bool, d time.Duration) (headerBy time.Time) {
	if hasDeadline {
		c.nc.SetDeadline(deadline)
		c.timed, c.lingers = true, false
	}
	if d > 0 {
		headerBy = time.Now().Add(d)
		if !hasDeadline || headerBy.Before(deadline) {
			c.nc.SetReadDeadline(headerBy)
			c.timed, c.lingers = true, false
		} else {
			headerBy = time.Time{} // the context's deadline comes first
		}
	}
	return headerBy
}

// armBound arms the connection's timer to interrupt the holder's request
// at end, its request bound's.
func (c *h1Conn) armBound(end time.Time) {
	if c.bound == nil {
		c.bound = time.AfterFunc(time.Until(end), c.onDone)
	} else {
		c.bound.Reset(time.Until(end))
	}
	c.bounded = true
}

// endHeaderBound ends the header bound once the response head is in: the
// body has the context's deadline, if any.
func (c *h1Conn) endHeaderBound(deadline time.Time, hasDeadline bool) {
	switch {
	case hasDeadline:
		c.nc.SetReadDeadline(deadline)
	case c.tls == nil:
		// Over plain TCP the bound's deadline lingers (see lingers):
		// no read but readerOf's sees it, as the stale check peeks
		// at the socket itself. Over TLS, stale reads through
		// crypto/tls, where a past deadline would hide what the
		// socket holds, so it is cleared.
		c.lingers, c.timed = true, false
	default:
		c.nc.SetReadDeadline(time.Time{})
	}
}

// check refuses what net/http refuses before writing, and what the h1
// engine does not do: a protocol upgrade.
func (c *h1Conn) check(req *http.Request) error {
	if err := h1.Check(req); err != nil {
		return err
	}
	if len(req.Header["Upgrade"]) > 0 {
		return fmt.Errorf("h1: the request asks for a protocol upgrade (Upgrade: %s), which the h1 engine does not do: set engine: nethttp for this source schema", req.Header.Get("Upgrade"))
	}
	return nil
}

// write writes req: the head and a body of known length up to oneWriteMax
// in one write, a larger body after it, a body of unknown length chunked.
// It closes the request body, as a RoundTripper must.
func (c *h1Conn) write(req *http.Request) error {
	defer gqlhttp.CloseBody(req)
	f, err := h1.FramingOf(req)
	if err != nil {
		return err
	}
	f.Close = c.oneShot // the server closes too, usually first: TIME_WAIT then stays on its side
	buf := h1.AppendRequest(c.wbuf[:0], req, f)
	rest := int64(0)
	if f.ContentLength > 0 {
		n := f.ContentLength
		if n > oneWriteMax {
			n = 0
			rest = f.ContentLength
		}
		head := len(buf)
		buf = append(buf, make([]byte, n)...)[:head+int(n)]
		if m, err := io.ReadFull(req.Body, buf[head:]); err != nil {
			return fmt.Errorf("h1: Request.ContentLength=%d with Body length %d: %w", f.ContentLength, m, err)
		}
	}
	if cap(buf) <= 2*oneWriteMax {
		c.wbuf = buf[:0]
	}
	if _, err := c.countWrite(buf); err != nil {
		return err
	}
	switch {
	case rest > 0:
		m, err := io.Copy(writerOf{c}, io.LimitReader(req.Body, rest))
		if err == nil && m != rest {
			err = fmt.Errorf("h1: Request.ContentLength=%d with Body length %d", f.ContentLength, m)
		}
		return err
	case f.Chunked:
		return h1.WriteChunked(writerOf{c}, req.Body, nil)
	}
	return nil
}

func (c *h1Conn) countWrite(p []byte) (int, error) {
	n, err := c.nc.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// writerOf writes to the connection, counting the bytes.
type writerOf struct{ c *h1Conn }

func (w writerOf) Write(p []byte) (int, error) { return w.c.countWrite(p) }

// interrupt is the context's AfterFunc: it ends the read or write in
// progress at once, and closes the connection, so that a caller who left
// between two reads of a stream (a subscription's client gone between two
// events) holds no connection, as net/http closes it. The holder's next
// read or write sees the context's cause and fails the connection for the
// pool; a cancelled request's connection is never reused anyway
// (endRequest).
func (c *h1Conn) interrupt() {
	c.nc.SetDeadline(time.Unix(1, 0))
	c.nc.Close()
}

// failed closes the connection after a failed request and returns the
// error the caller sees: the context's cause when the context ended it,
// errH1HeaderTimeout when the header bound did, else err, as a
// *backend.AttemptError when the request may go again: no byte of it was
// written, or the connection was reused and no byte of an answer came
// (backend.Resend decides).
func (c *h1Conn) failed(err error, reused bool, writtenBefore, readBefore int64, headerBy time.Time) error {
	if c.ctx != nil {
		err = c.ctxErr(err)
	}
	ctx := c.ctx
	c.endRequest()
	c.fail(err)
	switch {
	case ctx != nil && ctx.Err() != nil:
		return err
	case !headerBy.IsZero() && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(headerBy):
		return errH1HeaderTimeout
	}
	unsent := c.written.Load() == writtenBefore
	if unsent || (reused && c.read == readBefore) {
		return &backend.AttemptError{Err: err, Reused: reused, Unsent: unsent}
	}
	return err
}

// endRequest ends the holder's hold on the context: the AfterFunc and the
// bound's timer stop and the deadlines go. It reports false when either
// had run (or is running): it may set its deadline after this, so the
// connection must not carry another request.
func (c *h1Conn) endRequest() (clean bool) {
	clean = true
	if c.stop != nil {
		clean = c.stop()
		c.stop = nil
	}
	if c.bounded {
		if !c.bound.Stop() {
			clean = false
		}
		c.bounded = false
	}
	c.ctx = nil
	if c.timed {
		c.nc.SetDeadline(time.Time{})
		c.timed = false
	}
	return clean
}

// BodyDone is the response body's end (h1.Owner): the connection serves
// the next request if the body and the request allow it, else it closes.
//
// A body that ends unclean may end from a goroutine closing it while
// another is blocked reading it (see h1.Body): then only the AfterFunc's
// stop and the bound timer's, which are safe from any goroutine, and the
// close run here, and no holder field is written.
func (c *h1Conn) BodyDone(reuse bool) {
	if !reuse || !c.reuse {
		if c.stop != nil {
			c.stop()
		}
		if c.bounded {
			c.bound.Stop()
		}
		c.fail(errH1NotReusable)
		return
	}
	if !c.endRequest() {
		c.fail(errH1NotReusable)
		return
	}
	c.state.Store(h1Free)
	c.runHook()
}

var errH1NotReusable = errors.New("h1: connection not reusable after its response")

// lentResponse is the memory of an h1 response read for a call that
// borrows it (backend.Borrow): taken from lentResponses by roundTrip, and
// put back by the request path once the caller's callback has returned
// and the body is closed (Return). Owned by one response at a time.
type lentResponse struct{ h1.Lent }

// lentResponses pools the h1 engine's lent responses, for every pool.
var lentResponses = sync.Pool{New: func() any { return new(lentResponse) }}

// Return empties l and puts it back in the pool.
func (l *lentResponse) Return() {
	l.Reset()
	lentResponses.Put(l)
}
