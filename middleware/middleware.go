package middleware

import (
	"errors"
	"net/http"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/sharekey"
)

// Middleware wraps a RoundTripper of a source schema's pipeline: it
// returns a RoundTripper that does its part and calls next.
type Middleware = func(next http.RoundTripper) http.RoundTripper

// Chain returns rt wrapped in mws, mws[0] outermost: a request passes
// through mws[0] first and rt last. Nil entries are skipped. A nil rt is
// http.DefaultTransport, as for http.Client.
func Chain(rt http.RoundTripper, mws ...Middleware) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			rt = mws[i](rt)
		}
	}
	return rt
}

// wrapped is embedded by every middleware's RoundTripper. It passes
// CloseIdleConnections on, so that http.Client.CloseIdleConnections and
// pool cleanups still reach the transport at the end of the chain.
type wrapped struct {
	next http.RoundTripper
}

// wrap returns a wrapped that calls next, or http.DefaultTransport if next
// is nil.
func wrap(next http.RoundTripper) wrapped {
	if next == nil {
		next = http.DefaultTransport
	}
	return wrapped{next: next}
}

// CloseIdleConnections closes the idle connections of the next
// RoundTripper, if it has any.
func (w wrapped) CloseIdleConnections() {
	if c, ok := w.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// refusedUnsent reports an error of a request that the gateway itself
// refused or overtook before anything was sent: a circuit breaker or a
// rate limit further in, the sockets path's max_pending_requests
// (ErrOverloaded), a reload, or the end of dedupe's key probe (IsKeyProbe).
// Such a request says nothing of the source schema: the breaker counts it
// neither way, retry does not repeat it and compression saved nothing by
// it. Every policy asks this one function, so that a refusal added later
// is left out by all of them.
func refusedUnsent(err error) bool {
	return err != nil && (errors.Is(err, fault.ErrCircuitOpen) || errors.Is(err, fault.ErrRateLimited) ||
		errors.Is(err, fault.ErrOverloaded) || errors.Is(err, fault.ErrReloaded) || errors.Is(err, sharekey.ErrProbed))
}
