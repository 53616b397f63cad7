package transport

import (
	"errors"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
)

// Errors of every path. errors.Is matches them in an error from any
// Invoker that New returns, whichever path served the request.
var (
	// ErrClosed is returned for a request after Close, and by Reload
	// after Close.
	ErrClosed = backend.ErrClosed

	// ErrUnknownSchema is wrapped by the error for a request to a source
	// schema that the configuration in force does not name.
	ErrUnknownSchema = backend.ErrUnknownSchema

	// ErrWrongTarget is wrapped by Do's error, on the sockets path, for a
	// request whose URL does not point at its source schema's scheme, host
	// and port (compared as URLs are: host case-insensitive, default ports
	// filled in). Nothing is sent.
	ErrWrongTarget = backend.ErrWrongTarget

	// ErrReloaded is wrapped by the error for a request that a Reload
	// overtook before it was sent (it waited for a connection of a
	// transport the reload replaced) and that cannot go as it is under the
	// new configuration: a Do whose URL is not on the schema's new address,
	// or a request whose schema moved to a new address with other header
	// rules. Nothing was sent, and retry does not send it again. A Post
	// goes to the schema's new URL; see docs/design.md, "Reload".
	ErrReloaded = bound.ErrReloaded

	// ErrCircuitOpen is wrapped by the error for a request that its source
	// schema's circuit breaker refused (circuit_breaker.enabled): the
	// breaker is open, or half-open with its trial calls in flight. The
	// error names the schema. Nothing was sent, retry does not send it
	// again, and under a canary a call that the sockets side's breaker
	// refused goes to legacy.
	ErrCircuitOpen = bound.ErrCircuitOpen

	// ErrOverloaded is wrapped by the error for a request that the sockets
	// path refused because max_pending_requests requests (default 1024)
	// already waited for a connection of its source schema, at
	// max_conns_per_host. The error names the schema. Nothing was sent,
	// retry does not send it again, and under a canary the call goes to
	// legacy, as one the sockets side's breaker refused.
	ErrOverloaded = bound.ErrOverloaded

	// ErrRateLimited is wrapped by the error for a request that its source
	// schema's rate limit refused (rate_limit): its turn would not come
	// within rate_limit.wait (0: at once) or before its deadline. The
	// error names the schema and the limit, e.g. `rate limit exceeded for
	// source schema "products" (100/s, burst 10): not sent`.
	// Nothing was sent, retry does not send it again, a circuit breaker
	// does not count it, and under a canary it is neither sent on legacy
	// nor counted on either side: the limit is the schema's, shared by
	// both paths.
	ErrRateLimited = bound.ErrRateLimited

	// ErrUnaskedUpgrade is wrapped by the error for a response that turns
	// the connection over to another protocol (101 Switching Protocols) when
	// the request did not ask for an upgrade. The connection is closed at
	// once, on every path.
	ErrUnaskedUpgrade = errors.New("unasked protocol switch")
)

// HeaderTimeoutError is the cause of a request cancelled because its
// response headers did not arrive within its source schema's
// header_timeout, on every path and engine; get it with errors.As. It
// matches context.DeadlineExceeded with errors.Is and reports Timeout()
// true, as a net.Error does. Its fields:
//
//   - Bound time.Duration: the header_timeout that passed. It counts the
//     time the request waited for a connection.
//   - Queued time.Duration: how much of Bound the request spent waiting for
//     a connection (at max_conns_per_host), where the path knows it (the
//     sockets path); zero otherwise.
//
// The type is defined in the request path's internals, which every path
// shares; this name is the one to use.
type HeaderTimeoutError = bound.HeaderTimeoutError

// RequestTimeoutError is the cause of a request cancelled by its source
// schema's request_timeout, on every path; get it with errors.As. It
// matches context.DeadlineExceeded with errors.Is and reports Timeout()
// true. Its field Bound time.Duration is the request_timeout that passed.
type RequestTimeoutError = bound.RequestTimeoutError
