// Package sockets is the owned-transport backend: one connection pool per
// source schema, built from its settings and used without an http.Client,
// with reverse-proxy defaults. Its connections are the h1 engine's own
// HTTP/1.1 connections (internal/sockets/h1conn.go, internal/h1) for schemas that
// speak plain HTTP/1.1, or net/http's ClientConns (engine nethttp, and
// every HTTP/2, h2c or proxied schema); the pool's rules are the same for
// both. It sends no cookies, follows no redirects,
// decompresses nothing (decompression opts in), uses no proxy (proxy opts
// in), dials within connect_timeout, and closes pooled connections at
// conn_lifetime. The request path (package transport) forwards the
// configured gateway request headers before the request reaches it.
//
// Most users reach it through transport.New with FUSION_SOCKETS_TRANSPORT=1.
package sockets

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/headers"
	"github.com/fusiongo/transport/internal/setting"
)

// Backend is the sockets path's backend (package backend's contract): it
// builds one pool per source schema. Its zero value is ready to use.
type Backend struct{}

// New returns the sockets backend.
func New() backend.Backend { return Backend{} }

// key holds everything a pool is built from. Two schemas with equal keys
// can share a pool, which is how a reload decides to keep one.
type key struct {
	scheme, addr string
	settings     env.Settings
	tlsDigest    [sha256.Size]byte // of the TLS files' contents, so a renewed certificate makes a new pool
	tls          *tls.Config       // built with the digest; not compared
}

func (k *key) Equal(o backend.Key) bool {
	ok, _ := o.(*key)
	return ok != nil && k.scheme == ok.scheme && k.addr == ok.addr && k.tlsDigest == ok.tlsDigest && k.settings.Equal(ok.settings)
}

// poolSettings keeps what a pool is built from (setting.RebuildPool): settings
// that act per request (timeouts, header rules, retry, dedupe,
// decompression) or on the request path (breaker, hedging, ...) are left
// out, so changing them keeps the pool and its warm connections.
func poolSettings(s env.Settings) env.Settings {
	return setting.Only(s, env.PathSockets, func(r setting.Rebuild) bool { return r == setting.RebuildPool })
}

// Key reads the schema's TLS files and returns what its pool is built from.
func (Backend) Key(s *backend.Schema) (backend.Key, error) {
	tlsCfg, digest, err := tlsConfig(s.Name, s.URL, s.Settings.TLS, s.Options.VerifyConnection)
	if err != nil {
		return nil, err
	}
	ps := poolSettings(s.Settings)
	ps.Engine, _, _ = EngineFor(s.Settings, s.URL.Scheme)
	return &key{scheme: s.URL.Scheme, addr: backend.HostPort(s.URL), settings: ps, tlsDigest: digest, tls: tlsCfg}, nil
}

// Open builds the schema's pool.
func (Backend) Open(s *backend.Schema, k backend.Key) (backend.Pool, error) {
	kk := k.(*key)
	p, err := newPool(s.Name, kk, s.Options.Dial, s.LookupEnv, s.Log)
	if err != nil {
		return nil, err
	}
	p.schema, p.log, p.onQueue = s.Name, s.Log, s.OnQueue
	if s.Options.Dial == nil {
		// A Dial hook decides where the schema's connections go.
		p.resolveFrom(kk, s.Resolver, s.OnAddress)
	}
	if engine, key, why := EngineFor(s.Settings, s.URL.Scheme); engine != s.Settings.Engine {
		// Said at Info when the configuration asked for h1; when h1 is
		// only the default, falling back is the documented rule (Debug).
		level := slog.LevelDebug
		if askedH1(s) {
			level = slog.LevelInfo
		}
		s.Log.Log(context.Background(), level, "engine h1 does not serve this source schema as configured: it uses nethttp", "source_schema", s.Name, "key", key, "reason", why)
	}
	if s.Settings.TLS.InsecureSkipVerify.On() {
		s.Log.Warn("TLS certificate verification is OFF for this source schema: anyone on the network path can read and change its traffic", "source_schema", s.Name, "key", "tls.insecure_skip_verify")
	}
	return &poolTransport{pool: p}, nil
}

// askedH1 reports whether s's configuration sets engine h1 itself, for
// the schema or in its defaults, rather than taking the built-in default.
func askedH1(s *backend.Schema) bool {
	if s.Config == nil {
		return false
	}
	e := s.Config.Defaults.Engine
	if ss, ok := s.Config.SourceSchemas[s.Name]; ok && ss.Engine != "" {
		e = ss.Engine
	}
	return e == env.EngineH1
}

// Front returns nil: the sockets path is bound to the schema's address, and
// the request path applies the header rules before the middleware.
func (Backend) Front(*backend.Schema, headers.Rules, http.RoundTripper) http.RoundTripper {
	return nil
}

// Middleware adds decompression when the schema asks for it.
func (Backend) Middleware(s *backend.Schema) []func(http.RoundTripper) http.RoundTripper {
	if len(s.Settings.Decompression) > 0 {
		return []func(http.RoundTripper) http.RoundTripper{decompress(s.Settings.Decompression)}
	}
	return nil
}

// Ignored lists legacy.handler_lifetime when set to other than its
// built-in value (which Load writes in): the sockets path has no shared
// transport to rotate.
func (Backend) Ignored(cfg *env.Config) []string {
	if l := cfg.Legacy.HandlerLifetime; l != 0 && l != env.DefaultHandlerLifetime {
		return []string{"legacy.handler_lifetime"}
	}
	return nil
}

// Close does nothing: the sockets backend shares nothing between schemas.
func (Backend) Close() {}

// poolTransport sends a schema's requests on its pool, one attempt each;
// the request path decides whether a failed attempt goes again
// (backend.Resend).
type poolTransport struct {
	pool *pool // immutable
}

// RoundTrip sends req on a pooled connection, once. A failure on a
// connection that had carried an earlier request, or before any byte of
// req was written, comes back as a *backend.AttemptError, for
// backend.Resend to judge.
func (t *poolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, 0)
}

// RoundTripWithin sends req, which has no deadline but perhaps its request
// bound's (bound.CallerDeadline is false), on a pooled connection
// and fails with a *fault.HeaderTimeoutError if the headers take longer
// than d, counting the time req waits for a connection (the error says how
// much of it). On a connection that only ever carries one request at a
// time (HTTP/1.1 over http), the bound is the connection's own timer,
// armed for this request: when it fires it closes the connection, which
// ends this request and no other. That saves the per-request context,
// timer and closure of the request path's bound (9 allocations a call).
func (t *poolTransport) RoundTripWithin(req *http.Request, d time.Duration) (*http.Response, error) {
	return t.roundTrip(req, d)
}

// TimesHeaders reports whether RoundTripWithin can bound every request of
// s: HTTP/1.1 over http, or any scheme on the h1 engine, where a
// connection carries one request at a time.
func (t *poolTransport) TimesHeaders(s *backend.Schema) bool {
	if t.pool.h1 != nil {
		return true // one request at a time, whatever the scheme
	}
	return s.URL.Scheme == "http" && s.Settings.HTTPVersion != "h2c"
}

func (t *poolTransport) roundTrip(req *http.Request, d time.Duration) (*http.Response, error) {
	if t.pool.h1 != nil && gqlhttp.AsksUpgrade(req) {
		return t.pool.upgrade(req, d)
	}
	c, pending, queued, err := t.connFor(req, d)
	if err != nil {
		return nil, err
	}
	if hc, ok := c.cc.(*h1Conn); ok {
		// The h1 engine bounds the header with a read deadline and judges
		// its own failures for backend.Resend.
		resp, err := hc.roundTrip(req, d-queued)
		t.pool.doneWith(req.Context(), c, pending, judge(req, resp, err))
		if errors.Is(err, errH1HeaderTimeout) {
			return nil, &fault.HeaderTimeoutError{Bound: d, Queued: queued}
		}
		return resp, err
	}
	return t.netHTTPRoundTrip(c, pending, req, d, queued)
}

// connFor gets req a connection from the pool, within d of header bound
// when d > 0 (the wait counts against it), and says how long req queued.
// On an error req's body is closed and nothing was sent.
func (t *poolTransport) connFor(req *http.Request, d time.Duration) (c *conn, pending bool, queued time.Duration, err error) {
	var start, deadline time.Time
	if d > 0 {
		start = time.Now()
		deadline = start.Add(d)
	}
	c, pending, err = t.pool.get(req.Context(), deadline)
	if err != nil {
		gqlhttp.CloseBody(req) // a RoundTripper closes the body, even on errors
		switch {
		case errors.Is(err, errDrained):
			return nil, false, 0, backend.ErrDrained
		case errors.Is(err, errQueueTimeout):
			return nil, false, 0, &fault.HeaderTimeoutError{Bound: d, Queued: time.Since(start)}
		}
		return nil, false, 0, err
	}
	if d > 0 {
		queued = time.Since(start)
		if queued >= d {
			if !c.h2.Load() {
				c.cc.Release()
			}
			t.pool.done(c, pending)
			gqlhttp.CloseBody(req)
			return nil, false, 0, &fault.HeaderTimeoutError{Bound: d, Queued: queued}
		}
	}
	return c, pending, queued, nil
}

// netHTTPRoundTrip sends req on c, an http.ClientConn of engine nethttp,
// with the connection's header timer armed for what is left of d. A
// failure that backend.Resend may send again comes back as a
// *backend.AttemptError: nothing of req was written (Unsent), or c had
// carried an earlier request and no byte of an answer came (Reused), as
// net/http's Transport decides; a request answered in part is never sent
// again, since the server has seen it.
func (t *poolTransport) netHTTPRoundTrip(c *conn, pending bool, req *http.Request, d, queued time.Duration) (*http.Response, error) {
	if c.oneShot && !req.Close {
		// The connection carries this request only: ask the server to
		// close it too, on a shallow copy, so the caller's request is
		// left as it was.
		r := *req
		r.Close = true
		req = &r
	}
	reused := c.reused.Load()
	var written, got int64
	watched := c.written != nil && !c.h2.Load()
	if watched {
		written, got = c.written.Load(), c.wc.got.Load()
	}
	var resp *http.Response
	var err error
	if d > 0 {
		c.headerTimer.Reset(d - queued)
		resp, err = c.cc.RoundTrip(req)
		if !c.headerTimer.Stop() {
			// The timer fired: the connection is closed, and with it this
			// request.
			if err == nil {
				resp.Body.Close()
			}
			resp, err = nil, &fault.HeaderTimeoutError{Bound: d, Queued: queued}
		}
	} else {
		resp, err = c.cc.RoundTrip(req)
	}
	if err == nil && resp.ProtoMajor == 2 && !c.h2.Load() {
		c.setH2() // one stream at a time so far; HTTP/2 all the same
	}
	if err != nil {
		var hte *fault.HeaderTimeoutError
		if !errors.As(err, &hte) {
			unsent := watched && c.written.Load() == written
			answered := watched && c.wc.got.Load() != got
			if reused && answered {
				reused = false // the server saw it: never again
			}
			if reused || unsent {
				err = &backend.AttemptError{Err: err, Reused: reused, Unsent: unsent}
			}
		}
	}
	t.pool.doneWith(req.Context(), c, pending, judge(req, resp, err))
	return resp, err
}

// Describe says what the pool is and can do: its engine; on the h1 engine it writes a body
// of known length with the head whatever its type; it bounds the header
// wait itself (TimesHeaders says for which schemas); it counts its
// connections and knows its addresses.
func (t *poolTransport) Describe() backend.Description {
	engine := env.EngineNetHTTP
	if t.pool.h1 != nil {
		engine = env.EngineH1
	}
	return backend.Description{
		Engine:        engine,
		WritesAnyBody: t.pool.h1 != nil,
		Timed:         t,
		Conns:         t.Conns,
		Addresses:     t.Addresses,
	}
}

// Drain stops the pool: see pool.drain.
func (t *poolTransport) Drain() { t.pool.drain() }

// Addresses reports the pool's addresses: none when it dials its host by
// name.
func (t *poolTransport) Addresses() []backend.AddressStats { return t.pool.addressStats() }

// Conns reports the pool's open and idle connections.
func (t *poolTransport) Conns() (open, idle int) { return t.pool.stats() }

// parseURL parses a schema url for Plan; one that does not parse gives
// an empty URL.
func parseURL(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		return &url.URL{}
	}
	return u
}
