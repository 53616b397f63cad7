// Package sockets is the sockets path's public face: an owned transport
// for one source schema, an http.RoundTripper with the path's engines,
// settings and guarantees, for a program that wants that transport alone,
// the way fasthttp's HostClient or an http.Transport per upstream is used.
//
//	rt, err := sockets.New(sockets.Config{Name: "products", URL: "http://products:4001/graphql"})
//	if err != nil {
//		return err
//	}
//	defer rt.Close()
//	client := &http.Client{Transport: rt}
//
// A Transport owns one pool of connections to the schema's address, with
// reverse-proxy defaults: no cookies (it has no jar), no redirects (a
// RoundTripper follows none; an http.Client in front would, unless its
// CheckRedirect says otherwise), no decompression (decompression opts in),
// no proxy (proxy opts in; the environment's proxy variables are read only
// for proxy: environment), connections dialled within connect_timeout (15s)
// and closed at conn_lifetime (2m, less a random tenth), idle ones after
// idle_conn_timeout (90s); before an idle connection is reused it is
// checked for bytes the server sent while it was idle (the stray-byte
// guard), and such a connection is closed, never read from. HTTP/1.1 over
// http goes through the owned h1 engine by default (engine: h1), the rest
// through net/http's ClientConn (engine nethttp); both follow the same pool
// rules. A request without a deadline is bounded until its response headers
// by header_timeout (100s); request_timeout, when set, bounds it whole.
//
// What a Transport does not do is the request path's (package transport's
// Invoker): forwarding gateway request headers (headers.*), retries beyond
// the one safe re-send below, dedupe, circuit breaker, hedging, rate limit,
// request compression, reload. New refuses those settings, naming the key.
//
// A request that failed on a reused connection before any byte of an answer
// came, or before any byte of it was written, is sent once more on another
// connection when its body can be replayed (GetBody), as net/http's
// Transport does; nothing else is sent twice.
package sockets

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/setting"
	isockets "github.com/fusiongo/transport/internal/sockets"
)

// Config is a Transport's configuration. Only URL is required; every
// other zero field is its documented default.
type Config struct {
	// Name names the source schema in errors and log lines. Empty: the
	// URL's host.
	Name string

	// URL is the source schema's endpoint: an absolute http or https URL.
	// The Transport sends only to its scheme, host and port; a request for
	// another fails with fault.ErrWrongTarget, unsent. Required.
	URL string

	// Settings are the schema's settings, as a source schema's in a
	// configuration file (docs/configuration.md): every zero field is the
	// built-in default. The keys of the request path (headers.*, retry.*,
	// dedupe, circuit_breaker.*, hedge.*, rate_limit.*,
	// request_compression.*, response_cache.*, persisted_queries.*) must
	// stay zero: New refuses them.
	Settings env.Settings

	// Dial opens the schema's connections instead of the default dialer
	// (a net.Dialer with connect_timeout and keep_alive, or unix_socket).
	// Engine h1 must find the socket under what it returns to check an
	// idle connection before reuse: see transport.SchemaOptions.Dial for
	// the rule. With Dial set, the pool neither resolves the host nor
	// spreads over its addresses. Nil: the default dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// VerifyConnection is called after the TLS handshake and certificate
	// verification, as tls.Config.VerifyConnection: a non-nil error
	// aborts the connection. Nil: none.
	VerifyConnection func(tls.ConnectionState) error

	// Resolver resolves the schema's host for dns_refresh and the spread
	// over its addresses. Nil: net.DefaultResolver.
	Resolver Resolver

	// OnAddress receives each ejection of one of the schema's addresses
	// (outlier_detection), with the context of the request whose failure
	// ejected it, and its return, with context.Background() (a timer ends
	// an ejection). It is called on the pool's goroutines and must be
	// quick. Nil: none.
	OnAddress func(ctx context.Context, e AddressEvent)

	// Logger receives the Transport's events (the engine it chose when h1
	// cannot serve the schema, TLS verification off, a Dial whose socket
	// it cannot check). Nil: slog.Default().
	Logger *slog.Logger

	// LookupEnv reads the proxy variables for proxy: environment. Nil:
	// os.LookupEnv.
	LookupEnv func(key string) (string, bool)
}

// Resolver resolves a host to its addresses, as *net.Resolver does;
// network is "ip".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AddressEvent is one of the schema's addresses leaving service (Ejected)
// or coming back.
type AddressEvent struct {
	Address  netip.Addr
	Ejected  bool          // false: back in service
	For      time.Duration // how long the ejection lasts; zero on a return
	Failures int           // the failures in a row that ejected it; zero on a return
}

// requestPathKeys are the setting keys a Transport does not apply: a
// change of each rebuilds nothing of a pool (setting.Rebuilds) and the
// Transport does not read it per request either.
func requestPathKey(key string) bool {
	switch key {
	case "header_timeout", "request_timeout", "decompression":
		return false // read per request by the Transport
	}
	return setting.Rebuilds(key, env.PathSockets) != setting.RebuildPool
}

// New builds the Transport of c. Its error names the key and value that
// are wrong, or the TLS file that could not be read; nothing is left open.
func New(c Config) (*Transport, error) {
	u, err := redact.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("sockets: url: %w", err)
	}
	name := c.Name
	if name == "" {
		name = u.Host
	}
	for _, key := range setting.Diff(env.Settings{}, c.Settings) {
		if requestPathKey(key) {
			return nil, fmt.Errorf("sockets: source schema %q: %s is applied by the request path (package transport), not by sockets.Transport: leave it unset", name, key)
		}
	}
	cfg := env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{
		name: {URL: c.URL, Settings: c.Settings},
	}}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sockets: %w", err)
	}
	settings, _ := cfg.Effective(name)
	s := &backend.Schema{
		Name: name, URL: u, Settings: settings, Config: &cfg,
		Options:   backend.SchemaOptions{Dial: c.Dial, VerifyConnection: c.VerifyConnection},
		LookupEnv: c.LookupEnv, Log: c.Logger, OnAddress: addressHook(c.OnAddress),
	}
	if c.Resolver != nil {
		s.Resolver = c.Resolver
	}
	if s.LookupEnv == nil {
		s.LookupEnv = os.LookupEnv
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	return open(s)
}

// open builds s's pool and the Transport around it.
func open(s *backend.Schema) (*Transport, error) {
	be := isockets.New()
	key, err := be.Key(s)
	if err != nil {
		return nil, fmt.Errorf("sockets: %w", err)
	}
	pool, err := be.Open(s, key)
	if err != nil {
		return nil, fmt.Errorf("sockets: %w", err)
	}
	return newTransport(s, be, pool), nil
}

// addressHook converts the pool's address events for f.
func addressHook(f func(context.Context, AddressEvent)) func(context.Context, backend.AddressEvent) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, e backend.AddressEvent) {
		f(ctx, AddressEvent{Address: e.Address, Ejected: e.Ejected, For: e.For, Failures: e.Failures})
	}
}
