package sockets

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errDrained is returned by pool.get once the pool is draining: its source
// schema was reloaded with other settings or removed, or the invoker closed.
// The invoker retries such a request on the schema's current pool.
var errDrained = errors.New("connection pool drained")

// pool is the connection pool of one source schema: a set of
// http.ClientConns to one address, which it dials, reuses, and closes.
//
// net/http's Transport cannot close a connection at a given age
// (golang/go#23427), so the sockets path owns its pool through
// Transport.NewClientConn (Go 1.26): the Transport still dials, speaks TLS,
// HTTP/1.1 and HTTP/2, and the pool decides which connection a request uses
// and when a connection goes. See docs/design.md, "Connection lifetime".
//
// Lock order: pool.mu is never held while calling a ClientConn method that
// may run its state hook (Reserve, Release, Close, RoundTrip), because the
// hook takes pool.mu.
type pool struct {
	tr       *http.Transport
	scheme   string
	addr     string        // host:port
	lifetime time.Duration // 0: connections live as long as they are usable
	jitter   time.Duration // up to this much is taken off each lifetime
	idle     time.Duration // 0: idle connections are kept
	max      int           // 0: no limit on connections
	maxIdle  int           // 0: no limit on idle connections
	strictH2 bool          // wait for a stream rather than open a second HTTP/2 connection
	onlyH2   bool          // the transport speaks HTTP/2 only (h2c, or 2 exact)
	sawH2    atomic.Bool   // the last TLS handshake negotiated h2
	dialTO   time.Duration // 0: no bound on dialing

	mu      sync.Mutex
	conns   []*conn
	dialing int
	waiting int
	wake    chan struct{} // closed when a connection or slot frees up
	drained bool
	empty   chan struct{} // closed once drained and every connection is closed
}

// conn is one pooled connection.
type conn struct {
	p       *pool
	cc      *http.ClientConn
	expires time.Time   // zero: never
	timer   *time.Timer // closes the connection when idle too long or expired

	// headerTimer closes an HTTP/1 connection whose response headers are
	// late; schema.send arms it per request.
	headerTimer *time.Timer
	reused      atomic.Bool  // set once a second request was reserved on it
	h2          atomic.Bool  // HTTP/2: seen multiplexing, or answering with HTTP/2
	pending     atomic.Int32 // HTTP/2 requests picked but not yet returned from RoundTrip
}

func (c *conn) expired(now time.Time) bool {
	return !c.expires.IsZero() && !now.Before(c.expires)
}

// get returns a connection with a reserved request slot: an open, unexpired
// connection with room, a new one, or, at the connection limit, the next one
// that frees up. It returns errDrained once the pool drains.
//
// An HTTP/1 connection is reserved (ClientConn.Reserve), so that it carries
// one request at a time. An HTTP/2 connection is not: its request is
// counted as pending and RoundTrip waits for a stream itself. Reserving
// streams on a new HTTP/2 connection before the server's SETTINGS have
// lowered its limit can deadlock net/http's client (a reservation holds the
// stream that a request holding the connection's header lock waits for).
// pending reports which one happened; the caller passes it to done.
func (p *pool) get(ctx context.Context) (c *conn, pending bool, err error) {
	for {
		p.mu.Lock()
		if p.drained {
			p.mu.Unlock()
			return nil, false, errDrained
		}
		pick, stale := p.scan(time.Now())
		// With strictH2, one HTTP/2 connection takes every request: while one
		// is open or being dialled, requests wait for a stream instead.
		if pick == nil && (p.max == 0 || len(p.conns)+p.dialing < p.max) && !(p.strictH2 && (p.hasH2() || p.dialing > 0)) {
			p.dialing++
			p.mu.Unlock()
			closeAll(stale)
			c, err := p.dial(ctx)
			return c, false, err
		}
		if pick == nil {
			if p.wake == nil {
				p.wake = make(chan struct{})
			}
			wake := p.wake
			p.waiting++
			p.mu.Unlock()
			closeAll(stale)
			select {
			case <-wake:
				p.mu.Lock()
				p.waiting--
				p.mu.Unlock()
				continue
			case <-ctx.Done():
				p.mu.Lock()
				p.waiting--
				p.mu.Unlock()
				return nil, false, context.Cause(ctx)
			}
		}
		if pick.h2.Load() {
			pick.pending.Add(1) // under p.mu: the idle timer and drain see it
			p.mu.Unlock()
			closeAll(stale)
			pick.reused.Store(true)
			pick.timer.Stop()
			return pick, true, nil
		}
		// Counted as pending while p.mu is held, so that between here and
		// Reserve neither the idle timer, a drain nor an expiry takes the
		// connection for idle and closes it under this request.
		pick.pending.Add(1)
		p.mu.Unlock()
		closeAll(stale)
		err := pick.cc.Reserve()
		pick.pending.Add(-1) // the reservation, if any, now counts as in flight
		if err != nil {
			continue // another request took the last slot, or it closed
		}
		pick.reused.Store(true)
		pick.timer.Stop()
		return pick, false, nil
	}
}

// done ends a pending request's claim on c (see get), once RoundTrip has
// returned; the connection's state is then looked at again, as its hook
// would, since it may have turned idle.
func (p *pool) done(c *conn, pending bool) {
	if pending && c.pending.Add(-1) == 0 {
		c.stateChanged(c.cc)
	}
}

// idle reports whether no request is on c or about to be.
func (c *conn) idle() bool {
	return c.cc.InFlight() == 0 && c.pending.Load() == 0
}

// scan finds a connection with room and takes expired idle connections out
// of the pool for the caller to close. p.mu is held.
func (p *pool) scan(now time.Time) (pick *conn, stale []*conn) {
	for i := 0; i < len(p.conns); i++ {
		c := p.conns[i]
		switch {
		case c.cc.Err() != nil:
			// Its state hook removes it.
		case c.expired(now):
			if c.idle() {
				stale = append(stale, c)
				p.conns = slices.Delete(p.conns, i, i+1)
				i--
			}
		case pick == nil && c.cc.Available() > int(c.pending.Load()):
			pick = c
		}
	}
	if len(stale) > 0 {
		p.signal()
	}
	return pick, stale
}

// hasH2 reports whether a usable HTTP/2 connection is open. p.mu is held.
func (p *pool) hasH2() bool {
	for _, c := range p.conns {
		if c.h2.Load() && c.cc.Err() == nil {
			return true
		}
	}
	return false
}

// dial opens a new connection with one reserved slot. The caller has
// counted it in p.dialing.
func (p *pool) dial(ctx context.Context) (*conn, error) {
	dctx := ctx
	if p.dialTO > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, p.dialTO)
		defer cancel()
	}
	cc, err := p.tr.NewClientConn(dctx, p.scheme, p.addr)
	h2 := false
	if err == nil {
		h2 = cc.Available() > 1 || (p.scheme == "https" && p.sawH2.Load())
		err = cc.Reserve()
		if err != nil {
			cc.Close()
		}
	}
	p.mu.Lock()
	p.dialing--
	if err != nil {
		p.signal()
		p.mu.Unlock()
		return nil, err
	}
	if p.drained {
		p.signal()
		p.mu.Unlock()
		cc.Close()
		return nil, errDrained
	}
	c := &conn{p: p, cc: cc}
	c.h2.Store(h2 || p.onlyH2)
	if p.lifetime > 0 {
		life := p.lifetime
		if p.jitter > 0 {
			life -= rand.N(p.jitter)
		}
		c.expires = time.Now().Add(life)
	}
	c.timer = time.AfterFunc(time.Hour, c.idleExpired)
	c.timer.Stop()
	c.headerTimer = time.AfterFunc(time.Hour, func() { cc.Close() })
	c.headerTimer.Stop()
	p.conns = append(p.conns, c)
	// Requests that waited while this dial ran may fit on it (HTTP/2) or
	// may now dial their own: wake them to look again.
	p.signal()
	p.mu.Unlock()
	cc.SetStateHook(c.stateChanged)
	return c, nil
}

// stateChanged is the ClientConn's state hook: it runs when a request ends,
// when room frees up, and when the connection closes.
func (c *conn) stateChanged(cc *http.ClientConn) {
	p := c.p
	p.mu.Lock()
	i := slices.Index(p.conns, c)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	if cc.Err() != nil {
		p.removeAt(i)
		p.mu.Unlock()
		c.timer.Stop()
		return
	}
	closeNow := false
	if c.idle() {
		now := time.Now()
		if p.drained || c.expired(now) || (p.maxIdle > 0 && p.idleCount() > p.maxIdle) {
			p.removeAt(i)
			closeNow = true
		} else if d := c.idleBound(now); d > 0 {
			c.timer.Reset(d)
		}
	}
	if cc.Available() > 0 {
		p.signal()
	}
	p.mu.Unlock()
	if closeNow {
		c.timer.Stop()
		cc.Close()
	}
}

// idleCount counts the connections with no request on them. p.mu is held.
func (p *pool) idleCount() int {
	n := 0
	for _, c := range p.conns {
		if c.idle() && c.cc.Err() == nil {
			n++
		}
	}
	return n
}

// idleBound is how long an idle connection may wait for its next request:
// the idle timeout, or less if its lifetime ends first. Zero: no bound.
func (c *conn) idleBound(now time.Time) time.Duration {
	d := c.p.idle
	if !c.expires.IsZero() {
		if left := c.expires.Sub(now); d == 0 || left < d {
			d = max(left, time.Millisecond)
		}
	}
	return d
}

// idleExpired closes the connection if it is still idle.
func (c *conn) idleExpired() {
	p := c.p
	p.mu.Lock()
	i := slices.Index(p.conns, c)
	if i < 0 || !c.idle() {
		p.mu.Unlock()
		return
	}
	p.removeAt(i)
	p.mu.Unlock()
	c.cc.Close()
}

// removeAt takes p.conns[i] out of the pool. p.mu is held.
func (p *pool) removeAt(i int) {
	p.conns = slices.Delete(p.conns, i, i+1)
	p.signal()
}

// signal wakes the requests waiting for a connection. p.mu is held.
func (p *pool) signal() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
	if p.drained && p.empty != nil && len(p.conns) == 0 && p.dialing == 0 {
		close(p.empty)
		p.empty = nil
	}
}

// drain stops new requests, closes idle connections at once and every other
// connection when its last request ends. The returned channel is closed once
// every connection is closed.
func (p *pool) drain() <-chan struct{} {
	p.mu.Lock()
	done := make(chan struct{})
	if p.drained {
		// Already draining: report when the pool is empty.
		if len(p.conns) == 0 && p.dialing == 0 {
			close(done)
		} else if p.empty != nil {
			done = p.empty
		}
		p.mu.Unlock()
		return done
	}
	p.drained = true
	p.empty = done
	var idle []*conn
	for i := 0; i < len(p.conns); i++ {
		if c := p.conns[i]; c.idle() || c.cc.Err() != nil {
			idle = append(idle, c)
			p.conns = slices.Delete(p.conns, i, i+1)
			i--
		}
	}
	p.signal()
	p.mu.Unlock()
	closeAll(idle)
	return done
}

// stats reports open connections and how many of them are idle.
func (p *pool) stats() (open, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if c.idle() {
			idle++
		}
	}
	return len(p.conns), idle
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		c.timer.Stop()
		c.cc.Close()
	}
}
