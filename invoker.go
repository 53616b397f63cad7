package transport

import (
	"context"
	"net/http"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/gateway"
)

// Invoker sends source schema requests. *Transport, which New returns,
// implements it for every path; wrap it (middleware of your own, a test
// double) where you want. A wrapped Invoker has only these methods: the
// routing by URL and the canary handler are methods of *Transport
// (Client, RoundTripper, CanaryHandler), so no wrapper can lose them
// silently. Implementations are safe for concurrent use.
type Invoker interface {
	// Do sends req, which the caller built, for source schema schema. The
	// request is sent with ctx. The gateway request headers that the
	// configuration names are added unless req already has them. On the
	// sockets path req.URL must have the schema's scheme, host and port
	// (fault.ErrWrongTarget otherwise). The error names the source schema; on
	// every error req's body is closed, as http.Client.Do does.
	Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error)

	// Post sends body to schema's configured URL as a GraphQL-over-HTTP
	// POST, with Content-Type "application/json; charset=utf-8" and Accept
	// "application/graphql-response+json; charset=utf-8,
	// application/json; charset=utf-8". The caller must not modify body
	// until the response has arrived.
	Post(ctx context.Context, schema string, body []byte) (*http.Response, error)

	// Reload applies a new configuration as one swap: every new piece is
	// built first, and if any fails nothing changes and the old
	// configuration stays in force. Source schemas whose transport settings
	// are equal keep their transport and warm connections, changed ones get
	// new ones, removed ones are dropped once their in-flight requests end.
	// The path never changes (cfg.Path, cfg.SocketsSchemas,
	// cfg.Shadow.Rate and cfg.Canary are read at startup only); a canary
	// keeps the state of every schema that stays.
	Reload(cfg env.Config) error

	// Close closes every connection once its in-flight requests end. After
	// Close, Do and Post fail with fault.ErrClosed.
	Close() error
}

// WithGatewayRequest returns a copy of ctx that carries r, the incoming
// gateway request, so that either path can forward its headers.
// GatewayRequestHandler does this for every request it serves.
func WithGatewayRequest(ctx context.Context, r *http.Request) context.Context {
	return gateway.WithRequest(ctx, r)
}

// GatewayRequestHandler returns a handler that serves next with the
// incoming gateway request in its context (WithGatewayRequest), so that
// the Invoker can forward its headers on every source schema request made
// with that context. (In this module "middleware" names RoundTripper
// wrappers only; this is an http.Handler wrapper.)
func GatewayRequestHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(gateway.WithRequest(r.Context(), r)))
	})
}
