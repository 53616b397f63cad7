// Package gateway carries the incoming gateway request through a context, so
// that both paths can forward its headers to source schemas. The root package
// re-exports it as transport.WithGatewayRequest and transport.GatewayRequestHandler;
// it lives here so that the path packages can read it without importing the
// root package (which imports them).
//
// The context WithRequest makes also holds a memo: one value that the first
// source schema call made with it (or with a context derived from it) keeps
// for the calls after it, such as the runtime rollout's decision
// (transport.WithRollout), so that every call of one gateway request
// follows one decision.
package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
)

type requestKey struct{}

// requestCtx is a context that carries a gateway request and its memo. It
// is one allocation, as the context.WithValue it replaces was.
type requestCtx struct {
	context.Context
	r    *http.Request
	memo atomic.Value // set once, by the first call that decides; safe for concurrent use
}

// Value returns the requestCtx itself for requestKey, and asks the parent
// for any other key.
func (c *requestCtx) Value(key any) any {
	if _, ok := key.(requestKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// WithRequest returns a copy of ctx that carries r as the gateway request,
// with an empty memo. A nil r leaves ctx unchanged.
func WithRequest(ctx context.Context, r *http.Request) context.Context {
	if r == nil {
		return ctx
	}
	return &requestCtx{Context: ctx, r: r}
}

func of(ctx context.Context) *requestCtx {
	c, _ := ctx.Value(requestKey{}).(*requestCtx)
	return c
}

// Request returns the gateway request carried by ctx, or nil.
func Request(ctx context.Context) *http.Request {
	if c := of(ctx); c != nil {
		return c.r
	}
	return nil
}

// Header returns the headers of the gateway request carried by ctx, or nil.
func Header(ctx context.Context) http.Header {
	if r := Request(ctx); r != nil {
		return r.Header
	}
	return nil
}

// Memo returns the memo of the gateway request carried by ctx: one value
// per WithRequest, shared by every context derived from it; nil when ctx
// carries no gateway request. Every value stored in it must be of one type
// (atomic.Value's rule).
func Memo(ctx context.Context) *atomic.Value {
	if c := of(ctx); c != nil {
		return &c.memo
	}
	return nil
}
