// Package hooks holds the Go-only settings of a source schema, the ones a
// file cannot express: functions and interfaces. The root package exposes
// them as transport.SchemaOptions; both paths read them.
package hooks

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/headers"
	"github.com/fusiongo/transport/middleware"
)

// Middleware wraps a RoundTripper: a delegating handler.
type Middleware = func(http.RoundTripper) http.RoundTripper

// Schema are the Go-only settings of one source schema. The zero value
// changes nothing.
type Schema struct {
	// Dial opens the source schema's connections instead of the default
	// dialer (sockets path). Nil: a net.Dialer with connect_timeout and
	// keep_alive, or the unix_socket if configured.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// VerifyConnection is called after the TLS handshake and certificate
	// verification (sockets path), as tls.Config.VerifyConnection: a
	// non-nil error aborts the connection. Nil: none.
	VerifyConnection func(tls.ConnectionState) error

	// RoundTripper replaces the path's own transport for this source
	// schema, as YARP's IForwarderHttpClientFactory lets one: tests route
	// calls to an in-process handler with it. Header rules, timeouts and
	// middleware still apply. Nil: the path's transport.
	RoundTripper http.RoundTripper

	// Middleware wraps this source schema's requests, the first entry
	// outermost, inside the global middleware. Nil: none.
	Middleware []Middleware

	// HeaderValues computes headers per request from the gateway request,
	// after the configured header rules. Nil: none.
	HeaderValues map[string]headers.ValueFunc
}

// Chain wraps rt in mws, mws[0] outermost; nil entries are skipped.
func Chain(rt http.RoundTripper, mws ...Middleware) http.RoundTripper {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			rt = mws[i](rt)
		}
	}
	return rt
}

// Builtins returns the built-in middleware that settings switch on, in the
// order they run: Dedupe (identical in-flight queries share one request),
// then Retry (each attempt goes on through the rest of the pipeline).
// keyHeaders are the headers the schema's rules add: they join
// Authorization and Cookie in the dedupe key, so that two users' queries
// that differ only in a forwarded header (a tenant, say) never share an
// answer.
func Builtins(settings env.Settings, schema string, log *slog.Logger, keyHeaders []string) []Middleware {
	var out []Middleware
	if settings.Dedupe.On() {
		out = append(out, middleware.Dedupe(keyHeaders...))
	}
	if r := settings.Retry; r.MaxAttempts > 1 {
		out = append(out, middleware.Retry(middleware.RetryConfig{
			MaxAttempts: r.MaxAttempts,
			WaitMin:     env.Bound(r.WaitMin),
			WaitMax:     env.Bound(r.WaitMax),
			Statuses:    r.Statuses,
			Logger:      log.With("source_schema", schema),
		}))
	}
	return out
}
