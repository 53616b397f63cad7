package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusiongo/transport/internal/meters"
)

// ScopeName is the instrumentation scope of every tracer and meter that New
// obtains, so that a view or a sampler can pick this package's signals out.
const ScopeName = "github.com/fusiongo/transport/telemetry"

// The names of the instruments that New creates, as the package
// documentation's table lists them with each one's instrument, unit and
// attributes. The duration histogram follows the OpenTelemetry HTTP client
// semantic conventions; the others have no semantic convention and live
// under fusion.transport. The names of the instruments that the transport
// records (all but the first four) are declared where those instruments
// are made, in internal/meters, and exported here.
const (
	// Requests, fed by Middleware.
	MetricRequestDuration  = "http.client.request.duration"
	MetricRequests         = "fusion.transport.requests"
	MetricErrors           = "fusion.transport.errors"
	MetricRequestsInFlight = "fusion.transport.requests.in_flight"

	// Connections and reloads, fed by the transport that
	// transport.WithTelemetry is given to.
	MetricConnectionsOpen    = meters.MetricConnectionsOpen
	MetricConnectionsIdle    = meters.MetricConnectionsIdle
	MetricReloads            = meters.MetricReloads
	MetricTransportsKept     = meters.MetricTransportsKept
	MetricTransportsReplaced = meters.MetricTransportsReplaced
	MetricTransportsRemoved  = meters.MetricTransportsRemoved

	// A canary rollout.
	MetricCanaryShare     = meters.MetricCanaryShare
	MetricCanaryFallbacks = meters.MetricCanaryFallbacks

	// Circuit breakers, retry budgets, hedging.
	MetricBreakerState           = meters.MetricBreakerState
	MetricBreakerTransitions     = meters.MetricBreakerTransitions
	MetricRetryBudgetExhaustions = meters.MetricRetryBudgetExhaustions
	MetricHedgesSent             = meters.MetricHedgesSent
	MetricHedgesWon              = meters.MetricHedgesWon

	// The addresses of the sockets path's pools, and outlier detection.
	MetricAddresses          = meters.MetricAddresses
	MetricAddressConnections = meters.MetricAddressConnections
	MetricAddressInFlight    = meters.MetricAddressInFlight
	MetricAddressEjected     = meters.MetricAddressEjected
	MetricEjections          = meters.MetricEjections

	// Traffic shaping: request compression, rate limits.
	MetricCompressedRequests    = meters.MetricCompressedRequests
	MetricCompressionBytesSaved = meters.MetricCompressionBytesSaved
	MetricRateLimited           = meters.MetricRateLimited
	MetricRateLimitStoreErrors  = meters.MetricRateLimitStoreErrors
	MetricRateLimitFallbacks    = meters.MetricRateLimitFallbacks
	MetricRateLimitReturns      = meters.MetricRateLimitReturns

	// Shadow comparison (FUSION_SOCKETS_TRANSPORT=shadow).
	MetricShadowComparisons = meters.MetricShadowComparisons
	MetricShadowMismatches  = meters.MetricShadowMismatches
	MetricShadowDropped     = meters.MetricShadowDropped

	// The response cache (response_cache).
	MetricCacheEvents = meters.MetricCacheEvents

	// Automatic persisted queries (persisted_queries).
	MetricPersistedQueryResends = meters.MetricPersistedQueryResends
	// The runtime rollout (transport.WithRollout).
	MetricRolloutFallbacks = meters.MetricRolloutFallbacks
)

// EventPersistedQueryResend is the event on a call's span for each time
// its request went again with its query text, the source schema having
// refused it by its hash, with AttrPersistedQueryReason.
const EventPersistedQueryResend = meters.EventPersistedQueryResend

// The attribute keys on spans and measurements, as the package
// documentation names them. The fusion.* keys are ours, declared where the
// transport's measurements are made, in internal/meters, and exported
// here; the others are from the OpenTelemetry semantic conventions.
const (
	// AttrSourceSchema is the source schema's name, as the configuration
	// spells it.
	AttrSourceSchema = meters.AttrSourceSchema
	// AttrPath is the transport path, "legacy" or "sockets".
	AttrPath = meters.AttrPath
	// AttrBreakerState is the state a circuit breaker changed to:
	// "closed", "half_open" or "open".
	AttrBreakerState = meters.AttrBreakerState
	// AttrAddress is one address of a source schema's host: an IP
	// address, without the port.
	AttrAddress = meters.AttrAddress
	// AttrShadowEqual says whether a shadow comparison found the two
	// answers equal.
	AttrShadowEqual = meters.AttrShadowEqual
	// AttrShadowKind is the kind of a difference that shadow comparison
	// found (answer.Kind: "status", "header", "body", ...).
	AttrShadowKind = meters.AttrShadowKind
	// AttrShadowReason is why a sampled query was not compared (shadow's
	// Drop* constants: "busy", "too_large", "primary_unread").
	AttrShadowReason = meters.AttrShadowReason
	// AttrCacheStatus is what the response cache did: on a call's span
	// "hit", "miss" or "bypass"; on fusion.transport.cache.events also
	// "stored", "not_stored" and "store_error".
	AttrCacheStatus = meters.AttrCacheStatus
	// AttrCacheReason is why a call bypassed the cache, an answer was not
	// stored ("status", "no-store", "errors", "too-large",
	// "invalidated", ...), or a store failed ("lookup", "set",
	// "writes-full"); empty otherwise.
	AttrCacheReason = meters.AttrCacheReason
	// AttrPersistedQueryReason is why a request went again with its query
	// text: "not_found", "not_supported" or "request_error"
	// (middleware.PersistedQueryNotFound, ...).
	AttrPersistedQueryReason = meters.AttrPersistedQueryReason
	// AttrRolloutReason is why the startup switch decided a gateway
	// request's path instead of the rollout flag: "provider_error",
	// "timeout", "busy", "invalid_variant", "not_built" or "no_value".
	AttrRolloutReason = meters.AttrRolloutReason

	AttrRequestMethod         = attribute.Key("http.request.method")
	AttrRequestMethodOriginal = attribute.Key("http.request.method_original")
	AttrResponseStatusCode    = attribute.Key("http.response.status_code")
	AttrErrorType             = attribute.Key("error.type")
	AttrServerAddress         = attribute.Key("server.address")
	AttrServerPort            = attribute.Key("server.port")
	AttrURLFull               = attribute.Key("url.full")
	AttrProtocolVersion       = attribute.Key("network.protocol.version")
)

// durationBuckets are the bucket boundaries, in seconds, that the semantic
// conventions advise for http.client.request.duration. They are advice: a
// view in the user's MeterProvider overrides them.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Options say where the signals go. The zero value sends them to the
// global providers that the application installs with the otel package.
type Options struct {
	// TracerProvider creates the tracer for the client spans. Nil:
	// otel.GetTracerProvider(), which is a no-op until the application
	// calls otel.SetTracerProvider (New may run before that call: the
	// global provider forwards to the one set later).
	TracerProvider trace.TracerProvider

	// MeterProvider creates the meter for every instrument. Nil:
	// otel.GetMeterProvider(), which is a no-op until the application
	// calls otel.SetMeterProvider (New may run before that call, as for
	// TracerProvider).
	MeterProvider metric.MeterProvider

	// Propagator writes the trace context into each outgoing request's
	// headers. Nil: otel.GetTextMapPropagator(), which is a no-op unless
	// the application calls otel.SetTextMapPropagator, so that by default
	// no header is added. Set propagation.TraceContext{} here, or
	// globally, to send W3C traceparent and tracestate headers; add
	// propagation.Baggage{} with propagation.NewCompositeTextMapPropagator
	// to send baggage too.
	Propagator propagation.TextMapPropagator

	// ErrorType names the kind of a failed request for the error.type
	// attribute. It must return few distinct values, since every value is
	// a new metric series. Nil: DefaultErrorType.
	ErrorType ErrorTypeFunc
}

// Telemetry records spans and metrics for the requests of both paths. It
// is a handle: give it to transport.WithTelemetry, which records the
// transport's own metrics in it too (see the package documentation), or
// put its Middleware in a pipeline of your own. It is safe for concurrent
// use. Create it with New; a nil *Telemetry records nothing, and its
// Middleware passes requests through untouched.
type Telemetry struct {
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
	errorType ErrorTypeFunc

	duration metric.Float64Histogram
	requests metric.Int64Counter
	errors   metric.Int64Counter
	inFlight metric.Int64UpDownCounter

	// meters are the instruments of the transport's own events, which
	// the transport records through meters.Of; nil for a nil Telemetry.
	meters *meters.Set
}

func init() {
	meters.Of = func(v any) *meters.Set {
		if t, ok := v.(*Telemetry); ok && t != nil {
			return t.meters
		}
		return nil
	}
}

// New creates the tracer, the meter and every instrument once, from opts.
// opts is not modified. It fails if the MeterProvider rejects an
// instrument.
func New(opts Options) (*Telemetry, error) {
	tp, mp, prop := opts.TracerProvider, opts.MeterProvider, opts.Propagator
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	t := &Telemetry{
		tracer:    tp.Tracer(ScopeName),
		prop:      prop,
		errorType: opts.ErrorType,
	}
	if t.errorType == nil {
		t.errorType = DefaultErrorType
	}

	// Every instrument is attempted, so that the error lists all the
	// rejected ones at once.
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	m := mp.Meter(ScopeName)
	t.newRequestInstruments(m, check)
	t.meters = meters.New(m, check)
	if len(errs) > 0 {
		return nil, fmt.Errorf("telemetry: creating instruments: %w", errors.Join(errs...))
	}
	return t, nil
}

// newRequestInstruments creates the instruments of Middleware, passing
// each error to check.
func (t *Telemetry) newRequestInstruments(m metric.Meter, check func(error)) {
	var err error
	t.duration, err = m.Float64Histogram(MetricRequestDuration,
		metric.WithUnit("s"),
		metric.WithDescription("Duration of source schema requests, until the response body is closed or read to its end."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	check(err)
	t.requests, err = m.Int64Counter(MetricRequests,
		metric.WithUnit("{request}"),
		metric.WithDescription("Source schema requests that ended."))
	check(err)
	t.errors, err = m.Int64Counter(MetricErrors,
		metric.WithUnit("{request}"),
		metric.WithDescription("Source schema requests that ended in a transport error, a body read error or a 5xx status."))
	check(err)
	t.inFlight, err = m.Int64UpDownCounter(MetricRequestsInFlight,
		metric.WithUnit("{request}"),
		metric.WithDescription("Source schema requests sent whose response body is not yet closed or read to its end."))
	check(err)
}
