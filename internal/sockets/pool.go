package sockets

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/backend"
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
// A request holds its connection by a claim (conn.claims), taken under
// pool.mu by get and ended by done once RoundTrip has returned; the
// ClientConn itself counts the request from its reservation or stream until
// its response body is read (InFlight). The pool closes a connection only
// while conn.idle holds (no claim and nothing in flight), and only after
// taking it out of pool.conns under the same hold of pool.mu: a connection
// that get can still hand out is never closed, and one that was handed out
// is never closed under its request. The one exception is conn.headerTimer,
// which belongs to the request that arms it.
//
// Lock order: pool.mu, then the ClientConn's own locks (Available, InFlight
// and Err take them and never call back into the pool). pool.mu is never
// held while calling a ClientConn method that may run the state hook
// synchronously (Reserve, Release, Close, RoundTrip, SetStateHook), because
// the hook takes pool.mu. Timer methods may be called with pool.mu held: a
// timer's function runs in its own goroutine and Stop does not wait for it.
type pool struct {
	// Configuration: set by newPool (or a test) before the pool's first
	// get and never written after, so read without a lock.
	tr       *http.Transport // the nethttp engine's; nil with h1
	h1       *h1Dialer       // the h1 engine's; nil with nethttp
	upgrades upgrader        // h1: the Transport of protocol upgrades, built on first use (upgrade.go); safe for concurrent use
	scheme   string
	addr     string        // host:port
	lifetime time.Duration // 0: connections live as long as they are usable
	jitter   time.Duration // up to this much is taken off each lifetime
	idle     time.Duration // 0: idle connections are kept
	max      int           // 0: no limit on connections
	maxIdle  int           // 0: no limit on idle connections
	strictH2 bool          // wait for a stream rather than open a second HTTP/2 connection
	onlyH2   bool          // the transport speaks HTTP/2 only (h2c, or 2 exact)
	dialTO   time.Duration // 0: no bound on dialing
	// maxPending bounds the waiters (nwait): a newcomer that would wait
	// while maxPending wait already fails at once with overloaded. 0: no
	// bound.
	maxPending int
	overloaded error // get's refusal at maxPending, made once: wraps fault.ErrOverloaded
	// schema and log name the schema in noSocket's line (nethttp; nil log:
	// a pool built by a test). Set by newPool.
	schema string
	log    *slog.Logger

	// noSocketOnce makes noSocket's line one per pool; guarded by itself.
	noSocketOnce sync.Once

	// sawH2 is written by the Transport's TLS VerifyConnection callback
	// (set up by newPool) during a dial, and read by dial. Atomic.
	sawH2 atomic.Bool // the last TLS handshake negotiated h2

	mu      sync.Mutex // guards the fields below, and conn.claims and conn.settled
	conns   []*conn    // the open connections, the only ones get hands out, in no order: added by add, taken out by remove (conn.at is each one's index)
	dialing int        // dials under way: counted by look, uncounted by dial as it ends
	drained bool       // set once by drain, never cleared: get fails and idle connections close

	// The requests waiting for a connection, oldest first: a doubly
	// linked list (head, tail; waiter.prev, waiter.next) so that joining,
	// leaving and being served take no search. Only the head is ever woken
	// (signal): headWoken is set while it has been woken and has not
	// looked yet, and further signals until it looks are folded into that
	// one wake, since it looks at the pool as it is then. A woken head that
	// finds nothing stays at the head; one that takes what it was woken
	// for leaves the queue and wakes the next (passOn), as net/http's
	// wantConnQueue hands a freed connection to the oldest waiter. While
	// anyone waits, a newcomer queues at the tail instead of looking, so
	// it cannot take what the head was woken for.
	head, tail *waiter
	headWoken  bool
	nwait      int // the waiters in the list

	// The idle connections, most recently used first, as net/http keeps
	// its idle list: a doubly linked list through conn.idlePrev and
	// conn.idleNext, so that get takes the warmest connection, and a
	// connection joins or leaves it, without a search. A connection is on
	// it from the update that saw it idle until get claims it or it leaves
	// the pool. nidle counts them, for maxIdle.
	idleTop, idleBottom *conn
	nidle               int

	// dialStop is cancelled by drain: it ends the dials under way, which
	// run for the pool, not for the request that started them (dialFor).
	// Set by poolRules, never written after; nil in a pool built by a
	// test, whose dials end by themselves.
	dialStop       context.Context
	cancelDialStop context.CancelFunc

	// multiplexed is set once a connection of the pool has been found to
	// speak HTTP/2 (conn.setH2; never cleared): get then also looks for
	// room on busy connections, which HTTP/1 ones never have. Atomic.
	multiplexed atomic.Bool

	// addressing: the addresses the pool's host resolves to, their loads
	// and ejections (addrs.go).
	addressing

	// testHookWoken, when set by a test, runs in get after a waiter's wake
	// arrives and before it takes p.mu to look. Set before the pool's first
	// get; nil in production.
	testHookWoken func()

	// onQueue, set by tests only (backend.Schema.OnQueue), is called with
	// p.mu held, with the request's context, on each event of the wait
	// queue (backend.QueueEvent; a request is requeued when the
	// connection it was handed failed Reserve). It must not call into the
	// pool. Set before the pool's first get; nil in production.
	onQueue func(ctx context.Context, event backend.QueueEvent)
}

// waiter is one request waiting in the pool's queue.
type waiter struct {
	wake       chan struct{} // buffered 1: signal sends once per wake, only to the head
	prev, next *waiter       // the queue's links; guarded by pool.mu
	queued     bool          // in the queue; guarded by pool.mu
	// handed is a new connection that a dial whose requester gave up
	// handed to w as the queue's head (dialed), with its claim and
	// reservation, and took w out of the queue; get returns it, or leave
	// gives it back. Guarded by pool.mu.
	handed *conn
	ctx    context.Context // the request's, for onQueue; immutable
}

// pendingDial is one dial under way for the pool (dialFor): the request
// that started it waits for its end, and may give up first.
type pendingDial struct {
	done chan struct{} // closed by dialed once c and err are set, unless abandoned
	// c and err are the dial's result, for its requester. Written once by
	// dialed, with pool.mu held, before done closes; read after done.
	c   *conn
	err error
	// abandoned: the requester gave up first, so the dial's connection goes
	// to the queue's head or onto the idle list (dialed). finished: the
	// dial has ended. Both guarded by pool.mu.
	abandoned, finished bool
	// to is the address dialled, nil to dial the host by name (or to
	// choose one once the first lookup ends). Written by dial before it
	// opens the connection.
	to *address
}

// clientConn is one connection as the pool drives it: an
// *http.ClientConn (engine nethttp) or an *h1Conn (engine h1). Its methods
// are safe for concurrent use, and never call back into the pool but
// through the state hook.
type clientConn interface {
	RoundTrip(*http.Request) (*http.Response, error)
	Available() int
	InFlight() int
	Reserve() error
	Release()
	Close() error
	Err() error
	SetStateHook(func(*http.ClientConn))
}

var (
	_ clientConn = (*http.ClientConn)(nil)
	_ clientConn = (*h1Conn)(nil)
)

// conn is one pooled connection.
type conn struct {
	p  *pool      // immutable
	cc clientConn // immutable after dial
	a  *address   // the address it was dialled to; nil when dialled by name. Immutable after dial
	// wc is the connection under the ClientConn, as dialled (nil when a
	// test or a Dial hook gave no watchedConn): whether net/http's reader is
	// parked, and the bytes written. Immutable after dial.
	wc *watchedConn
	// born and expires are immutable after dial.
	born    time.Time
	expires time.Time // zero: never
	// timer closes the connection when it has been idle too long or its
	// lifetime ends (idleExpired). It is armed lazily, so that a request
	// that takes an idle connection and gives it back costs no timer
	// operation: update arms it only when c goes idle with no firing
	// pending (timerDue zero), and get leaves it armed. A firing looks at
	// c as it is then: busy, it leaves the timer unarmed (the next update
	// that finds c idle arms it); idle but not for long enough (it was used
	// since the timer was armed), it re-arms it for what is left
	// (idleDue). A connection's idle deadline never moves earlier (idleDue
	// grows with idleSince), so a pending firing is never late. The
	// pointer is immutable after dial; Reset is called with p.mu held, and
	// the connection's removal stops it.
	timer *time.Timer
	// idleSince is when c last went on the idle list, and timerDue when
	// the pending firing of timer is due, zero when none is pending. Both
	// guarded by p.mu.
	idleSince, timerDue time.Time
	// watch runs update again while the connection is busy or not yet
	// settled (watchFired), so that a change its state hook missed is seen
	// all the same. The pointer is immutable after dial; update resets it
	// with p.mu held, and the connection's removal stops it.
	watch      *time.Timer
	watchDelay time.Duration // guarded by p.mu: the watch's current backoff

	// at is c's index in p.conns, -1 once it has left the pool (or before
	// add). Guarded by p.mu.
	at int
	// idlePrev and idleNext link c in the pool's idle list (see
	// pool.idleTop) while onIdle holds. Guarded by p.mu.
	idlePrev, idleNext *conn
	onIdle             bool
	// gone is made by remove as c leaves the pool, and closed by close
	// once c.cc is closed: a state hook that finds c already out of the
	// pool, with its close still to come in another goroutine (the watch's,
	// an idle timer's, or a request's that found it stale), waits for it
	// (stateChanged). The pointer is guarded by p.mu; close, run by the
	// goroutine that removed c, reads it without the lock.
	gone chan struct{}

	// written counts the bytes written on the connection (nil when it
	// cannot be counted: a Dial hook's connection under nethttp), so that a
	// request that failed before any byte left can be sent again. The
	// pointer is immutable after dial.
	written *atomic.Int64

	// headerTimer closes an HTTP/1 connection of the nethttp engine whose
	// response headers are late; poolTransport arms it per request (the h1
	// engine bounds the header with a read deadline instead). The pointer
	// is immutable after dial; Reset and Stop are called only by the
	// request holding the connection (its HTTP/1 reservation), so one
	// request's timer never fires on another's.
	headerTimer *time.Timer
	// reused is set by get each time it hands the connection to a request
	// other than the one that dialled it, and by dial when it hands it to a
	// waiter because its requester gave up; read by schema after the request.
	reused atomic.Bool
	// h2 is set by dial (the protocol is known from ALPN, h2c, or the
	// number of streams) and by poolTransport.roundTrip when a response came
	// over HTTP/2; it is never cleared. Read by get and hasH2 with p.mu held.
	h2 atomic.Bool
	// oneShot: the connection is HTTP/1 on nethttp and no socket was
	// found under it (watchedConn.hidden), so the pool's guard cannot
	// tell a stray byte from none: it carries only the request that
	// dialled it, which asks the server to close it (Connection: close),
	// and is closed once that request ends. Immutable after dial.
	oneShot bool

	// claims counts the requests holding the connection: taken by get (and
	// by dial for the request that dialled it) with p.mu held, ended by
	// done or by get when Reserve fails, with p.mu held. While it is above
	// zero the connection is not idle, so it is not closed. get also hands
	// the connection out only while Available exceeds it, so that requests
	// given an HTTP/2 connection that have not opened their stream yet do
	// not overfill it (one whose stream is open counts twice until done,
	// which errs on the side of waiting, as before).
	claims int // guarded by p.mu
	// settled: the HTTP/2 server's SETTINGS are known (or taken for
	// known), so get may hand the connection to more than the request that
	// dialled it (see update). Always true unless strictH2 and HTTP/2. Set
	// once, with p.mu held, by dial, update or done.
	settled bool // guarded by p.mu
}

// h2InitialStreams is the stream limit net/http's HTTP/2 client assumes for
// a new connection until the server's SETTINGS arrive
// (http2initialMaxConcurrentStreams in net/http/h2_bundle.go).
const h2InitialStreams = 100

// settleMax bounds how long requests wait for a new strict HTTP/2
// connection's SETTINGS (see update).
const settleMax = time.Second

// watchMin and watchMax bound the interval of a connection's watch.
const (
	watchMin = time.Millisecond
	watchMax = 100 * time.Millisecond
)

// setH2 records that c speaks HTTP/2, for the pool and for its
// watchedConn's Read.
func (c *conn) setH2() {
	c.h2.Store(true)
	c.p.multiplexed.Store(true)
	if c.wc != nil {
		c.wc.h2.Store(true)
	}
}

func (c *conn) expired(now time.Time) bool {
	return !c.expires.IsZero() && !now.Before(c.expires)
}

// idle reports whether no request holds c or is in flight on it: the one
// condition under which the pool closes a connection (idle timeout,
// lifetime, maxIdle, drain). p.mu is held.
func (c *conn) idle() bool {
	return c.claims == 0 && c.cc.InFlight() == 0
}

// ready reports whether c may be handed to a request as far as its bytes
// go: an HTTP/2 connection always (frames name their stream); an HTTP/1
// one only while net/http's reader is parked in Read with nothing waiting
// in the socket (see watchedConn). Otherwise it asks to be told when the
// reader parks. p.mu is held.
func (c *conn) ready() bool {
	if c.wc == nil || c.h2.Load() {
		return true
	}
	if c.parkedEmpty() {
		return true
	}
	// Not parked, or it moved while looked at: ask to be told when it
	// parks next, then look once more, since it may have parked before it
	// could see the ask. If this look fails too, a Read has begun or ended
	// after the ask (or bytes wait in the socket, which the reader takes
	// next), so the next park tells (parkedNow): a waiter that waits for
	// this connection is woken. An ask that a park consumed before the
	// look woke a waiter already.
	c.wc.want.Store(true)
	return c.parkedEmpty()
}

// parkedEmpty reports whether net/http's reader is parked with the socket
// empty: the Read that was parked before the look is still the one parked
// after it, so it cannot have taken bytes that came before the look.
// p.mu is held.
func (c *conn) parkedEmpty() bool {
	reads := c.wc.reads.Load()
	return c.wc.parked.Load() && !c.wc.pending() && c.wc.parked.Load() && c.wc.reads.Load() == reads
}

// parkedNow is the watchedConn's onPark: net/http's reader is waiting for
// the next response, so a connection that ready turned down may now be
// handed out. It wakes one waiter to look; it does not call into the
// ClientConn, since it runs on net/http's reader goroutine.
func (c *conn) parkedNow() {
	p := c.p
	p.mu.Lock()
	if c.at >= 0 {
		p.signal()
	}
	p.mu.Unlock()
}

// limitKnown reports whether c's stream limit is the server's: it differs
// from what net/http assumes before the server's SETTINGS, or c can take no
// request anyway.
func (c *conn) limitKnown() bool {
	return c.cc.Available()+c.cc.InFlight() != h2InitialStreams
}

// get returns a connection for one request: an open, unexpired connection
// with room, a new one, or, at the connection limit, the next one that
// frees up, in the order the requests came (see pool.head). It returns
// errDrained once the pool drains, the context's cause if ctx ends while
// the request waits, and errQueueTimeout if deadline (when not zero)
// passes while it waits.
//
// The caller must pass c and pending to done once RoundTrip has returned
// (pending is true whenever err is nil): until then the request's claim
// keeps the connection from being closed under it.
//
// An HTTP/1 connection is also reserved (ClientConn.Reserve), so that it
// carries one request at a time. An HTTP/2 connection is not: RoundTrip
// waits for a stream itself. Reserving streams on a new HTTP/2 connection
// before the server's SETTINGS have lowered its limit can deadlock
// net/http's client (a reservation holds the stream that a request holding
// the connection's header lock waits for).
func (p *pool) get(ctx context.Context, deadline time.Time) (c *conn, pending bool, err error) {
	var (
		w       *waiter // this request's place in the queue, once it has waited
		expired <-chan time.Time
	)
	for {
		p.mu.Lock()
		if w != nil && w.handed != nil {
			// A dial whose requester gave up handed its new connection to
			// w, claimed and reserved, and took w out of the queue.
			c := w.handed
			w.handed = nil
			p.mu.Unlock()
			return c, true, nil
		}
		if w != nil && w == p.head {
			// w was woken (only the head is) and looks now: a signal from
			// here on is a new wake.
			p.headWoken = false
		}
		if p.drained {
			p.leaveDrained(ctx, w)
			p.mu.Unlock()
			return nil, false, errDrained
		}
		pick, dial, to, stale := p.look(w)
		if pick == nil && !dial {
			if w, err = p.queue(ctx, w); err != nil {
				p.mu.Unlock()
				closeAll(stale)
				return nil, false, err
			}
		} else if p.onQueue != nil {
			p.onQueue(ctx, backend.QueueServed)
		}
		p.mu.Unlock()
		closeAll(stale)
		switch {
		case dial:
			c, err := p.dialFor(ctx, to)
			return c, err == nil, err
		case pick == nil:
			if !deadline.IsZero() && expired == nil {
				t := time.NewTimer(time.Until(deadline))
				defer t.Stop()
				expired = t.C
			}
			if err := p.wait(ctx, w, expired); err != nil {
				return nil, false, err
			}
			continue
		}
		if !pick.h2.Load() {
			if err := pick.cc.Reserve(); err != nil {
				// It closed since scan looked (the server closed it), or is
				// no longer HTTP/1's one free slot: look again, first in
				// line, as the oldest request it was.
				p.done(pick, true)
				w = p.requeueFirst(ctx, w)
				continue
			}
		}
		pick.reused.Store(true)
		return pick, true, nil
	}
}

// leaveDrained takes w, if it waits, out of a drained pool's queue, and
// wakes the next waiter, which learns it too. p.mu is held.
func (p *pool) leaveDrained(ctx context.Context, w *waiter) {
	if w == nil || !w.queued {
		return
	}
	if p.onQueue != nil {
		p.onQueue(ctx, backend.QueueLeft)
	}
	p.unlink(w)
	p.signal()
}

// queue puts a request that found nothing in the queue: a newcomer (w nil)
// joins at the tail, unless max_pending_requests already wait, and then it
// is refused, unsent, with p.overloaded (those that wait keep their order);
// a waiter keeps its place. p.mu is held.
func (p *pool) queue(ctx context.Context, w *waiter) (*waiter, error) {
	if w == nil && p.maxPending > 0 && p.nwait >= p.maxPending {
		if p.onQueue != nil {
			p.onQueue(ctx, backend.QueueRefused)
		}
		return nil, p.overloaded
	}
	joined := w == nil
	w = p.enqueue(ctx, w)
	if p.onQueue != nil && joined {
		p.onQueue(ctx, backend.QueueJoined)
	}
	return w, nil
}

// look is one look at the pool for a request: w is its place in the queue,
// nil for a newcomer. A newcomer looks only when nobody waits, and a waiter
// only when it is the head (woken): otherwise look returns nothing and the
// request waits. It returns a connection with room, claimed for the
// request, or reports that the request may dial (counted in p.dialing); in
// either case the request has left the queue and the next waiter is woken
// to look for what else there is. stale lists connections scan took out of
// the pool, for the caller to close once p.mu is released. p.mu is held.
func (p *pool) look(w *waiter) (pick *conn, dial bool, to *address, stale []*conn) {
	if (w == nil && p.head != nil) || (w != nil && w != p.head) {
		return nil, false, nil, nil
	}
	now := time.Now()
	// With several addresses in service, the request goes to the one with
	// the least load (addrs.go): a connection to it, or a new one; only
	// when the pool may open no connection, an idle one to another.
	to, spread := p.target()
	var soon bool
	pick, soon, stale = p.scan(now, to, spread)
	room := p.max == 0 || len(p.conns)+p.dialing < p.max
	if pick == nil && !soon && spread && !room {
		var more []*conn
		pick, soon, more = p.scan(now, nil, true)
		stale = append(stale, more...)
	}
	// With strictH2, one HTTP/2 connection (to each address) takes every
	// request: while one is open or being dialled, requests wait for a
	// stream instead. A connection that is free but not ready yet will be
	// in a moment (or will close): wait for it rather than dial another.
	dial = pick == nil && !soon && room && !(p.strictH2 && p.h2Busy(to, spread))
	if dial && spread && !p.strictH2 {
		// A new connection goes where the pool has the fewest.
		to = p.chooseDial()
	}
	switch {
	case pick != nil:
		// The claim is taken with p.mu held, as the connection is picked:
		// from here on no idle timer, expiry, maxIdle trim or drain closes
		// it, since they all check idle with p.mu held.
		pick.claims++
		if pick.a != nil {
			pick.a.claims++
		}
		// The idle timer stays armed: its firing finds pick busy, or
		// idle again since, and acts on that (idleExpired).
		p.unidle(pick)
	case dial:
		p.dialing++
		if to != nil {
			to.dialing++
			to.dials++
			to.claims++
		}
	default:
		return nil, false, nil, stale
	}
	if w != nil {
		p.unlink(w)
	}
	p.passOn()
	return pick, dial, to, stale
}

// wait waits for w's wake, and takes w out of the queue if ctx ends or
// expired fires first.
func (p *pool) wait(ctx context.Context, w *waiter, expired <-chan time.Time) error {
	select {
	case <-w.wake:
		if p.testHookWoken != nil {
			p.testHookWoken()
		}
		return nil
	case <-ctx.Done():
		p.leave(w)
		return context.Cause(ctx)
	case <-expired:
		p.leave(w)
		return errQueueTimeout
	}
}

// requeueFirst puts a request whose picked connection failed Reserve back
// at the head of the queue, where it was (or would have been, as a
// newcomer that found nobody waiting), and marks it woken, since it looks
// again at once: signals until it looks fold into that look. A waiter
// woken meanwhile finds itself behind it and waits again. p.mu is not
// held.
func (p *pool) requeueFirst(ctx context.Context, w *waiter) *waiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onQueue != nil {
		p.onQueue(ctx, backend.QueueRequeued)
	}
	if w == nil {
		w = &waiter{wake: make(chan struct{}, 1), ctx: ctx}
	}
	w.prev, w.next, w.queued = nil, p.head, true
	if p.head != nil {
		p.head.prev = w
	} else {
		p.tail = w
	}
	p.head = w
	p.nwait++
	p.headWoken = true
	return w
}

// passOn wakes the next waiter once a request has taken what it was woken
// for (or found it could dial), if something may be left for it: another
// idle connection, room to dial, or streams on an HTTP/2 connection. With
// none, the next change that frees something (done, update, a dial that
// ends, a close) wakes it, as it would anyway: a wake now would only make
// it look, find nothing and sleep again, one wasted wake and lock per
// request in a crowd behind max_conns_per_host. p.mu is held.
func (p *pool) passOn() {
	if p.nidle > 0 || p.multiplexed.Load() || p.max == 0 || len(p.conns)+p.dialing < p.max {
		p.signal()
	}
}

// errQueueTimeout is get's error when its deadline passed while the
// request waited for a connection.
var errQueueTimeout = errors.New("no connection free before the deadline")

// enqueue puts a newcomer's request at the tail of the queue and returns
// its waiter; a waiter already in the queue keeps its place. p.mu is held.
func (p *pool) enqueue(ctx context.Context, w *waiter) *waiter {
	if w == nil {
		w = &waiter{wake: make(chan struct{}, 1), ctx: ctx}
	}
	if w.queued {
		return w
	}
	w.prev, w.next, w.queued = p.tail, nil, true
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
	p.nwait++
	return w
}

// unlink takes w out of the queue. If w is the head and was woken (by a
// signal since it last looked, even one sent while it looked, such as
// scan's), the wake is taken back and unlink reports it: the caller passes
// it on (signal), since it was for whatever w now does not take. p.mu is
// held.
func (p *pool) unlink(w *waiter) (woken bool) {
	if !w.queued {
		return false
	}
	if w == p.head && p.headWoken {
		woken = true
		p.headWoken = false
		select {
		case <-w.wake:
		default:
		}
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	p.nwait--
	return woken
}

// leave takes w out of the queue when its request gives up. If w was the
// head and had been woken, the wake goes to the next waiter. A connection
// a dial handed to w meanwhile (dialed) is given back: its reservation
// released and its claim ended, so that it serves the next waiter or goes
// idle.
func (p *pool) leave(w *waiter) {
	p.mu.Lock()
	if p.onQueue != nil && w.queued {
		p.onQueue(w.ctx, backend.QueueLeft)
	}
	if p.unlink(w) {
		p.signal()
	}
	c := w.handed
	w.handed = nil
	p.mu.Unlock()
	if c != nil {
		p.giveBack(c)
	}
}

// giveBack returns a new connection, reserved and claimed for a request
// that no longer wants it, to the pool: update then sees it idle, puts it
// on the idle list and wakes a waiter. p.mu is not held (Release runs the
// hook).
func (p *pool) giveBack(c *conn) {
	c.cc.Release()
	p.done(c, true)
}

// done ends a request's claim on c (see get), once RoundTrip has returned.
// The connection's state is then looked at again, as its hook would: the
// request's end may have left it idle, or with room for a waiting request,
// without the hook having been told (a stream that opened and closed
// between two of the ClientConn's looks at its state is not reported).
//
// An unjudged outcome ejects nothing, so done needs no request context.
func (p *pool) done(c *conn, pending bool) { p.doneWith(context.Background(), c, pending, unjudged) }

// doneWith is done with the request's outcome for outlier detection (see
// judge): an address that fails too often is ejected, reported with ctx,
// the request's.
func (p *pool) doneWith(ctx context.Context, c *conn, pending bool, v verdict) {
	if !pending {
		return
	}
	p.mu.Lock()
	c.claims--
	var ev backend.AddressEvent
	var ejected bool
	if a := c.a; a != nil {
		a.claims--
		if v != unjudged && p.nlive > 1 {
			ev, ejected = p.outcome(a, v)
		}
	}
	// A request on c has returned, so the server has spoken (its SETTINGS
	// come first) or the connection failed.
	c.settled = true
	closeNow := p.update(c, false)
	p.mu.Unlock()
	if closeNow {
		c.close()
	}
	if ejected {
		p.addressEvent(ctx, ev)
	}
}

// scan finds a connection with room: the most recently used idle one
// that is ready, else (once the pool multiplexes) a busy HTTP/2 one with a
// free stream. On its way down the idle list it takes out of the pool the
// connections that have closed and the expired ones, which the caller
// closes with closeAll once p.mu is released. soon reports a connection
// with room that is not ready yet (see conn.ready): its reader parks in a
// moment, and its parkedNow wakes a waiter, or it closes. p.mu is held.
//
// With spread (several addresses in service), scan looks only at the
// connections to want, or, with want nil, at those to an address in
// service.
func (p *pool) scan(now time.Time, want *address, spread bool) (pick *conn, soon bool, stale []*conn) {
	dropped := false
	top := p.idleTop
	if spread && want != nil && want.nidle == 0 {
		top = nil // none of its connections is idle
	}
	for c := top; c != nil && pick == nil; {
		next := c.idleNext
		switch {
		case spread && !c.serves(want):
			// Another address's, or one out of service.
		case c.cc.Err() != nil:
			// Closed; its hook may not have run yet.
			c.stopTimers()
			p.remove(c)
			dropped = true
		case c.expired(now) && c.idle():
			stale = append(stale, c)
			p.remove(c)
		case c.expired(now) || c.oneShot || !c.settled || c.cc.Available() <= c.claims:
			// Busy again, or not to be given out: update sees to it.
		case c.ready():
			pick = c
		default:
			soon = true
		}
		c = next
	}
	if pick == nil && p.multiplexed.Load() {
		pick = p.withRoom(now, want, spread)
	}
	if dropped || len(stale) > 0 {
		p.signal()
	}
	return pick, soon, stale
}

// withRoom finds a busy HTTP/2 connection with a free stream: one that
// has a request on it is not on the idle list. The pool's HTTP/2
// connections are few (one, under strictH2), so this looks at each. p.mu
// is held.
func (p *pool) withRoom(now time.Time, want *address, spread bool) *conn {
	for _, c := range p.conns {
		if (spread && !c.serves(want)) || (c.a != nil && c.a.gone) {
			continue
		}
		if c.h2.Load() && !c.onIdle && c.settled && !c.expired(now) && c.cc.Err() == nil && c.cc.Available() > c.claims {
			return c
		}
	}
	return nil
}

// h2Busy reports whether, under strictH2, a request must wait for a
// stream rather than dial: an HTTP/2 connection is open or being dialled
// (to want, when the pool spreads over addresses, or to an address not
// chosen yet). p.mu is held.
func (p *pool) h2Busy(want *address, spread bool) bool {
	if spread {
		if want != nil && want.dialing > 0 {
			return true
		}
		// A dial that started before the addresses were known chooses
		// its address only when they are (firstAddress), maybe want's:
		// wait for it rather than open a second connection there.
		addressed := 0
		for _, a := range p.addrs {
			addressed += a.dialing
		}
		if p.dialing > addressed {
			return true
		}
	} else if p.dialing > 0 {
		return true
	}
	for _, c := range p.conns {
		if spread && c.a != want {
			continue
		}
		if c.h2.Load() && c.cc.Err() == nil {
			return true
		}
	}
	return false
}

// dialFor dials a connection for the request whose look found it may
// dial (counted in p.dialing), and waits for it: the dial runs in a
// goroutine of the pool's, with ctx's values but not its cancellation,
// within connect_timeout, as net/http's queueForDial and dialConnFor do. If
// the request gives up first, the dial goes on for the pool: its
// connection goes to the queue's head, or onto the idle list (dialed).
func (p *pool) dialFor(ctx context.Context, to *address) (*conn, error) {
	d := &pendingDial{done: make(chan struct{}), to: to}
	go p.dial(context.WithoutCancel(ctx), d)
	select {
	case <-d.done:
		return d.c, d.err
	case <-ctx.Done():
	}
	p.mu.Lock()
	if !d.finished {
		d.abandoned = true
		p.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	p.mu.Unlock()
	// The dial ended as the request gave up: its connection is the pool's.
	if d.err == nil {
		p.giveBack(d.c)
	}
	return nil, context.Cause(ctx)
}

// dial opens a new connection with one reserved slot and a claim, for the
// request that started d (dialFor), and ends d (dialed). The caller has
// counted it in p.dialing. ctx carries no cancellation of the request's;
// drain ends the dial (dialStop).
func (p *pool) dial(ctx context.Context, d *pendingDial) {
	var o dialed
	var err error
	if d.to == nil && p.resolved != nil {
		err = p.firstAddress(ctx, d)
	}
	if err == nil {
		o, err = p.open(ctx, d.to)
	}
	if err != nil {
		p.mu.Lock()
		p.dialing--
		var ev backend.AddressEvent
		var ejected bool
		if a := d.to; a != nil {
			a.dialing--
			a.claims--
			if !p.drained {
				ev, ejected = p.dialFailed(a)
			}
			p.addrs = deleteGone(p.addrs)
		}
		if p.drained {
			// drain ended the dial (dialStop), or it failed as the pool
			// drained: the request goes to the schema's current pool.
			err = errDrained
		}
		p.signal() // the head may dial again
		p.dialed(d, nil, err)
		p.mu.Unlock()
		if ejected {
			p.addressEvent(ctx, ev)
		}
		return
	}
	c := p.newConn(o)
	c.a = d.to
	cc := c.cc
	// The hook goes in before the connection is in p.conns, where other
	// requests find it, so that no change of its state goes unseen.
	// SetStateHook may run the hook at once, in this goroutine: p.mu must
	// not be held. A hook run before the append finds c outside the pool
	// and does nothing; what it would have seen is looked at below.
	cc.SetStateHook(c.stateChanged)

	p.mu.Lock()
	p.dialing--
	if a := c.a; a != nil {
		a.dialing--
		a.connectFailed = false
	}
	if p.drained || cc.Err() != nil {
		err := cc.Err()
		if err == nil {
			err = errDrained
		}
		if c.a != nil {
			c.a.claims--
			p.addrs = deleteGone(p.addrs)
		}
		p.signal()
		p.dialed(d, nil, err)
		p.mu.Unlock()
		c.close()
		return
	}
	p.add(c)
	// Requests that waited while this dial ran may fit on it (HTTP/2) or
	// may now dial their own: wake them to look again.
	p.signal()
	p.update(c, false) // busy with its dialer's request: arms the watch
	if !p.dialed(d, c, nil) {
		p.mu.Unlock()
		return
	}
	p.handOver(c)
}

// firstAddress waits, for a dial that found no address known, for the
// pool's first lookup (within connect_timeout, or until a drain), and
// then chooses d's address. With none, the dial fails: the resolver is
// the one source of the pool's addresses; a lookup starts at once.
// ctx carries the requester's values but not its cancellation.
func (p *pool) firstAddress(ctx context.Context, d *pendingDial) error {
	wctx := ctx
	if p.dialTO > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, p.dialTO)
		defer cancel()
	}
	if p.dialStop != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(wctx)
		defer cancel()
		stop := context.AfterFunc(p.dialStop, cancel)
		defer stop()
	}
	p.waitAddrs(wctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	a, spread := p.target()
	if spread {
		a = p.chooseDial()
	}
	if a != nil {
		a.dialing++
		a.dials++
		a.claims++
		d.to = a
		return nil
	}
	p.resolveNow()
	return p.noAddress()
}

// open dials a connection for the pool to address to (by name when nil),
// within connect_timeout, ended by a drain (dialStop), and reserves it for
// the request it is dialled for. ctx carries the requester's values but
// not its cancellation.
func (p *pool) open(ctx context.Context, to *address) (dialed, error) {
	dctx := ctx
	if p.dialStop != nil {
		var cancel context.CancelFunc
		dctx, cancel = context.WithCancel(dctx)
		defer cancel()
		stop := context.AfterFunc(p.dialStop, cancel)
		defer stop()
	}
	if p.dialTO > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(dctx, p.dialTO)
		defer cancel()
	}
	var o dialed
	var err error
	dialTo := "" // the host by name, or through the proxy
	if to != nil {
		dialTo = to.dialTo
	}
	if p.h1 != nil {
		o, err = p.h1.open(dctx, dialTo)
	} else {
		o, err = p.openNetHTTP(dctx, dialTo)
	}
	if err == nil {
		if err = o.cc.Reserve(); err != nil {
			o.cc.Close()
		}
	}
	return o, err
}

// newConn makes the pool's conn of a new connection, claimed by the
// request it was dialled for: its lifetime, and its timers, stopped.
func (p *pool) newConn(o dialed) *conn {
	now := time.Now()
	cc, h2 := o.cc, o.h2
	c := &conn{p: p, cc: cc, wc: o.wc, written: o.written, born: now, claims: 1, settled: !(h2 && p.strictH2), oneShot: o.oneShot, at: -1}
	if c.wc != nil {
		c.wc.onPark = c.parkedNow
	}
	if h2 {
		c.setH2()
	}
	if p.lifetime > 0 {
		life := p.lifetime
		if p.jitter > 0 {
			life -= rand.N(p.jitter)
		}
		c.expires = now.Add(life)
	}
	c.timer = time.AfterFunc(time.Hour, c.idleExpired)
	c.timer.Stop()
	if p.h1 == nil {
		c.headerTimer = time.AfterFunc(time.Hour, func() { cc.Close() })
		c.headerTimer.Stop()
	}
	c.watch = time.AfterFunc(time.Hour, c.watchFired)
	c.watch.Stop()
	return c
}

// handOver gives c, a new connection whose requester gave up, claimed and
// reserved, to the oldest waiter, which leaves the queue with it, as
// net/http's dialConnFor hands a connection its requester no longer wants
// to the next; with nobody waiting, c goes idle. p.mu is held, and
// handOver unlocks it.
func (p *pool) handOver(c *conn) {
	if w := p.head; w != nil {
		if p.unlink(w) {
			p.signal() // w's own wake was for whatever else there is
		}
		w.handed = c
		c.reused.Store(true)
		if p.onQueue != nil {
			p.onQueue(w.ctx, backend.QueueServed)
		}
		select {
		case w.wake <- struct{}{}:
		default: // holds a wake already: it wakes all the same
		}
		p.passOn()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.giveBack(c) // nobody waits: idle
}

// dialed ends d with the dial's outcome, c or err: to its requester if it
// still waits, and reports whether the requester gave up, so that the
// caller finds c another owner. p.mu is held.
func (p *pool) dialed(d *pendingDial, c *conn, err error) (abandoned bool) {
	d.finished = true
	if d.abandoned {
		return true
	}
	d.c, d.err = c, err
	close(d.done)
	return false
}

// dialed is a new connection as an engine opened it, not yet reserved.
type dialed struct {
	cc      clientConn
	wc      *watchedConn  // nethttp's socket, watched; nil with h1 or a Dial hook's connection
	written *atomic.Int64 // bytes written on it; nil when not counted
	h2      bool          // it speaks HTTP/2
	oneShot bool          // nethttp's HTTP/1 connection whose socket cannot be looked at (conn.oneShot)
}

// openNetHTTP opens a connection with net/http's Transport.
// dialTo, when set, is the address the Transport's dial goes to instead of
// the host's (watchDial).
func (p *pool) openNetHTTP(ctx context.Context, dialTo string) (dialed, error) {
	slot := &dialSlot{to: dialTo}
	cc, err := p.tr.NewClientConn(context.WithValue(ctx, dialSlotKey{}, slot), p.scheme, p.addr)
	if err != nil {
		return dialed{}, err
	}
	d := dialed{cc: cc, wc: slot.conn, h2: p.onlyH2 || cc.Available() > 1 || (p.scheme == "https" && p.sawH2.Load())}
	if d.wc != nil {
		d.written = &d.wc.written
		if d.wc.hidden && !d.h2 {
			d.oneShot = true
			p.noSocket()
		}
	}
	return d, nil
}

// noSocket says, once per pool, at Info, that the schema's HTTP/1
// connections carry one request each, as h1Dialer.noSocket does for h1.
func (p *pool) noSocket() {
	p.noSocketOnce.Do(func() {
		if p.log == nil {
			return // a pool built by a test
		}
		p.log.Info("nethttp cannot look at the socket of this source schema's connections, so it cannot tell whether the server wrote to an idle HTTP/1 one: each HTTP/1 connection carries one request (Connection: close). A Dial hook shows the socket by returning a syscall.Conn, or a wrapper with a NetConn method (see SchemaOptions.Dial)",
			"source_schema", p.schema)
	})
}

// stateChanged is the ClientConn's state hook: it runs when a request ends,
// when room frees up, and when the connection closes.
//
// The hook may miss a change: while it runs, ClientConn does not call it
// again, and when it returns, ClientConn compares the state with the state
// the hook was called for, so a request that took the freed room and ended
// meanwhile leaves no trace (and an HTTP/2 stream that opens and closes
// between two of ClientConn's looks at the state is not reported at all).
// done and the watch (see update) make up for it.
//
// A hook that finds c out of the pool, still open, and its close under way
// in another goroutine, waits for that close: on nethttp's HTTP/1 the hook
// runs before the caller's read of the body's end returns, so the caller's
// next request, which may dial, comes after the old connection's socket has
// closed, and the pool never holds more sockets than its callers need
// (TestConnLifetimeUnderLoad). The hook that close itself runs (inside
// Close) sees the connection's error and does not wait.
func (c *conn) stateChanged(*http.ClientConn) {
	p := c.p
	p.mu.Lock()
	if c.at < 0 {
		gone := c.gone
		p.mu.Unlock()
		if gone != nil && c.cc.Err() == nil {
			<-gone
		}
		return
	}
	closeNow := p.update(c, false)
	p.mu.Unlock()
	if closeNow {
		c.close()
	}
}

// watchFired is the watch timer's function.
func (c *conn) watchFired() {
	p := c.p
	p.mu.Lock()
	closeNow := p.update(c, true)
	p.mu.Unlock()
	if closeNow {
		c.close()
	}
}

// update looks at c after its state may have changed: a closed connection
// leaves the pool, an idle one is closed if the pool drains, it expired or
// too many are idle, or else its idle timer is armed, and requests waiting
// for room are woken. It reports whether the caller must close c, which
// has left the pool, once p.mu is released. p.mu is held.
//
// A new strictH2 HTTP/2 connection settles here. Until its server's
// SETTINGS arrive, net/http assumes the connection allows 100 streams.
// Requests handed to it in that time all open streams; if the server
// allows fewer, it refuses the extra ones, and once it has had the
// client's SETTINGS acknowledgement it answers them with PROTOCOL_ERROR,
// after which net/http marks the connection not reusable and every request
// waiting on it fails with "http2: client conn not usable". So a new strict
// connection carries only the request that dialled it until it settles:
// its limit differs from the assumed one (SETTINGS came), a request on it
// returns (done), or settleMax has passed (the server may allow exactly 100
// streams, which looks the same as no SETTINGS yet).
//
// The watch: net/http's state hook can miss the end of a response that
// no claim holds (its request's RoundTrip has returned and done has run,
// its body is still being read). The hook runs with the state it was
// called for recorded, but looks at the connection (under p.mu) later; if
// another request starts in between and ends while the hook runs, the
// state when the hook returns equals the recorded one and ClientConn does
// not call it again, though the hook saw the connection busy. On the h1
// engine the hook sees every change, and while every request in flight is
// held by a claim its done looks again. So only while c is not settled,
// or more is in flight on it than claims hold (InFlight > claims), its
// watch runs update again, at watchMin after the last update from its hook
// or done and then backing off to watchMax, so that an end the hook missed
// is seen within that time: fromWatch reports that the watch called. A
// response body read to its end in the caller's goroutine (the common
// case) runs the hook, which stops the watch before it fires.
func (p *pool) update(c *conn, fromWatch bool) (closeNow bool) {
	if c.at < 0 {
		return false
	}
	if c.cc.Err() != nil {
		p.remove(c)
		c.stopTimers()
		return false
	}
	if !c.settled && (c.limitKnown() || time.Since(c.born) >= settleMax) {
		c.settled = true
	}
	idle := c.idle()
	if idle {
		now := time.Now()
		if p.drained || c.oneShot || c.expired(now) || (c.a != nil && (c.a.gone || c.a.ejected)) || (!c.onIdle && p.maxIdle > 0 && p.nidle >= p.maxIdle) {
			p.remove(c)
			return true
		}
		if !c.onIdle {
			p.pushIdle(c)
			c.idleSince = now
			if c.timerDue.IsZero() {
				c.armIdle(now)
			}
		}
	}
	if c.settled && c.cc.Available() > c.claims && c.ready() {
		p.signal()
	}
	if p.h1 != nil || (c.settled && c.cc.InFlight() <= c.claims) {
		// The h1 engine's hook sees every change; and while every request
		// in flight on c is held by its claim, the last one's done looks
		// at c again: no watch needed.
		c.watch.Stop()
	} else {
		if fromWatch {
			c.watchDelay = min(2*c.watchDelay, watchMax)
		} else {
			c.watchDelay = watchMin
		}
		c.watch.Reset(c.watchDelay)
	}
	return false
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

// idleDue is when c, idle since its idleSince, must close: at the end of
// its idle timeout or of its lifetime, whichever comes first. Zero: never.
// p.mu is held.
func (c *conn) idleDue() time.Time {
	d := c.idleBound(c.idleSince)
	if d <= 0 {
		return time.Time{}
	}
	return c.idleSince.Add(d)
}

// armIdle arms c's timer for its idleDue, if it has one, as seen at now.
// No firing is pending (timerDue is zero). p.mu is held.
func (c *conn) armIdle(now time.Time) {
	due := c.idleDue()
	if due.IsZero() {
		return
	}
	c.timerDue = due
	c.timer.Reset(max(due.Sub(now), 0))
}

// idleExpired is c's timer's function: it closes c if it is idle and has
// been for its idle timeout (or its lifetime has ended), re-arms the timer
// if c is idle but was used since the timer was armed, and leaves it
// unarmed if c is busy (see conn.timer).
func (c *conn) idleExpired() {
	p := c.p
	p.mu.Lock()
	c.timerDue = time.Time{}
	if c.at < 0 || !c.idle() {
		p.mu.Unlock()
		return
	}
	if now := time.Now(); now.Before(c.idleDue()) {
		c.armIdle(now)
		p.mu.Unlock()
		return
	}
	p.remove(c)
	p.mu.Unlock()
	c.close()
}

// add puts a new connection in the pool. p.mu is held.
func (p *pool) add(c *conn) {
	c.at = len(p.conns)
	p.conns = append(p.conns, c)
	if c.a != nil {
		c.a.conns++
	}
}

// remove takes c out of the pool, and off the idle list, and wakes a
// waiter: there is room for another connection. p.mu is held.
func (p *pool) remove(c *conn) {
	if c.at < 0 {
		return
	}
	p.unidle(c)
	c.gone = make(chan struct{})
	last := len(p.conns) - 1
	p.conns[c.at] = p.conns[last]
	p.conns[c.at].at = c.at
	p.conns[last] = nil
	p.conns = p.conns[:last]
	c.at = -1
	if a := c.a; a != nil {
		a.conns--
		if a.gone && a.conns == 0 {
			p.addrs = deleteGone(p.addrs)
		}
	}
	p.signal()
}

// pushIdle puts c at the top of the idle list: the next to be handed out.
// p.mu is held.
func (p *pool) pushIdle(c *conn) {
	c.onIdle, c.idlePrev, c.idleNext = true, nil, p.idleTop
	if p.idleTop != nil {
		p.idleTop.idlePrev = c
	} else {
		p.idleBottom = c
	}
	p.idleTop = c
	p.nidle++
	if c.a != nil {
		c.a.nidle++
	}
}

// unidle takes c off the idle list, if it is on it. p.mu is held.
func (p *pool) unidle(c *conn) {
	if !c.onIdle {
		return
	}
	if c.idlePrev != nil {
		c.idlePrev.idleNext = c.idleNext
	} else {
		p.idleTop = c.idleNext
	}
	if c.idleNext != nil {
		c.idleNext.idlePrev = c.idlePrev
	} else {
		p.idleBottom = c.idlePrev
	}
	c.onIdle, c.idlePrev, c.idleNext = false, nil, nil
	p.nidle--
	if c.a != nil {
		c.a.nidle--
	}
}

// signal wakes the oldest waiting request to look again: one wake for each
// connection or slot that frees up, folded into the head's wake while it
// has not looked yet (see pool.head). p.mu is held.
func (p *pool) signal() {
	if p.head == nil || p.headWoken {
		return
	}
	p.headWoken = true
	select {
	case p.head.wake <- struct{}{}:
	default:
		// Still holds a wake it was given as head before requeueFirst put
		// another request in front of it: it wakes all the same.
	}
}

// signalAll wakes the waiting requests: the pool drains. Each that finds
// it drained wakes the next (get). p.mu is held.
func (p *pool) signalAll() {
	p.signal()
}

// drain stops new requests, closes idle connections at once and every other
// connection when its last request ends (update, from its hook or done).
func (p *pool) drain() {
	p.mu.Lock()
	if p.drained {
		p.mu.Unlock()
		return
	}
	p.drained = true
	if p.cancelDialStop != nil {
		p.cancelDialStop()
	}
	p.stopAddressing()
	p.signalAll()
	var idle []*conn
	for _, c := range slices.Clone(p.conns) {
		switch {
		case c.cc.Err() != nil:
			c.stopTimers()
		case c.idle():
			idle = append(idle, c)
		default:
			continue
		}
		p.remove(c)
	}
	p.signal()
	p.mu.Unlock()
	closeAll(idle)
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

// stopTimers stops c's pool timers. The header timer belongs to the
// request holding c.
func (c *conn) stopTimers() {
	c.timer.Stop()
	c.watch.Stop()
}

// close closes a connection that has left the pool while idle, or that the
// request dialling it never got. p.mu is not held (Close runs the hook).
func (c *conn) close() {
	c.stopTimers()
	c.cc.Close()
	if c.gone != nil {
		close(c.gone)
	}
}

// closeAll closes idle connections that scan or drain took out of the pool.
func closeAll(conns []*conn) {
	for _, c := range conns {
		c.close()
	}
}
