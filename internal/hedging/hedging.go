// Package hedging is what the request path tells package middleware's
// Hedge beyond its public HedgeConfig. It lives under internal/ so that an
// option whose misuse would hand one call's memory to another is no
// user's to set.
package hedging

import "net/http"

// Reuse returns rt, a RoundTripper that middleware.Hedge made, set to
// pool the memory of each query it sends (the first try's request copy
// and context) and reuse it for a later query once the query has ended:
// its response's body closed, or, for a PostFunc call, the memory the
// request path lent it given back. Any other rt comes back as it is.
//
// The request path sets it only when what the hedge wraps lets go of an
// attempt's request and context once its RoundTrip has returned and its
// response's body is closed: the transport writes the whole request
// before RoundTrip returns (the sockets path's h1 engine) and no
// middleware the user gave (SchemaOptions.AttemptMiddleware, a backend's)
// sits inside the hedge. Package middleware sets Reuse when it is
// initialised.
var Reuse func(rt http.RoundTripper) http.RoundTripper
