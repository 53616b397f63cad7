// Package backend is the contract between the one request path (package
// transport) and the paths that send a source schema's requests (legacy,
// sockets): each path is a Backend. The words are used so everywhere: a
// path is legacy or sockets, the way a schema's requests are sent; an
// engine is how the sockets path speaks HTTP/1.1 on its connections (h1 or
// nethttp, the engine: key); a backend is a path's implementation of this
// package's interface. The request path owns everything the paths share: the schema
// table and its lookup, Reload as one all-or-nothing swap, header rules,
// time bounds, error naming, telemetry, the request log, the middleware
// chain and the built-in middleware. A backend only turns one source
// schema's settings into the thing that sends, says whether a reload can
// keep what it built, and drains what a reload replaced.
//
// A new path is a new folder under internal/ with a type that implements
// Backend, and one line in the root package's registry (switch.go).
package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/headers"
)

// ErrDrained is the backends' own error; the errors the request path
// reports to callers are package fault's.
var (
	// ErrDrained is returned by a Pool whose RoundTrip found it
	// draining before anything was sent: a reload replaced it, or removed
	// its source schema. The request path then sends the request on the
	// schema's current transport (see Resend).
	ErrDrained = errors.New("transport drained")
)

// SchemaOptions are the Go-only settings of one source schema that a
// backend reads: its dial and TLS hooks. The request path copies them from
// the root package's transport.SchemaOptions, which documents them for
// users; the other Go-only settings (a RoundTripper, middleware, computed
// headers) are the request path's own.
type SchemaOptions struct {
	// Dial opens the schema's connections (both paths; legacy: those to
	// its URL's host and port); nil: the backend's dialer. See
	// transport.SchemaOptions.Dial for what engine h1 needs of the
	// connection it returns.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// VerifyConnection is called after the TLS handshake (both paths;
	// legacy: for connections to its URL's host and port), as
	// tls.Config.VerifyConnection; nil: none.
	VerifyConnection func(tls.ConnectionState) error
}

// Schema is one source schema of one configuration, as a backend sees it.
// The request path fills it; a backend must not modify it.
type Schema struct {
	// Name is the source schema's name.
	Name string
	// URL is its parsed, validated url.
	URL *url.URL
	// Settings are its effective settings (env.Config.Effective).
	Settings env.Settings
	// Config is the whole configuration the schema belongs to, for the
	// settings a backend shares between schemas (the legacy path's shared
	// transport reads Defaults and Legacy).
	Config *env.Config
	// Options are its Go-only dial and TLS hooks.
	Options SchemaOptions
	// LookupEnv reads the proxy variables. Never nil.
	LookupEnv func(string) (string, bool)
	// Log receives the backend's events. Never nil.
	Log *slog.Logger
	// Resolver resolves the schema's host (sockets path); nil:
	// net.DefaultResolver.
	Resolver Resolver
	// OnAddress receives the ejections of the schema's addresses and their
	// returns (sockets path); nil: none. It must be quick. ctx is that of
	// the request whose failure ejected the address (the request's values,
	// without its cancellation, when a dial failed); a return, which a
	// timer makes, has no request: context.Background().
	OnAddress func(ctx context.Context, ev AddressEvent)
	// OnQueue is for tests only; nil in production. The sockets path's
	// pool calls it under its lock, with the request's context, on each
	// event of its wait queue (see QueueEvent). It must not call into the
	// pool.
	OnQueue func(ctx context.Context, event QueueEvent)
}

// QueueEvent is what happened to a request in the wait queue of a sockets
// pool (Schema.OnQueue).
type QueueEvent string

// The events of a pool's wait queue. A request joins the tail
// (QueueJoined), goes back to the head after the connection it was handed
// failed its reservation (QueueRequeued), is handed a connection or leave
// to dial (QueueServed, also when a dial whose requester gave up hands its
// connection to the head), leaves unserved (QueueLeft: its context ended,
// its queue deadline passed, or the pool drained), or is refused at
// max_pending_requests (QueueRefused). A request served without waiting
// (nobody waited) reports QueueServed only.
const (
	QueueJoined   QueueEvent = "joined"
	QueueRequeued QueueEvent = "requeued"
	QueueServed   QueueEvent = "served"
	QueueLeft     QueueEvent = "left"
	QueueRefused  QueueEvent = "refused"
)

// Resolver resolves a host to its addresses, as *net.Resolver does.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AddressEvent is an address of a source schema leaving service (Ejected)
// or coming back.
type AddressEvent struct {
	Address  netip.Addr
	Ejected  bool          // false: back in service
	For      time.Duration // how long the ejection lasts; zero on a return
	Failures int           // the failures in a row that ejected it; zero on a return
}

// AddressStats is one address of a source schema's pool.
type AddressStats struct {
	Address   netip.Addr
	Conns     int  // open connections to it
	Idle      int  // of which idle
	InFlight  int  // requests in flight to it (the pool's balancing load)
	Ejected   bool // out of service for now (outlier detection)
	Ejections int  // its ejection multiplier
	Gone      bool // no longer in DNS's answer; its connections drain
}

// Key says what a Pool was built from. The request path keeps a
// schema's Pool across a reload when the new Key is Equal to the old.
type Key interface {
	Equal(Key) bool
}

// Pool is the connections that send the requests of one source schema
// (the sockets path's pool), or a handle on connections shared by several
// (the legacy path's rotating http.Transport): the innermost RoundTripper
// of the schema's pipeline. The public faces of the paths, sockets.Transport
// and legacy.Transport, each wrap one.
type Pool interface {
	http.RoundTripper

	// Drain stops the Pool: a request that has not started fails with
	// ErrDrained (the request path moves it to the schema's current
	// Pool), idle connections close at once and the others as soon as
	// their requests end. The request path calls it once, after a reload
	// that replaced or removed the Pool's schema, or on Close.
	Drain()

	// Describe says what the Pool is and can do. The request path
	// calls it once, when it builds a route on the Pool, and keeps the
	// answer for the route's life (the status page and the gauges read it
	// there); it must not change while the Pool is in use. A
	// Pool that offers nothing beyond RoundTrip returns the zero
	// Description.
	Describe() Description
}

// Backend is one path's implementation. Its methods are called by the request path under
// its reload lock, never concurrently with each other; the Pools they
// return are used concurrently.
type Backend interface {
	// Key returns what Open would build s's Pool from. It may read
	// files (TLS certificates); an error names the key and the file.
	Key(s *Schema) (Key, error)

	// Open builds s's Pool from k (the value Key returned). Nothing it
	// builds is in use until the request path swaps the new configuration
	// in; if the reload fails, the request path drains it.
	Open(s *Schema, k Key) (Pool, error)

	// Front says how the schema's requests enter the backend. next is the
	// schema's pipeline (telemetry, request log, middleware, built-ins)
	// around its Pool.
	//
	// A backend bound to one address returns nil: the request path applies
	// the header rules once, before next, and Do sends only to the schema's
	// scheme and address (fault.ErrWrongTarget otherwise).
	//
	// A backend with a client of its own (legacy: redirects) returns the
	// RoundTripper that the request path calls instead of next: it must
	// call next for every request it sends (every redirect hop) and apply
	// rules itself, to the hops that go to the first request's host.
	Front(s *Schema, rules headers.Rules, next http.RoundTripper) http.RoundTripper

	// Middleware returns the per-request middleware the backend adds for s,
	// innermost in its pipeline, built again on every reload (the sockets
	// path's decompression). Nil: none.
	Middleware(s *Schema) []func(http.RoundTripper) http.RoundTripper

	// Ignored lists the keys of cfg that are set and that this backend does
	// not read, for the one startup log line that says so. Nil: none.
	Ignored(cfg *env.Config) []string

	// Close releases what the backend shares between its Pools, once
	// the request path has drained them all.
	Close()
}
