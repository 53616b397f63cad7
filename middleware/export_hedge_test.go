package middleware

import (
	"net/http"

	"github.com/fusiongo/transport/internal/hedging"
)

// HedgeReusing is Hedge as the request path builds it on a route whose
// inside lets go of an attempt's request and context once its body is
// closed (hedging.Reuse): each query's first try is sent with a request
// and a context pooled with the call.
func HedgeReusing(cfg HedgeConfig) Middleware {
	mw := Hedge(cfg)
	return func(next http.RoundTripper) http.RoundTripper { return hedging.Reuse(mw(next)) }
}
