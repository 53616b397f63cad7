// Package bound bounds a source schema request in time, as both paths need
// it: the time until its response headers arrive, for requests whose
// context has no deadline, without cutting the body (a streamed answer,
// deferred results or a subscription, runs on after its headers), and the
// whole request, body included, when a request timeout is configured.
// http.Client.Timeout would cut every body.
package bound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/redact"
)

// Target names what a request is for, so that an error reading its body
// names the source schema as the request's own errors do.
type Target struct {
	Schema string
	Method string
	URL    *url.URL
}

// Err wraps err as both paths report errors: the source schema around a
// *url.Error with the method and the URL as outputs show it
// (redact.Request: no userinfo, query or fragment).
func (t Target) Err(err error) error {
	u := ""
	if t.URL != nil {
		u = redact.Request(t.URL)
	}
	return fmt.Errorf("source schema %q: %w", t.Schema, &url.Error{Op: urlErrorOp(t.Method), URL: u, Err: err})
}

// urlErrorOp spells a method as net/http's errors do: "Post", "Get".
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// Guard is one request in flight: its bounds, and the wrapper of its body
// that names the source schema in read errors.
//
// Ownership: Begin sets every field but header and released before the
// request is sent; after that only header (the timer's state), released
// and req's atomics change, atomically, and body is set by Finish, on the
// request's goroutine, before anyone reads the body.
type Guard struct {
	target      Target
	headerCause fault.HeaderTimeoutError // its Bound is zero without a header bound
	cancel      context.CancelCauseFunc
	// req is the request's context under the request bound (requestCtx),
	// part of the Guard so that it costs no allocation; its parent is nil
	// without a request bound.
	req   requestCtx
	timer *time.Timer // nil: no header bound
	// header is the header timer's state: headerArmed until the timer
	// fires (headerFired) or the headers are in (headerIn, by Finish or
	// HeadersIn), whichever comes first; it never changes after that.
	header atomic.Int32
	// outer is the guard of an enclosing call whose header bound also
	// runs (a canary's re-send spends the first attempt's bounds): the
	// headers being in stop its timer too. Set by Begin.
	outer    *Guard
	ctx      guardCtx // the context Begin returns with a header bound: it finds g for HeadersIn
	body     io.ReadCloser
	released atomic.Bool // release ran
}

// The states of Guard.header.
const (
	headerArmed int32 = iota
	headerIn
	headerFired
)

// guardCtx is the context of a request under a header bound: the
// Context, which it is in every other way, and its Guard, for HeadersIn.
type guardCtx struct {
	context.Context
	g *Guard
}

type guardKey struct{}

func (c *guardCtx) Value(key any) any {
	if _, ok := key.(guardKey); ok {
		return c.g
	}
	return c.Context.Value(key)
}

// HeadersIn tells the header bound of the request whose context is ctx
// (and of the calls it is part of) that its response headers are in: the
// header timer stops, and only the body bounds (deadline, request bound)
// still apply. Finish does this for the request path's own calls; a
// middleware that reads a response body before its RoundTrip returns
// (dedupe's shared read) calls it for its caller, so that the read is not
// cut by a header timeout. It does nothing for a context without a header
// bound, or once the bound has passed.
func HeadersIn(ctx context.Context) {
	g, _ := ctx.Value(guardKey{}).(*Guard)
	for ; g != nil; g = g.outer {
		g.headersIn()
	}
}

// headersIn stops g's header timer and reports whether it had fired
// before. g has a header bound.
func (g *Guard) headersIn() (fired bool) {
	if g.header.CompareAndSwap(headerArmed, headerIn) {
		g.timer.Stop()
		return false
	}
	return g.header.Load() == headerFired
}

// Begin arms g for a request and returns the context to send it with. The
// header bound applies if header is positive and ctx has no deadline; the
// request bound if request is positive and ctx has no earlier deadline. g
// is usually part of a larger per-request struct, to save an allocation;
// it must be a zero Guard.
//
// The request bound makes no context, timer or goroutine until something
// waits on it or it passes (requestCtx); the header bound makes a context
// and a timer, which is why a transport that can bound the header wait on
// its connection does so instead (backend.HeaderTimer, CallerDeadline).
func (g *Guard) Begin(ctx context.Context, t Target, header, request time.Duration) context.Context {
	deadline, hasDeadline := ctx.Deadline()
	headerBound := header > 0 && !hasDeadline
	g.target = t
	if request > 0 {
		if end := time.Now().Add(request); !hasDeadline || deadline.After(end) {
			g.req.begin(ctx, end, request, hasDeadline)
			ctx = &g.req
		}
	}
	if headerBound {
		g.outer, _ = ctx.Value(guardKey{}).(*Guard)
		ctx, g.cancel = context.WithCancelCause(ctx)
		g.headerCause.Bound = header
		g.ctx = guardCtx{Context: ctx, g: g}
		ctx = &g.ctx
		g.timer = time.AfterFunc(header, g.expire)
	}
	return ctx
}

func (g *Guard) expire() {
	if g.header.CompareAndSwap(headerArmed, headerFired) {
		g.cancel(&g.headerCause)
	}
}

// Finish takes the round trip's result. It stops the header timer; the
// context stays alive until the response body is closed. If the header
// bound passed, the error carries the fault.HeaderTimeoutError: the transport's
// error if it already does (net/http reports a context's cause), else that
// error with the timeout added, or the timeout alone if the headers came
// just too late. The caller names the source schema around it; the body's
// read errors are named here.
func (g *Guard) Finish(resp *http.Response, err error) (*http.Response, error) {
	fired := g.timer != nil && g.headersIn()
	if err != nil {
		g.release()
		if fired {
			if _, ok := errors.AsType[*fault.HeaderTimeoutError](err); !ok {
				return nil, fmt.Errorf("%w (%w)", err, &g.headerCause)
			}
		}
		return nil, err
	}
	if fired {
		// The bound passed just as the headers arrived; the body's context
		// is already cancelled, so report the timeout rather than hand out
		// a body that fails on its first read.
		resp.Body.Close()
		g.release()
		return nil, &g.headerCause
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if _, ok := resp.Body.(io.ReadWriteCloser); ok {
			// The connection now belongs to the caller: the request is
			// over, and no bound of it cuts the connection. The body stays
			// writable.
			g.release()
			return resp, nil
		}
	}
	g.body = resp.Body
	resp.Body = g
	return resp, nil
}

// Read reads the response body. An error other than io.EOF names the
// source schema and wraps the cause.
func (g *Guard) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	if err != nil && err != io.EOF {
		err = g.target.Err(err)
	}
	return n, err
}

// Close closes the response body and releases the request's context.
func (g *Guard) Close() error {
	err := g.body.Close()
	g.release()
	return err
}

func (g *Guard) release() {
	if g.cancel == nil && g.req.parent == nil {
		return
	}
	if !g.released.CompareAndSwap(false, true) {
		return
	}
	if g.cancel != nil {
		g.cancel(nil)
	}
	if g.req.parent != nil {
		g.req.release()
	}
}

// Reusable reports whether g's memory may serve another request once the
// request is released (its body closed, or its round trip failed): it
// made no context or timer that may still run and reach it (the request
// bound armed, a header bound). A pooled call (transport.PostFunc) whose
// Guard is not reusable is left to the garbage collector: the rare call
// that waited on its bound, or whose bound passed.
func (g *Guard) Reusable() bool {
	return g.timer == nil && !g.req.armed.Load()
}
