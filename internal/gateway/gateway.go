// Package gateway carries the incoming gateway request through a context, so
// that both paths can forward its headers to source schemas. The root package
// re-exports it as transport.WithGatewayRequest and transport.GatewayRequestHandler;
// it lives here so that the path packages can read it without importing the
// root package (which imports them).
package gateway

import (
	"context"
	"net/http"
)

type requestKey struct{}

// WithRequest returns a copy of ctx that carries r as the gateway request.
// A nil r leaves ctx unchanged.
func WithRequest(ctx context.Context, r *http.Request) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, r)
}

// Request returns the gateway request carried by ctx, or nil.
func Request(ctx context.Context) *http.Request {
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	return r
}

// Header returns the headers of the gateway request carried by ctx, or nil.
func Header(ctx context.Context) http.Header {
	if r := Request(ctx); r != nil {
		return r.Header
	}
	return nil
}
