package bound

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/fault"
)

// requestCtx is the context of a request under its request bound: the
// caller's context (parent), ending at end at the latest, with a
// *fault.RequestTimeoutError as the cause.
//
// It makes no context, timer or goroutine of its own until something
// needs one: context.WithDeadlineCause would make a context, a timer and
// two closures per call (and a goroutine when the timer fires), though
// most calls end long before their bound and nothing ever waits on it.
// Until then it answers from parent and the clock: Deadline is end; Err
// is nil while end is ahead and parent has not ended; Value is parent's.
// The first Done, an Err once it has ended, or a context derived from it
// (which calls Done) arms it: it makes the standard one (armedCtx), and
// from then on every method is armedCtx's, so a waiter (the pool's queue,
// a retry's backoff, net/http) sees an ordinary context, and
// context.Cause finds armedCtx's cause (the request timeout, or the
// parent's cause), since Cause asks Err first, and Value of the
// cancelCtx key then reaches armedCtx.
//
// A transport that keeps the bound itself (RequestBound: the h1 engine,
// with its connection's timer) watches only parent, so on the path where
// nothing waits no context is made at all.
//
// Ownership: Guard.Begin sets parent, end, bound and callerDeadline
// before the request is sent, and nothing changes them until the Guard is
// reused (a pooled PostFunc call, only when Reusable). armedCtx and
// cancel are written once, under mu, before armed is set; released is
// atomic.
type requestCtx struct {
	parent         context.Context
	end            time.Time     // the request bound's end: before parent's deadline, if any
	bound          time.Duration // request_timeout, for the error
	callerDeadline bool          // parent has a deadline (later than end)

	mu sync.Mutex // serialises arm and release
	// armedCtx is the standard context made on demand (arm), and cancel
	// its CancelFunc; nil until then. Read without mu once armed is set.
	armedCtx context.Context
	cancel   context.CancelFunc
	armed    atomic.Bool // armedCtx is set
	// released: the Guard released the request (its body closed, or it
	// failed); the context is cancelled from then on, as a standard one
	// is by its CancelFunc.
	released atomic.Bool
}

// requestKey finds a request's requestCtx (CallerDeadline).
type requestKey struct{}

// begin sets c up for a request: a zero or released requestCtx that
// nothing else holds.
func (c *requestCtx) begin(parent context.Context, end time.Time, bound time.Duration, callerDeadline bool) {
	c.parent, c.end, c.bound, c.callerDeadline = parent, end, bound, callerDeadline
	c.armedCtx, c.cancel = nil, nil
	c.armed.Store(false)
	c.released.Store(false)
}

func (c *requestCtx) Deadline() (time.Time, bool) { return c.end, true }

func (c *requestCtx) Done() <-chan struct{} {
	if c.armed.Load() {
		return c.armedCtx.Done()
	}
	if c.released.Load() {
		return closedChan
	}
	return c.arm().Done()
}

func (c *requestCtx) Err() error {
	if c.armed.Load() {
		return c.armedCtx.Err()
	}
	if c.released.Load() {
		return context.Canceled
	}
	if time.Now().Before(c.end) && c.parent.Err() == nil {
		return nil
	}
	// It has ended: arm it, so that it reports how (the timeout, or the
	// parent's end) and context.Cause finds the cause.
	return c.arm().Err()
}

func (c *requestCtx) Value(key any) any {
	if _, ok := key.(requestKey); ok {
		return c
	}
	if c.armed.Load() {
		return c.armedCtx.Value(key)
	}
	return c.parent.Value(key)
}

// arm makes the standard context, once, and returns it: one that ends at
// end with the request timeout as its cause, or when parent ends, or when
// the request is released.
func (c *requestCtx) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed.Load() {
		c.armedCtx, c.cancel = context.WithDeadlineCause(c.parent, c.end, &fault.RequestTimeoutError{Bound: c.bound})
		if c.released.Load() {
			c.cancel()
		}
		c.armed.Store(true)
	}
	return c.armedCtx
}

// release cancels the context, as a standard one's CancelFunc does.
func (c *requestCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released.Store(true)
	if c.armed.Load() {
		c.cancel()
	}
}

// closedChan is the Done of a released context that was never armed.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// RequestBound reports whether ctx is a request's context under its
// request bound as Begin made it (not one derived from it), and if so
// returns what it bounds and its end: ctx ends when parent does, at end,
// or when the Guard releases the request, which comes only once the
// response body has ended or the round trip has failed. So a transport
// that ends the request at end itself (the h1 engine, with its
// connection's timer) and watches parent for the rest needs nothing of
// ctx while the request is on the connection, and costs the call no
// context. ctx stays what it reports its cause from: a read that the
// transport's own bound ends should report ctx's Err and context.Cause.
func RequestBound(ctx context.Context) (parent context.Context, end time.Time, ok bool) {
	c, ok := ctx.(*requestCtx)
	if !ok {
		return nil, time.Time{}, false
	}
	return c.parent, c.end, true
}

// CallerDeadline reports whether ctx has a deadline of the caller's (or of
// a middleware's), rather than none but its request bound's: the header
// bound, which applies to a request without a deadline (Begin), applies
// under a request bound alone. A transport that bounds the header wait
// itself (backend.HeaderTimer) asks this rather than ctx.Deadline.
func CallerDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	if !ok {
		return false
	}
	c, _ := ctx.Value(requestKey{}).(*requestCtx)
	return c == nil || c.callerDeadline || !d.Equal(c.end)
}
