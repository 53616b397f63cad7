// Package transport sends a GraphQL gateway's requests to its source schemas
// (subgraphs) through one of two paths behind one Invoker:
//
//   - the legacy path: one shared http.Client with header propagation,
//     redirect following, transparent decompression and the environment's
//     proxy, as most Go gateways run today;
//   - the sockets path: one owned transport per source schema with
//     reverse-proxy defaults (no cookies, no redirects, no decompression, no
//     environment proxy, pooled connections closed after a lifetime).
//
// FUSION_SOCKETS_TRANSPORT=1 selects the sockets path at startup; see
// package env for the configuration and docs/design.md for the two paths side
// by side.
package transport

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/hooks"
	"github.com/fusiongo/transport/legacy"
	"github.com/fusiongo/transport/shadow"
	"github.com/fusiongo/transport/sockets"
	"github.com/fusiongo/transport/telemetry"
)

// Invoker sends source schema requests. Both paths implement it; it is safe
// for concurrent use.
type Invoker interface {
	// Do sends req, which the caller built, for source schema schema. The
	// request is sent with ctx. The gateway request headers that the
	// configuration names are added unless req already has them. The error
	// names the source schema.
	Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error)

	// Post sends body to schema's configured URL as a GraphQL-over-HTTP
	// POST, with Content-Type "application/json; charset=utf-8" and Accept
	// "application/graphql-response+json; charset=utf-8,
	// application/json; charset=utf-8". The caller must not modify body
	// until the response has arrived.
	Post(ctx context.Context, schema string, body []byte) (*http.Response, error)

	// Reload applies a new configuration: source schemas whose settings are
	// equal keep their transport and warm connections, changed ones get new
	// ones, removed ones are dropped once their in-flight requests end. The
	// path never changes (cfg.Transport is ignored). An invalid cfg is
	// rejected with the old configuration left in force.
	Reload(cfg env.Config) error

	// Close closes every connection once its in-flight requests end. After
	// Close, Do and Post fail.
	Close() error
}

// Compile-time checks that both paths are Invokers.
var (
	_ Invoker = (*legacy.Invoker)(nil)
	_ Invoker = (*sockets.Invoker)(nil)
)

// Option configures New.
type Option func(*options)

type options struct {
	logger     *slog.Logger
	lookupEnv  func(string) (string, bool)
	middleware []hooks.Middleware
	schemas    map[string]hooks.Schema

	shadowPublisher shadow.Publisher
	shadowRules     compare.Rules
	telemetry       *telemetry.Telemetry
	requestLog      *slog.Logger
}

// WithRequestLog logs every source schema request to l: one record per
// request at Debug (at Warn when it failed), with a source_schema
// attribute, the method, the redacted URL without its query, the status
// and the duration; never a header or a body. Default: no request log.
func WithRequestLog(l *slog.Logger) Option {
	return func(o *options) { o.requestLog = l }
}

// WithTelemetry traces and measures every source schema request with t
// (OpenTelemetry; see package telemetry), observes the sockets path's open
// and idle connections and counts reloads. Default: none.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return func(o *options) { o.telemetry = t }
}

func (o *options) log() *slog.Logger {
	if o.logger != nil {
		return o.logger
	}
	return slog.Default()
}

// SchemaOptions are the Go-only settings of one source schema, the ones a
// file cannot hold: a dial function, a TLS verification callback, a
// RoundTripper that replaces the path's transport (for tests and
// in-process source schemas), middleware, and computed headers. The zero
// value changes nothing. See each field for the paths that honour it.
type SchemaOptions = hooks.Schema

// WithSchemaOptions sets the Go-only settings of source schema name. A
// later call for the same name replaces an earlier one. They hold for the
// invoker's life: Reload keeps them.
func WithSchemaOptions(name string, so SchemaOptions) Option {
	return func(o *options) {
		if o.schemas == nil {
			o.schemas = map[string]hooks.Schema{}
		}
		o.schemas[name] = so
	}
}

// WithMiddleware wraps every source schema's requests in mws, the first
// outermost, outside each schema's own middleware. On the legacy path they
// run inside the shared client, so once per redirect hop.
func WithMiddleware(mws ...func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.middleware = append(o.middleware, mws...) }
}

// WithLogger sets the logger of the invoker. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithLookupEnv sets how the proxy variables (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY and their lower-case forms) are read: by the legacy path always,
// by the sockets path for source schemas with proxy: environment.
// Default: os.LookupEnv, read once when a transport is built.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = lookup }
}

// New builds the path that cfg selects (cfg.Path()). It fails if cfg is
// invalid; see env.Config.Validate.
func New(cfg env.Config, opts ...Option) (Invoker, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	build := func(c env.Config, path env.Path) (Invoker, error) {
		// A failed New returns a nil Invoker, not an interface that holds
		// a nil pointer, so that callers can test it against nil.
		if path == env.PathSockets {
			inv, err := sockets.New(c, sockets.Options{Logger: o.logger, LookupEnv: o.lookupEnv, Middleware: o.middleware, Schemas: o.schemas, Telemetry: o.telemetry, RequestLog: o.requestLog})
			if err != nil {
				return nil, err
			}
			return inv, nil
		}
		inv, err := legacy.New(c, legacy.Options{Logger: o.logger, LookupEnv: o.lookupEnv, Middleware: o.middleware, Schemas: o.schemas, Telemetry: o.telemetry, RequestLog: o.requestLog})
		if err != nil {
			return nil, err
		}
		return inv, nil
	}
	switch {
	case cfg.Path() == env.PathMixed:
		return newMixed(cfg, build)
	case cfg.Shadow.Rate > 0:
		return newShadow(cfg, build, &o)
	}
	return build(cfg, cfg.Path())
}

// WithGatewayRequest returns a copy of ctx that carries r, the incoming
// gateway request, so that either path can forward its headers. Middleware
// does this for every request it serves.
func WithGatewayRequest(ctx context.Context, r *http.Request) context.Context {
	return gateway.WithRequest(ctx, r)
}

// Middleware makes the incoming gateway request's headers available to the
// Invoker for every source schema request made with the request's context.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(gateway.WithRequest(r.Context(), r)))
	})
}
