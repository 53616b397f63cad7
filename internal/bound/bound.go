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
	"sync"
	"time"
)

// HeaderTimeoutError is the cause of a request cancelled because its
// response headers did not arrive within the bound. It matches
// context.DeadlineExceeded with errors.Is and reports Timeout() true.
type HeaderTimeoutError struct {
	// Bound is the header timeout that passed.
	Bound time.Duration
}

func (e *HeaderTimeoutError) Error() string {
	return fmt.Sprintf("no response headers within %s (header_timeout)", e.Bound)
}

// Timeout reports true, as net.Error does for timeouts.
func (e *HeaderTimeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *HeaderTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// RequestTimeoutError is the cause of a request cancelled by its
// request_timeout. It matches context.DeadlineExceeded with errors.Is and
// reports Timeout() true.
type RequestTimeoutError struct {
	// Bound is the request timeout that passed.
	Bound time.Duration
}

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("request not complete within %s (request_timeout)", e.Bound)
}

// Timeout reports true, as net.Error does for timeouts.
func (e *RequestTimeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *RequestTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Guard is one bounded request. A nil *Guard is valid and bounds nothing.
type Guard struct {
	headerCause *HeaderTimeoutError // nil: no header bound
	cancel      context.CancelCauseFunc
	stopRequest context.CancelFunc // nil: no request bound
	timer       *time.Timer
	body        io.ReadCloser
	once        sync.Once
}

// Start returns the context to send a request with, and its Guard. The
// header bound applies if header is positive and ctx has no deadline; the
// request bound if request is positive and ctx has no earlier deadline.
// Without either, Start returns ctx and a nil Guard.
func Start(ctx context.Context, header, request time.Duration) (context.Context, *Guard) {
	deadline, hasDeadline := ctx.Deadline()
	headerBound := header > 0 && !hasDeadline
	requestBound := request > 0 && (!hasDeadline || time.Until(deadline) > request)
	if !headerBound && !requestBound {
		return ctx, nil
	}
	g := &Guard{}
	if requestBound {
		ctx, g.stopRequest = context.WithTimeoutCause(ctx, request, &RequestTimeoutError{Bound: request})
	}
	ctx, g.cancel = context.WithCancelCause(ctx)
	if headerBound {
		g.headerCause = &HeaderTimeoutError{Bound: header}
		g.timer = time.AfterFunc(header, g.expire)
	}
	return ctx, g
}

func (g *Guard) expire() { g.cancel(g.headerCause) }

// Finish takes the round trip's result. It stops the header timer; the
// context stays alive until the response body is closed. If the header
// bound passed, the error carries the HeaderTimeoutError: the transport's
// error if it already does (net/http reports a context's cause), else that
// error with the timeout added, or the timeout alone if the headers came
// just too late. The caller names the source schema around it.
func (g *Guard) Finish(resp *http.Response, err error) (*http.Response, error) {
	if g == nil {
		return resp, err
	}
	fired := g.timer != nil && !g.timer.Stop()
	if err != nil {
		g.release()
		var hte *HeaderTimeoutError
		if fired && !errors.As(err, &hte) {
			return nil, fmt.Errorf("%w (%w)", err, g.headerCause)
		}
		return nil, err
	}
	if fired {
		// The bound passed just as the headers arrived; the body's context
		// is already cancelled, so report the timeout rather than hand out
		// a body that fails on its first read.
		resp.Body.Close()
		g.release()
		return nil, g.headerCause
	}
	g.body = resp.Body
	resp.Body = g
	return resp, nil
}

// Read reads the response body.
func (g *Guard) Read(p []byte) (int, error) { return g.body.Read(p) }

// Close closes the response body and releases the request's context.
func (g *Guard) Close() error {
	err := g.body.Close()
	g.release()
	return err
}

func (g *Guard) release() {
	g.once.Do(func() {
		g.cancel(nil)
		if g.stopRequest != nil {
			g.stopRequest()
		}
	})
}
