// Package bound bounds the time until a response's headers arrive for
// requests whose context has no deadline, without cutting the body: a
// streamed answer (deferred results, subscriptions) runs on after its
// headers. Both paths use it; http.Client.Timeout would cut the body too.
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

// Guard is one bounded request. A nil *Guard is valid and bounds nothing.
type Guard struct {
	cause  *HeaderTimeoutError
	cancel context.CancelCauseFunc
	timer  *time.Timer
	body   io.ReadCloser
	once   sync.Once
}

// Start returns the context to send a request with, and its Guard. If ctx
// has a deadline or d is not positive, it returns ctx and a nil Guard.
func Start(ctx context.Context, d time.Duration) (context.Context, *Guard) {
	if d <= 0 {
		return ctx, nil
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, nil
	}
	g := &Guard{cause: &HeaderTimeoutError{Bound: d}}
	ctx, g.cancel = context.WithCancelCause(ctx)
	g.timer = time.AfterFunc(d, g.expire)
	return ctx, g
}

func (g *Guard) expire() { g.cancel(g.cause) }

// Finish takes the round trip's result. It stops the timer; the context
// stays alive until the response body is closed. If the bound passed, the
// error carries the HeaderTimeoutError: the transport's error if it already
// does (net/http reports a context's cause), else that error with the
// timeout added, or the timeout alone if the headers came just too late.
// The caller names the source schema around it.
func (g *Guard) Finish(resp *http.Response, err error) (*http.Response, error) {
	if g == nil {
		return resp, err
	}
	stopped := g.timer.Stop()
	if err != nil {
		g.cancel(nil)
		var hte *HeaderTimeoutError
		if !stopped && !errors.As(err, &hte) {
			return nil, fmt.Errorf("%w (%w)", err, g.cause)
		}
		return nil, err
	}
	if !stopped {
		// The bound passed just as the headers arrived; the body's context
		// is already cancelled, so report the timeout rather than hand out
		// a body that fails on its first read.
		resp.Body.Close()
		g.cancel(nil)
		return nil, g.cause
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
	g.once.Do(func() { g.cancel(nil) })
	return err
}
