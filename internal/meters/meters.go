// Package meters holds the instruments that package telemetry creates for
// the transport's own events (resilience, traffic shaping, canary,
// addresses, connections, reloads, shadow comparisons, the response cache,
// persisted queries, the runtime rollout) and records them.
// Package telemetry keeps a *Set in each Telemetry, out of its API; the
// root package reaches it with Of.
//
// Every Record method takes the context of the request that caused the
// event, so that a measurement carries its trace (an exemplar links it to
// the request's span) and its baggage. The events that no request causes
// (a reload, a change of canary share, the end of an ejection) are
// recorded by callers that say so with context.Background().
//
// A nil *Set records nothing.
package meters

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The attribute keys of the measurements, declared here once: package
// telemetry exports each under the same name (telemetry.AttrSourceSchema is
// AttrSourceSchema).
const (
	AttrSourceSchema  = attribute.Key("fusion.source_schema")
	AttrPath          = attribute.Key("fusion.transport.path")
	AttrBreakerState  = attribute.Key("fusion.breaker.state")
	AttrAddress       = attribute.Key("fusion.transport.address")
	AttrShadowEqual   = attribute.Key("fusion.shadow.equal")
	AttrShadowKind    = attribute.Key("fusion.shadow.kind")
	AttrShadowReason  = attribute.Key("fusion.shadow.reason")
	AttrCacheStatus   = attribute.Key("fusion.cache.status")
	AttrCacheReason   = attribute.Key("fusion.cache.reason")
	AttrRolloutReason = attribute.Key("fusion.rollout.reason")

	AttrPersistedQueryReason = attribute.Key("fusion.persisted_query.reason")
)

// Of returns the *Set of a *telemetry.Telemetry, nil for a nil one. Package
// telemetry sets it in its init: this package cannot name that type, which
// holds a *Set. Nil until package telemetry is linked in; any package that
// has a *telemetry.Telemetry to pass has linked it.
var Of func(telemetry any) *Set

// Set is the instrument set of one Telemetry. It is safe for concurrent
// use.
type Set struct {
	meter metric.Meter

	connsOpen metric.Int64ObservableGauge
	connsIdle metric.Int64ObservableGauge

	reloads  metric.Int64Counter
	kept     metric.Int64Counter
	replaced metric.Int64Counter
	removed  metric.Int64Counter

	canary     canaryInstruments
	resilience resilienceInstruments
	addresses  addressInstruments
	shaping    shapingInstruments
	shadow     shadowInstruments
	cache      cacheInstruments
	persisted  persistedInstruments
	rollout    rolloutInstruments
}

// New creates every instrument of a Set on m; check receives each
// instrument's error, nil or not, so that the caller can list all the
// rejected ones at once.
func New(m metric.Meter, check func(error)) *Set {
	s := &Set{meter: m}
	s.newConnectionInstruments(m, check)
	s.newReloadInstruments(m, check)
	s.canary = newCanaryInstruments(m, check)
	s.resilience = newResilienceInstruments(m, check)
	s.addresses = newAddressInstruments(m, check)
	s.shaping = newShapingInstruments(m, check)
	s.shadow = newShadowInstruments(m, check)
	s.cache = newCacheInstruments(m, check)
	s.persisted = newPersistedInstruments(m, check)
	s.rollout = newRolloutInstruments(m, check)
	return s
}

// schemaPath are the attributes of most measurements.
func schemaPath(schema, path string) metric.MeasurementOption {
	return metric.WithAttributes(AttrSourceSchema.String(schema), AttrPath.String(path))
}

// newReloadInstruments creates the instruments of reloads.
func (s *Set) newReloadInstruments(m metric.Meter, check func(error)) {
	var err error
	s.reloads, err = m.Int64Counter(MetricReloads,
		metric.WithUnit("{reload}"),
		metric.WithDescription("Configuration reloads applied."))
	check(err)
	s.kept, err = m.Int64Counter(MetricTransportsKept,
		metric.WithUnit("{transport}"),
		metric.WithDescription("Source schema transports that a reload kept, with their warm connections."))
	check(err)
	s.replaced, err = m.Int64Counter(MetricTransportsReplaced,
		metric.WithUnit("{transport}"),
		metric.WithDescription("Source schema transports that a reload replaced because their settings changed."))
	check(err)
	s.removed, err = m.Int64Counter(MetricTransportsRemoved,
		metric.WithUnit("{transport}"),
		metric.WithDescription("Source schema transports that a reload dropped because their schema was removed."))
	check(err)
}

// RecordReload counts a reload that took effect: fusion.transport.reloads
// by one, and fusion.transport.transports.kept, .replaced and .removed by
// the number of source schema transports that the reload kept with their
// warm connections, replaced because their settings changed, and dropped
// because their schema is gone. A rejected reload is not recorded. The
// root calls it after the new configuration is in force. A reload belongs
// to no request: there is no context to take spans or baggage from.
func (s *Set) RecordReload(kept, replaced, removed int) {
	if s == nil {
		return
	}
	ctx := context.Background()
	s.reloads.Add(ctx, 1)
	s.kept.Add(ctx, int64(kept))
	s.replaced.Add(ctx, int64(replaced))
	s.removed.Add(ctx, int64(removed))
}
