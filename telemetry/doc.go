// Package telemetry traces and measures the requests that the transport
// sends to source schemas, through the OpenTelemetry API: the application
// brings its own SDK and exporter, and without one every signal is a no-op.
//
//	otel.SetTextMapPropagator(propagation.TraceContext{}) // send traceparent
//	tel, err := telemetry.New(telemetry.Options{})        // the global providers
//	if err != nil {
//		return err
//	}
//	inv, err := transport.New(cfg, transport.WithTelemetry(tel))
//
// transport.WithTelemetry puts tel's Middleware in every source schema's
// pipeline and records the transport's own metrics in tel. Outside a
// transport, tel.Middleware(schema, path) wraps any http.RoundTripper.
//
// # Spans
//
// One client span per source schema request (per redirect hop on the
// legacy path, when the middleware sits in the client's pipeline), a child
// of the span in the request's context. Name: the method, "POST"; "HTTP"
// for a method that no RFC defines. Attributes: fusion.source_schema,
// fusion.transport.path, http.request.method (and
// http.request.method_original), server.address, server.port, url.full
// (without user information, query and fragment),
// http.response.status_code, network.protocol.version, and error.type on
// failure. Status Error on a transport error, a body read error or a 5xx
// response. The span ends when the response body is closed or read to its
// end, so it covers the body.
//
// The trace context goes out in the request headers that the Propagator
// writes. The global propagator writes nothing until the application sets
// one: set propagation.TraceContext{} to send W3C traceparent and
// tracestate.
//
// # Metrics
//
// Middleware records the request metrics (the first four rows). The others
// are recorded by the transport that the Telemetry is given to, with
// transport.WithTelemetry: they measure its connections, reloads, canary,
// resilience, traffic shaping, shadow comparison and the runtime rollout's
// fallbacks, and this package has no method for them.
//
//	Name                                            Instrument           Unit          Attributes
//	http.client.request.duration                    Float64Histogram     s             R
//	fusion.transport.requests                       Int64Counter         {request}     R
//	fusion.transport.errors                         Int64Counter         {request}     R
//	fusion.transport.requests.in_flight             Int64UpDownCounter   {request}     B
//	fusion.transport.connections.open               Int64ObservableGauge {connection}  S, P
//	fusion.transport.connections.idle               Int64ObservableGauge {connection}  S, P
//	fusion.transport.reloads                        Int64Counter         {reload}      none
//	fusion.transport.transports.kept                Int64Counter         {transport}   none
//	fusion.transport.transports.replaced            Int64Counter         {transport}   none
//	fusion.transport.transports.removed             Int64Counter         {transport}   none
//	fusion.transport.canary.share                   Float64Gauge         1             S
//	fusion.transport.canary.fallbacks               Int64Counter         {fallback}    S
//	fusion.transport.breaker.state                  Int64Gauge           1             S, P
//	fusion.transport.breaker.transitions            Int64Counter         {transition}  S, P, fusion.breaker.state
//	fusion.transport.retry.budget_exhausted         Int64Counter         {retry}       S, P
//	fusion.transport.hedges.sent                    Int64Counter         {request}     S, P
//	fusion.transport.hedges.won                     Int64Counter         {request}     S, P
//	fusion.transport.addresses                      Int64ObservableGauge {address}     S, P
//	fusion.transport.address.connections            Int64ObservableGauge {connection}  S, P, fusion.transport.address
//	fusion.transport.address.in_flight              Int64ObservableGauge {request}     S, P, fusion.transport.address
//	fusion.transport.address.ejected                Int64ObservableGauge 1             S, P, fusion.transport.address
//	fusion.transport.outlier.ejections              Int64Counter         {ejection}    S, P
//	fusion.transport.request_compression.requests   Int64Counter         {request}     S, P
//	fusion.transport.request_compression.bytes_saved Int64Counter        By            S, P
//	fusion.transport.rate_limit.limited             Int64Counter         {request}     S, P
//	fusion.transport.rate_limit.store_errors        Int64Counter         {request}     S
//	fusion.transport.rate_limit.fallbacks           Int64Counter         {fallback}    S
//	fusion.transport.rate_limit.returns             Int64Counter         {return}      S
//	fusion.transport.shadow.comparisons             Int64Counter         {comparison}  S, fusion.shadow.equal
//	fusion.transport.shadow.mismatches              Int64Counter         {difference}  S, fusion.shadow.kind
//	fusion.transport.shadow.dropped                 Int64Counter         {comparison}  S, fusion.shadow.reason
//	fusion.transport.cache.events                   Int64Counter         {event}       S, fusion.cache.status, fusion.cache.reason
//	fusion.transport.persisted_queries.resends      Int64Counter         {request}     S, fusion.persisted_query.reason
//	fusion.transport.rollout.fallbacks              Int64Counter         {request}     fusion.rollout.reason
//
// S is fusion.source_schema, P fusion.transport.path. B, the attributes
// known before sending: S, P, http.request.method, server.address,
// server.port. R, those of a request that ended: B, plus
// http.response.status_code when a response arrived, plus error.type when
// it failed.
//
// The duration runs from sending until the response body is closed or read
// to its end; its buckets are the semantic conventions' advice (5 ms to
// 10 s), which a view can replace. A request counts as an error, and has
// error.type, when it ends in a transport error, a body read error or a 5xx
// status; error.type is then the error's kind (DefaultErrorType: "timeout",
// "connection_refused", ...) or the status code ("503"). A request is in
// flight from sending until its body ends.
//
// The connection gauges are read from the transport's pools at each
// collection; open counts busy and idle connections, idle the idle ones
// among them. The address gauges likewise read the sockets path's pools,
// per address of a source schema's host. The reload counters count every
// reload that took effect, and the transports it kept, replaced and
// removed.
//
// The breaker gauge holds the state a source schema's circuit breaker
// last changed to (0 closed, 1 half-open, 2 open), recorded on each
// change, which also counts the transition by the state changed to
// (fusion.breaker.state). A breaker that never changed state has no
// point: it is closed. The budget counter counts every retry and hedge
// that a source schema's retry budget refused; the hedge counters count
// the hedges sent and those whose response was returned. The ejection
// counter counts the addresses that outlier detection took out of service.
// The traffic shaping counters count the request bodies sent compressed
// and the bytes that saved, and the requests a source schema's rate limit
// refused. With the rate limit's redis store (one limit for the fleet),
// the store counters count the requests whose check failed or outlived
// rate_limit.store_timeout (each decided by rate_limit.on_store_error),
// and the limit's falls back and returns: one each per outage, however
// many requests it spans.
//
// The persisted query counter counts the requests that went again with
// their query text because the source schema refused them by their hash,
// by reason ("not_found", "not_supported", "request_error"); each is also
// an event, persisted_query.resend, on the call's span.
//
// In shadow mode (FUSION_SOCKETS_TRANSPORT=shadow) the shadow counters
// count the comparisons of a source schema's two answers, by whether they
// were equal; the differences of the unequal ones, by kind ("status",
// "header", "body", ...); and the sampled queries not compared, by reason
// ("busy", "too_large", "primary_unread"). They count whatever
// shadow.Publisher the transport was also given.
//
// # Context
//
// A measurement is recorded with the context of the request that caused
// it, the one the gateway passed to the transport: the request metrics,
// and the breaker transition that a request's outcome caused, the retry or
// hedge that the budget refused, the hedge sent or won, the body
// compressed, the request the rate limit refused, the request whose check
// of the shared limit failed (and the fall back or return that a check
// caused, with the context of the first request it carried), the
// ejection that a request's failure caused, the shadow comparison of a
// request (its context without its cancellation: the comparison ends
// after the caller's answer). So a MeterProvider whose exemplar filter is
// trace-based (the SDK's default) links these measurements to the
// request's trace, and baggage is at hand to a view or a processor. The
// events that no request causes are recorded with an empty context: a
// reload, a change of canary share (a verdict on many requests), a
// breaker that becomes half-open when its state is read rather than by a
// request, the collection of the gauges.
//
// A nil *Telemetry records nothing, so a path can take one as an optional
// setting.
package telemetry
