package bound

import (
	"context"
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
// (which calls Done) makes the standard one, armed: from then on every
// method is armed's, so a waiter (the pool's queue, a retry's backoff,
// net/http) sees an ordinary context, and context.Cause finds armed's
// cause (the request timeout, or the parent's cause), since Cause asks
// Err first, and Value of the cancelCtx key then reaches armed.
//
// A transport that keeps the bound itself (RequestBound: the h1 engine,
// with its connection's timer) watches only parent, so on the path where
// nothing waits no context is made at all.
//
// Ownership: Guard.Begin sets parent, end and callerDeadline before the
// request is sent, and nothing changes them until the Guard is reused
// (a pooled PostFunc call, only when Reusable); armed and released are
// atomic, for any goroutine.
type requestCtx struct {
	parent         context.Context
	end            time.Time     // the request bound's end: before parent's deadline, if any
	bound          time.Duration // request_timeout, for the error
	callerDeadline bool          // parent has a deadline (later than end)
	// armed is the standard context made on demand (arm), with its
	// cancel; nil until then. Set once.
	armed atomic.Pointer[armedCtx]
	// released: the Guard released the request (its body closed, or it
	// failed); the context is cancelled from then on, as a standard one
	// is by its CancelFunc.
	released atomic.Bool
}

// armedCtx is the standard context a requestCtx arms.
type armedCtx struct {
	context.Context
	cancel context.CancelFunc
}

// requestKey finds a request's requestCtx (CallerDeadline).
type requestKey struct{}

func (c *requestCtx) begin(parent context.Context, end time.Time, bound time.Duration, callerDeadline bool) {
	c.parent, c.end, c.bound, c.callerDeadline = parent, end, bound, callerDeadline
	c.armed.Store(nil)
	c.released.Store(false)
}

func (c *requestCtx) Deadline() (time.Time, bool) { return c.end, true }

func (c *requestCtx) Done() <-chan struct{} {
	if a := c.armed.Load(); a != nil {
		return a.Done()
	}
	if c.released.Load() {
		return closedChan
	}
	return c.arm().Done()
}

func (c *requestCtx) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.Err()
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
	if a := c.armed.Load(); a != nil {
		return a.Value(key)
	}
	return c.parent.Value(key)
}

// arm makes the standard context, once: one that ends at end with the
// request timeout as its cause, or when parent ends, or when the request
// is released.
func (c *requestCtx) arm() *armedCtx {
	ctx, cancel := context.WithDeadlineCause(c.parent, c.end, &fault.RequestTimeoutError{Bound: c.bound})
	a := &armedCtx{Context: ctx, cancel: cancel}
	if !c.armed.CompareAndSwap(nil, a) {
		cancel()
		return c.armed.Load()
	}
	// release sets released and then looks for armed; this stored armed
	// and now looks at released: one of the two sees the other.
	if c.released.Load() {
		cancel()
	}
	return a
}

// release cancels the context, as a standard one's CancelFunc does.
func (c *requestCtx) release() {
	c.released.Store(true)
	if a := c.armed.Load(); a != nil {
		a.cancel()
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
