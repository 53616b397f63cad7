package transport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gqlhttp"
)

// PostFunc sends body to source schema name's URL as Post does, through
// the same request path (header rules, bounds, middleware, retry, hedge,
// dedupe, circuit breaker, rate limit), and calls fn with the response.
// The response is borrowed: it, its Header (every string in it), its
// Trailer and its Body are valid only until fn returns. PostFunc then
// closes the body, as Post's caller would (a body fn did not read to its
// end costs the connection, as Close does), and may reuse the memory of
// the request and of the response for another call. So fn must copy what
// it keeps; a Read of the body after fn returns fails with
// fault.ErrBodyReleased, and never yields another call's bytes, and a
// Close after fn returns does nothing. Reading the body from another
// goroutine is allowed until fn returns; that goroutine may close it
// later (a deferred Close), which touches no other call.
//
// PostFunc returns Post's error without calling fn, or fn's error wrapped
// ("source schema %q: callback: %w"), so that errors.Is and errors.As
// find it. If fn panics, the body is closed (its connection is closed
// unless the answer was read to its end already), nothing is reused, and
// the panic goes on.
//
// The memory is pooled on the sockets path's h1 engine when the schema's
// request path holds neither the request nor the response after it
// returns: no telemetry, request log, header_timeout enforced by the
// request path, or middleware (WithMiddleware, SchemaOptions.Middleware or
// AttemptMiddleware), no hedge sent for the call (hedging may be on), the
// call is not moved by a reload to another engine, and its request_timeout
// neither passed nor was waited on (by the pool's queue, a retry's backoff
// or the rate limit). Dedupe keeps the pooling: a call another joined gets
// a copy its followers share, and its pooled response memory is left to
// the garbage collector. Anywhere else PostFunc costs what Post does, with
// the same guarantees.
func (inv *Transport) PostFunc(ctx context.Context, name string, body []byte, fn func(*http.Response) error) error {
	var r *route
	var e *entry
	if inv.rollout != nil {
		// The runtime rollout's choice (rollout.go); nil when the
		// startup switch decides.
		var err error
		if r, e, err = inv.rolloutRoute(ctx, name, body, ""); err != nil {
			return err
		}
	}
	if r == nil && (inv.canary != nil || inv.shadow != nil) {
		// The canary and shadow choose a route per call and may send on
		// two: their responses are Post's own.
		resp, err := inv.postStartup(ctx, name, body, e)
		if err != nil {
			return err
		}
		return callBack(name, resp, fn, nil)
	}
	if r == nil {
		e, err := inv.entryOf(name)
		if err != nil {
			return err
		}
		r = e.primary
		inv.countStartup(e, r.path)
	}
	if !r.lends {
		resp, err := r.post(ctx, body)
		if err != nil {
			return err
		}
		return callBack(name, resp, fn, nil)
	}
	c := lentCalls.Get().(*lentCall)
	if c.header == nil {
		c.header = gqlhttp.Header(r.rules.Len())
		c.getBody = c.postCall.getBody
	} else {
		gqlhttp.ResetHeader(c.header)
	}
	c.ctx = borrowCtx{Context: ctx, b: &c.borrow}
	resp, err := r.postOn(&c.ctx, &c.postCall, c.header, c.getBody, body)
	if c.borrow.Spoiled() {
		// A reload moved the call to a transport that may still read
		// the request: c is left to the garbage collector.
		c.borrow.Forget()
		c = nil
	}
	if err != nil {
		// The pipeline has returned: nothing else holds c. An attempt's
		// response that a retry replaced is not returned (Borrow.Keep).
		if c != nil {
			c.borrow.Forget()
			c.recycle()
		}
		return err
	}
	return callBack(name, resp, fn, c)
}

// callBack calls fn with resp, whose body it then closes and releases;
// c, if not nil, is the call's pooled memory, given back once the body is
// closed, unless fn panics.
func callBack(name string, resp *http.Response, fn func(*http.Response) error, c *lentCall) error {
	rb := &releasedBody{rc: resp.Body}
	resp.Body = rb
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked: the body closes, and the memory is left to the
		// garbage collector, since whoever recovers may hold it.
		rb.release()
		if c != nil {
			c.borrow.Forget()
		}
	}()
	err := fn(resp)
	returned = true
	rb.release()
	if c != nil {
		c.borrow.Return()
		c.recycle()
	}
	if err != nil {
		return fmt.Errorf("source schema %q: callback: %w", name, err)
	}
	return nil
}

// releasedBody is a PostFunc response's body as the callback sees it:
// once released, Read fails with fault.ErrBodyReleased and Close does
// nothing, so that a body kept past the callback (a goroutine's deferred
// Close, say) never touches memory another call has taken over. It is the
// one allocation of a pooled PostFunc: it must outlive the call.
type releasedBody struct {
	// mu is held for reading by each Read and Close for as long as it
	// uses rc, and for writing by release as it clears rc: release waits
	// for a Read or Close under way, and the call's memory (rc's, and
	// the response's) is reused only after that.
	mu sync.RWMutex
	rc io.ReadCloser // the body; nil once released. Guarded by mu
	// closed: rc.Close has been called, or is being called, by Close or
	// release; only the first of them closes rc, so that a Close in
	// another goroutine never runs at once with release's.
	closed atomic.Bool
}

func (b *releasedBody) Read(p []byte) (int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.rc == nil {
		return 0, fault.ErrBodyReleased
	}
	return b.rc.Read(p)
}

// Close closes the body; a Read after it fails as the body's own does.
// After the callback has returned it does nothing.
func (b *releasedBody) Close() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.rc == nil || !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	return b.rc.Close()
}

// release closes the body, unless Close did, which ends a Read under way
// in another goroutine; then it waits for that Read, or a Close under way,
// to return and cuts the body off. Only release writes rc, so it reads rc
// without the lock.
func (b *releasedBody) release() {
	if b.rc == nil {
		return
	}
	if b.closed.CompareAndSwap(false, true) {
		b.rc.Close()
	}
	b.mu.Lock()
	b.rc = nil
	b.mu.Unlock()
}

// lentCall is a PostFunc call's memory on a route that lends (route.lends),
// pooled in lentCalls: the Post it sends, its header map and GetBody, made
// once, and the Borrow of the response's memory, found through its
// context. Owned by one call at a time, from lentCalls.Get until recycle.
type lentCall struct {
	postCall
	header  http.Header                   // the request's header map, reset for each call (gqlhttp.ResetHeader)
	getBody func() (io.ReadCloser, error) // postCall.getBody, made once
	ctx     borrowCtx                     // the call's context: the caller's, with borrow
	borrow  backend.Borrow                // the response's memory, kept by the transport
}

var lentCalls = sync.Pool{New: func() any { return new(lentCall) }}

// recycle empties c, keeping its header map and GetBody, and puts it back
// in the pool. The request path has returned, the body is closed, and the
// Borrow returned or forgotten: nothing holds c, unless its bounds made a
// context or timer that may still run (bound.Guard.Reusable), and then c
// is left to the garbage collector.
func (c *lentCall) recycle() {
	if !c.guard.Reusable() {
		return
	}
	clear(c.header)
	c.postCall = postCall{}
	c.ctx = borrowCtx{}
	lentCalls.Put(c)
}

// borrowCtx is a PostFunc call's context: the caller's, in every way but
// that it carries the call's Borrow (backend.BorrowOf). It lives in the
// lentCall, so that it costs no allocation.
type borrowCtx struct {
	context.Context
	b *backend.Borrow
}

func (c *borrowCtx) Value(key any) any {
	if _, ok := key.(backend.BorrowKey); ok {
		return c.b
	}
	return c.Context.Value(key)
}
