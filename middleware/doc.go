// Package middleware holds the built-in RoundTripper middleware of a source
// schema's pipeline: each is a Middleware, a func(http.RoundTripper)
// http.RoundTripper, and Chain stacks them over a source schema's transport.
//
//	rt := middleware.Chain(transport,
//		middleware.RequestLog(logger, "products"),
//		middleware.Dedupe(),
//		middleware.Retry(middleware.RetryConfig{MaxAttempts: 3}),
//		middleware.Token(middleware.FromOAuth2(tokenSource)),
//	)
//
// # Order
//
// They are meant to run in this order, outermost first:
//
//	RequestLog → Dedupe → PersistedQueries → Compress → Retry → Hedge → Breaker → RateLimiter → Token → transport
//
// for these reasons:
//
//   - RequestLog is outermost so that it sees what the caller sees: one record
//     per caller, with the status or error that the caller gets, after
//     sharing and all retries.
//   - Dedupe sits outside Retry so that the callers that share a request
//     share its whole retried result, not each attempt; inside, each caller
//     of one query would run its own retries.
//   - Retry and Hedge sit outside Token so that each attempt and each hedge
//     gets a fresh token: a token that expires during a wait (Retry-After
//     may ask for seconds) is not sent again. Token sits inside Breaker and
//     RateLimiter, so that an attempt they refuse fetches no token. Under a
//     transport.Invoker, whose pipeline has Retry and Hedge built in, that
//     place is transport.SchemaOptions.AttemptMiddleware.
//   - Hedge sits inside Retry, so that a retried attempt may be hedged and
//     both spend one RetryBudget, and outside Breaker, so that every
//     attempt and every hedge passes the breaker and counts as one outcome.
//     Retry does not send again a request the breaker refused
//     (fault.ErrCircuitOpen): it was not sent. A RoundTripper inside Hedge
//     tells a hedge from its query's first try by IsHedge.
//   - PersistedQueries sits inside Dedupe, so that calls share by their
//     query text, and outside Compress, which compresses the body sent (the
//     hash form), and so outside Retry and Hedge: a call is rewritten once,
//     every attempt carries the hash, and a refusal by hash (an answer, no
//     failure) is sent again with its text down through them as a call of
//     its own. Its rewritten body tells Retry and Hedge the kind of the
//     operation, which the hash cannot.
//   - Compress sits outside Retry and Hedge, so that a call is compressed
//     once and every attempt sends the same bytes, and inside Dedupe, so
//     that the calls that share a request are keyed on their own bodies.
//   - RateLimiter sits inside Retry and Hedge, so that every attempt and
//     every hedge takes a turn, and inside Breaker, so that a call the open
//     breaker refused takes none; neither Retry nor Breaker counts its
//     refusals (fault.ErrRateLimited): they were not sent.
//
// # What is retried and shared
//
// Retry, Hedge and Dedupe act only on GraphQL queries, as
// operation.Classify tells them from the method, the URL's query string and
// the body: a POST whose JSON body runs a query, a GET whose ?query= runs
// one (or that carries no document: GraphQL over HTTP runs only queries on
// GET). A mutation is never sent twice, a GET mutation included, a
// subscription never shared, and a request whose kind cannot be told for
// sure (a POST of a persisted query without its document, a body over
// operation.MaxBodyBytes, 1 MiB, anything that does not parse, a request
// that servers read differently, such as a body with a "query" member and
// a case variant of it that encoding/json takes instead) is treated like a
// mutation. All three read the body up to that size: through GetBody if
// the request has it, else from Body, and then send a copy of the request
// whose body can be read again.
//
// Every middleware wraps its next RoundTripper without an http.Client, so
// that it keeps next's semantics: it follows no redirects, stores no
// cookies and passes CloseIdleConnections on. None modifies the caller's
// request.
package middleware
