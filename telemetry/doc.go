// Package telemetry traces and measures the requests that the transport
// sends to source schemas, through the OpenTelemetry API: the application
// brings its own SDK and exporter, and without one every signal is a no-op.
//
//	otel.SetTextMapPropagator(propagation.TraceContext{}) // send traceparent
//	tel, err := telemetry.New(telemetry.Options{})        // the global providers
//	if err != nil {
//		return err
//	}
//	rt := tel.Middleware("products", "sockets")(base) // one per source schema
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
//	Name                                   Instrument           Unit          Attributes
//	http.client.request.duration           Float64Histogram     s             R
//	fusion.transport.requests              Int64Counter         {request}     R
//	fusion.transport.errors                Int64Counter         {request}     R
//	fusion.transport.requests.in_flight    Int64UpDownCounter   {request}     B
//	fusion.transport.connections.open      Int64ObservableGauge {connection}  fusion.source_schema, fusion.transport.path
//	fusion.transport.connections.idle      Int64ObservableGauge {connection}  fusion.source_schema, fusion.transport.path
//	fusion.transport.reloads               Int64Counter         {reload}      none
//	fusion.transport.transports.kept       Int64Counter         {transport}   none
//	fusion.transport.transports.replaced   Int64Counter         {transport}   none
//	fusion.transport.transports.removed    Int64Counter         {transport}   none
//	fusion.transport.canary.share          Float64Gauge         1             fusion.source_schema
//	fusion.transport.canary.fallbacks      Int64Counter         {fallback}    fusion.source_schema
//	fusion.transport.breaker.state         Int64Gauge           1             fusion.source_schema, fusion.transport.path
//	fusion.transport.breaker.transitions   Int64Counter         {transition}  fusion.source_schema, fusion.transport.path, fusion.breaker.state
//	fusion.transport.retry.budget_exhausted Int64Counter        {retry}       fusion.source_schema, fusion.transport.path
//	fusion.transport.hedges.sent           Int64Counter         {request}     fusion.source_schema, fusion.transport.path
//	fusion.transport.hedges.won            Int64Counter         {request}     fusion.source_schema, fusion.transport.path
//
// B, the attributes known before sending: fusion.source_schema,
// fusion.transport.path, http.request.method, server.address, server.port.
// R, those of a request that ended: B, plus http.response.status_code when
// a response arrived, plus error.type when it failed.
//
// The duration runs from sending until the response body is closed or read
// to its end; its buckets are the semantic conventions' advice (5 ms to
// 10 s), which a view can replace. A request counts as an error, and has
// error.type, when it ends in a transport error, a body read error or a 5xx
// status; error.type is then the error's kind (DefaultErrorType: "timeout",
// "connection_refused", ...) or the status code ("503"). A request is in
// flight from sending until its body ends.
//
// The connection gauges are fed by the path, through ObserveConnections;
// open counts busy and idle connections, idle the idle ones among them. The
// reload counters are fed by the path, through RecordReload, for every
// reload that took effect.
//
// The breaker gauge holds the state a source schema's circuit breaker
// last changed to (0 closed, 1 half-open, 2 open), recorded on each
// change through RecordBreakerState, which also counts the transition by
// the state changed to (fusion.breaker.state). A breaker that never
// changed state has no point: it is closed. The budget counter counts
// every retry and hedge that a source schema's retry budget refused
// (RecordBudgetExhausted); the hedge counters count the hedges sent and
// those whose response was returned (RecordHedge).
//
// The traffic shaping counters count the request bodies sent compressed
// and the bytes that saved (RecordCompressed), and the requests a source
// schema's rate limit refused (RecordRateLimited).
//
// A nil *Telemetry records nothing, so a path can take one as an optional
// setting.
package telemetry
