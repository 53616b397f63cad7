// Package fault defines the errors of the transport: the sentinels of a
// request refused or stopped before it was sent, and the causes of a
// request cut by one of its time bounds. Every path, engine and policy
// reports these same values (package transport's Invoker, package sockets'
// Transport, package middleware's policies), so that errors.Is and
// errors.As match them whichever produced the error.
//
//	resp, err := inv.Post(ctx, "products", body)
//	var hte *fault.HeaderTimeoutError
//	switch {
//	case errors.Is(err, fault.ErrCircuitOpen):
//		// not sent: the schema's breaker is open
//	case errors.As(err, &hte):
//		// no response headers within hte.Bound
//	}
//
// Every error that wraps one of these names its source schema, but where no
// schema serves the request: one routed by its URL (transport.Client,
// RoundTripper) that matches none, or any after Close, names its method and
// URL instead, and package legacy's shared Transport, which serves no one
// schema, returns ErrClosed as it is. The package imports nothing of this
// module, so that any package can report them.
package fault

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinels. A request that fails with one of the "not sent" errors below
// was not sent, and the built-in retry does not send it again.
var (
	// ErrClosed is returned for a request after its Invoker or Transport
	// was closed, and by Reload after Close. Not sent.
	ErrClosed = errors.New("transport closed")

	// ErrUnknownSchema is wrapped by the error for a request to a source
	// schema that the configuration in force does not name. Not sent.
	ErrUnknownSchema = errors.New("unknown source schema")

	// ErrWrongTarget is wrapped by the error for a request whose URL does
	// not point at its source schema's scheme, host and port (compared as
	// URLs are: host case-insensitive, default ports filled in), on the
	// sockets path (transport.Invoker.Do, sockets.Transport.RoundTrip),
	// which is bound to that address. Not sent.
	ErrWrongTarget = errors.New("request URL does not match the source schema")

	// ErrReloaded is wrapped by the error for a request that a Reload
	// overtook before it was sent (it waited for a connection of a
	// transport the reload replaced) and that cannot go as it is under the
	// new configuration: a Do whose URL is not on the schema's new address,
	// or a request whose schema moved to a new address with other header
	// rules. Not sent. A Post goes to the schema's new URL; see
	// docs/design.md, "Reload".
	ErrReloaded = errors.New("reloaded")

	// ErrCircuitOpen is wrapped by the error for a request that its source
	// schema's circuit breaker refused (circuit_breaker.enabled,
	// middleware.Breaker): the breaker is open, or half-open with its trial
	// calls in flight. The error names the schema. Not sent; under a canary
	// a call that the sockets side's breaker refused goes to legacy.
	ErrCircuitOpen = errors.New("circuit breaker open")

	// ErrOverloaded is wrapped by the error for a request that the sockets
	// path refused because max_pending_requests requests (default 1024)
	// already waited for a connection of its source schema, at
	// max_conns_per_host. The error names the schema. Not sent; under a
	// canary the call goes to legacy, as one the sockets side's breaker
	// refused.
	ErrOverloaded = errors.New("too many requests waiting for a connection")

	// ErrRateLimited is wrapped by the error for a request that its source
	// schema's rate limit refused (rate_limit, middleware.RateLimiter): its
	// turn would not come within rate_limit.wait (0: at once) or before its
	// deadline. The error names the schema and the limit, e.g. `rate limit
	// exceeded for source schema "products" (100/s, burst 10): not sent`.
	// Not sent; a circuit breaker does not count it, and under a canary it
	// is neither sent on legacy nor counted on either side: the limit is the
	// schema's, shared by both paths.
	ErrRateLimited = errors.New("rate limit exceeded")

	// ErrUnaskedUpgrade is wrapped by the error for a response that turns
	// the connection over to another protocol (101 Switching Protocols)
	// when the request did not ask for an upgrade, or upgraded to another
	// protocol than the one asked. The connection is closed at once, on
	// every path.
	ErrUnaskedUpgrade = errors.New("unasked protocol upgrade")
)

// ErrNoCache is wrapped by the error of transport.Transport.InvalidateCache
// for a source schema whose response cache is off (response_cache.enabled).
var ErrNoCache = errors.New("response cache off")

// ErrBodyReleased is returned by a Read of a body that transport.PostFunc
// lent to its callback, once the callback has returned: the body's memory
// may serve another call by then, and the Read yields none of it.
var ErrBodyReleased = errors.New("response body read after the PostFunc callback returned")

// HeaderTimeoutError is the cause of a request cancelled because its
// response headers did not arrive within its source schema's
// header_timeout, on every path and engine; get it with errors.As. It
// matches context.DeadlineExceeded with errors.Is and reports Timeout()
// true, as a net.Error does.
type HeaderTimeoutError struct {
	// Bound is the header_timeout that passed. It counts the time the
	// request waited for a connection.
	Bound time.Duration
	// Queued is how much of Bound the request spent waiting for a
	// connection (at max_conns_per_host), where the path knows it (the
	// sockets path); zero otherwise.
	Queued time.Duration
}

func (e *HeaderTimeoutError) Error() string {
	if e.Queued > 0 {
		return fmt.Sprintf("no response headers within %s (header_timeout), %s of it waiting for a connection", e.Bound, e.Queued.Round(time.Millisecond))
	}
	return fmt.Sprintf("no response headers within %s (header_timeout)", e.Bound)
}

// Timeout reports true, as net.Error does for timeouts.
func (e *HeaderTimeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *HeaderTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// RequestTimeoutError is the cause of a request cancelled by its source
// schema's request_timeout, on every path; get it with errors.As. It
// matches context.DeadlineExceeded with errors.Is and reports Timeout()
// true.
type RequestTimeoutError struct {
	// Bound is the request_timeout that passed.
	Bound time.Duration
}

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("request not complete within %s (request_timeout)", e.Bound)
}

// Timeout reports true, as net.Error does for timeouts.
func (e *RequestTimeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *RequestTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// The header rules' refusals: a request whose forwarded headers the rules
// would not send fails before anything is written, on every path (Post,
// PostFunc, Do, Client), with an error that names the header and the
// source schema and wraps one of these. Not sent.
var (
	// ErrHeadersTooLarge is wrapped by the error for a request whose
	// forwarded headers (each line counted whole: name, ": ", value, CRLF)
	// go over its source schema's headers.max_forwarded_bytes.
	ErrHeadersTooLarge = errors.New("forwarded headers over their size bound (headers.max_forwarded_bytes)")

	// ErrInvalidHeaderValue is wrapped by the error for a request whose
	// forwarded header value holds CR, LF or NUL, which could split the
	// request if it were ever written raw.
	ErrInvalidHeaderValue = errors.New("header value contains CR, LF or NUL")
)
