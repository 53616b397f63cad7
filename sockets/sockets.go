// Package sockets is the owned-transport path: one connection pool per
// source schema, built from its settings and used without an http.Client,
// with reverse-proxy defaults. By default it sends no cookies, follows no
// redirects, decompresses nothing (decompression opts in), uses no proxy
// (proxy opts in), dials within connect_timeout, and closes pooled
// connections at conn_lifetime. It forwards the configured gateway request
// headers itself, on Do and Post.
//
// Most users reach it through transport.New with FUSION_SOCKETS_TRANSPORT=1.
package sockets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/hooks"
	"github.com/fusiongo/transport/telemetry"
)

// Options are the Go-only settings of the sockets path.
type Options struct {
	// Logger receives reload and lifecycle events. Nil: slog.Default().
	Logger *slog.Logger

	// LookupEnv reads the proxy variables of source schemas configured
	// with proxy: environment, once per transport built. Nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// Middleware wraps every source schema's requests, the first entry
	// outermost. Nil: none.
	Middleware []hooks.Middleware

	// Schemas holds the Go-only settings per source schema name. Nil: none.
	Schemas map[string]SchemaHooks

	// Telemetry, if set, traces and measures every source schema request
	// (outermost in each schema's pipeline), observes the pools' open and
	// idle connections, and counts reloads. Nil: none.
	Telemetry *telemetry.Telemetry

	// RequestLog, if set, logs every source schema request (method,
	// redacted URL, status, duration; never headers or bodies) with a
	// source_schema attribute, inside telemetry. Nil: no request log.
	RequestLog *slog.Logger

	inv *Invoker // set by New, for the schemas' pool round trippers
}

// SchemaHooks are the Go-only settings of one source schema: a dial
// function, a TLS verification callback, a RoundTripper that replaces the
// pool, middleware and computed headers.
type SchemaHooks = hooks.Schema

// ErrClosed is returned by an Invoker after Close.
var ErrClosed = errors.New("transport closed")

// Invoker is the sockets path. Its zero value is not usable: call New.
type Invoker struct {
	log       *slog.Logger
	opts      Options
	unobserve func() error
	state     atomic.Pointer[state]
	mu        sync.Mutex // serialises Reload and Close
	closing   bool
}

// state is one configuration in force: the source schemas by name.
type state struct {
	schemas map[string]*schema
}

// New builds the sockets path for cfg. It fails if cfg is invalid.
func New(cfg env.Config, opts Options) (*Invoker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	inv := &Invoker{log: opts.Logger, opts: opts}
	inv.opts.inv = inv
	if inv.log == nil {
		inv.log = slog.Default()
	}
	st, err := build(cfg, nil, &inv.opts, inv.log)
	if err != nil {
		return nil, err
	}
	inv.state.Store(st)
	if inv.unobserve, err = opts.Telemetry.ObserveConnections("sockets", inv.connections); err != nil {
		inv.Close()
		return nil, err
	}
	return inv, nil
}

// connections reports each source schema's open and idle connections.
func (inv *Invoker) connections(yield func(schema string, open, idle int)) {
	st := inv.state.Load()
	if st == nil {
		return
	}
	for name, s := range st.schemas {
		open, idle := s.pool.stats()
		yield(name, open, idle)
	}
}

// Do sends req, which the caller built, for source schema name with ctx.
// Configured gateway request headers are added unless req has them; req
// itself is not modified. req.URL must have the scheme and address of the
// schema's configured URL (its path and query are free): the schema's pool
// is bound to that address.
func (inv *Invoker) Do(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	resp, err := inv.do(ctx, name, req)
	if err != nil {
		gqlhttp.CloseBody(req) // as http.Client.Do does, on every error
	}
	return resp, err
}

func (inv *Invoker) do(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		return nil, fmt.Errorf("source schema %q: nil request or URL", name)
	}
	s, err := inv.schema(name)
	if err != nil {
		return nil, err
	}
	t := bound.Target{Schema: name, Method: req.Method, URL: req.URL}
	if err := s.checkTarget(req.URL); err != nil {
		return nil, t.Err(err)
	}
	h, err := s.rules.Apply(ctx, req.Header, false)
	if err != nil {
		return nil, t.Err(err)
	}
	ctx, g := bound.Start(ctx, t, s.guardHeaderTimeout(), s.requestTimeout)
	out := req.WithContext(ctx)
	out.Header = h
	if out.Header == nil {
		out.Header = http.Header{}
	}
	resp, err := g.Finish(s.rt.RoundTrip(out))
	if err != nil {
		return nil, t.Err(err)
	}
	return resp, nil
}

// Post sends body to source schema name's URL as a GraphQL-over-HTTP POST.
// The body reaches net/http as a *bytes.Reader, so the headers and a small
// body leave in one write (golang/go#22088; see internal/gqlhttp).
func (inv *Invoker) Post(ctx context.Context, name string, body []byte) (*http.Response, error) {
	s, err := inv.schema(name)
	if err != nil {
		return nil, err
	}
	h := gqlhttp.Header(s.rules.Len())
	t := bound.Target{Schema: name, Method: http.MethodPost, URL: s.url}
	if h, err = s.rules.Apply(ctx, h, true); err != nil {
		return nil, t.Err(err)
	}
	ctx, g := bound.Start(ctx, t, s.guardHeaderTimeout(), s.requestTimeout)
	req := s.post.WithContext(ctx)
	req.Header = h
	// An HTTP/1 POST over http is never sent twice unless it carries an
	// Idempotency-Key (see replayable); HTTP/2 may replay a refused stream,
	// and middleware (retry) may send again. Without those, no GetBody
	// closure is allocated.
	_, idempotent := h["Idempotency-Key"]
	gqlhttp.SetBody(req, body, idempotent || !s.connHeaderTimer || !s.bare())
	resp, err := g.Finish(s.rt.RoundTrip(req))
	if err != nil {
		return nil, t.Err(err)
	}
	return resp, nil
}

// send runs req on the schema's pool. If the pool drained under it (a
// reload replaced the schema's transport), the request moves to the
// current one, so that no request fails because of a reload. Each move
// needs a newer configuration, so the loop ends; the bound only guards
// against reloads that never stop.
func (inv *Invoker) send(name string, s *schema, req *http.Request) (*http.Response, error) {
	for range maxMoves {
		resp, err := s.roundTrip(req)
		if !errors.Is(err, errDrained) {
			return resp, err
		}
		drained := s.pool
		st := inv.state.Load()
		if st == nil {
			return nil, ErrClosed
		}
		if s = st.schemas[name]; s == nil {
			return nil, ErrUnknownSchema
		}
		if s.pool == drained {
			break // closed, not reloaded
		}
	}
	return nil, errDrained
}

// maxMoves bounds how often one request follows its schema to a new pool.
const maxMoves = 1000

// schema returns the current configuration of source schema name.
func (inv *Invoker) schema(name string) (*schema, error) {
	st := inv.state.Load()
	if st == nil {
		return nil, fmt.Errorf("source schema %q: %w", name, ErrClosed)
	}
	s, ok := st.schemas[name]
	if !ok {
		return nil, fmt.Errorf("source schema %q: %w", name, ErrUnknownSchema)
	}
	return s, nil
}

// ErrUnknownSchema is wrapped by the error for a request to a source schema
// that the configuration does not name.
var ErrUnknownSchema = errors.New("unknown source schema")

// Reload applies cfg: schemas whose transport settings are equal keep their
// pool and warm connections; changed ones get a new pool, and the old one
// closes its connections as soon as their requests end; removed ones are
// dropped the same way. An invalid cfg leaves the old configuration in
// force. cfg.Transport is ignored: the path never changes.
func (inv *Invoker) Reload(cfg env.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("reload rejected, old configuration kept: %w", err)
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	old := inv.state.Load()
	if inv.closing || old == nil {
		return ErrClosed
	}
	st, err := build(cfg, old, &inv.opts, inv.log)
	if err != nil {
		return fmt.Errorf("reload rejected, old configuration kept: %w", err)
	}
	inv.state.Store(st)
	kept, replaced, removed := 0, 0, 0
	for name, o := range old.schemas {
		n, ok := st.schemas[name]
		switch {
		case !ok:
			removed++
			o.pool.drain()
		case n.pool != o.pool:
			replaced++
			o.pool.drain()
		default:
			kept++
		}
	}
	inv.opts.Telemetry.RecordReload(kept, replaced, removed)
	inv.log.Info("transport reloaded", "path", "sockets", "kept", kept, "replaced", replaced, "removed", removed, "added", len(st.schemas)-kept-replaced)
	return nil
}

// Close drains every pool: idle connections close at once, the others when
// their requests end. Requests after Close fail with ErrClosed.
func (inv *Invoker) Close() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	st := inv.state.Swap(nil)
	inv.closing = true
	if st == nil {
		return nil
	}
	if inv.unobserve != nil {
		inv.unobserve()
	}
	for _, s := range st.schemas {
		s.pool.drain()
	}
	return nil
}
