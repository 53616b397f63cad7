package backend

import (
	"net/http"
	"time"
)

// Description is what a Pool says of itself (Pool.Describe):
// what it can do beyond RoundTrip and what it can report. The request path
// reads it instead of asking the Pool's type, so a backend states its
// abilities in one place. The zero Description is a Pool that only
// sends: the request path wraps Post's body, bounds the header wait itself
// and reports neither connections nor addresses.
type Description struct {
	// Engine is the engine that speaks HTTP on the Pool's connections
	// (the sockets path: env.EngineH1 or env.EngineNetHTTP). Empty: the
	// path has no engine to name (legacy, a SchemaOptions.RoundTripper).
	Engine string

	// WritesAnyBody: the Pool sends a request body of known length
	// with the request's head in one write whatever the body's type, for
	// every request (the sockets path's h1 engine). The request path then
	// hands Post's body over as it is; otherwise it wraps it as net/http
	// recognises a body held in memory (io.NopCloser around a
	// *bytes.Reader, golang/go#22088), which costs an allocation.
	WritesAnyBody bool

	// Timed bounds the wait for response headers itself, more cheaply than
	// the request path's context and timer (the sockets path arms its
	// HTTP/1 connection's own timer: 9 allocations a call fewer). Nil:
	// the request path bounds it.
	Timed HeaderTimer

	// Conns counts the Pool's open and idle connections, for the
	// status page and the connection gauges. Nil: not known, and neither
	// shows them.
	Conns func() (open, idle int)

	// Addresses reports the schema's addresses (the sockets pool), for
	// the status page and the address gauges. Nil: not known.
	Addresses func() []AddressStats
}

// HeaderTimer is a Pool's own bound on the wait for response headers
// (Description.Timed).
type HeaderTimer interface {
	// TimesHeaders reports whether RoundTripWithin bounds the header wait
	// for every request of s (for the sockets path: HTTP/1.1 over http, or
	// any scheme on the h1 engine).
	TimesHeaders(s *Schema) bool

	// RoundTripWithin sends req, which has no deadline but perhaps its
	// request bound's (bound.CallerDeadline is false), and fails with a
	// *fault.HeaderTimeoutError if its response headers have not arrived
	// within d, counting the time it waits for a connection.
	RoundTripWithin(req *http.Request, d time.Duration) (*http.Response, error)
}
