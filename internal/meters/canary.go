package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// canaryInstruments are the instruments of a canary rollout.
type canaryInstruments struct {
	share     metric.Float64Gauge
	fallbacks metric.Int64Counter
}

// newCanaryInstruments creates the canary instruments on m; check collects
// a rejected one's error.
func newCanaryInstruments(m metric.Meter, check func(error)) canaryInstruments {
	var c canaryInstruments
	var err error
	c.share, err = m.Float64Gauge(MetricCanaryShare,
		metric.WithUnit("1"),
		metric.WithDescription("Share of a source schema's gateway requests served by the sockets path in a canary rollout, from 0 to 1."))
	check(err)
	c.fallbacks, err = m.Int64Counter(MetricCanaryFallbacks,
		metric.WithUnit("{fallback}"),
		metric.WithDescription("Canary fallbacks: times a source schema's sockets share dropped to zero because sockets failed more often than legacy."))
	check(err)
	return c
}

// RecordCanaryShare sets fusion.transport.canary.share of source schema
// schema to share, and counts fusion.transport.canary.fallbacks by one when
// the change is a fallback. The root calls it on every change of share
// (the start of a schema's canary included), never per request.
//
// It records with context.Background(), deliberately: a change of share
// is the judge's verdict on the outcomes of many requests (or the start of
// a canary), not an event of the one request whose outcome came last.
//
// On a nil *Set it does nothing.
func (s *Set) RecordCanaryShare(schema string, share float64, fallback bool) {
	if s == nil {
		return
	}
	ctx := context.Background()
	attrs := metric.WithAttributes(AttrSourceSchema.String(schema))
	s.canary.share.Record(ctx, share, attrs)
	if fallback {
		s.canary.fallbacks.Add(ctx, 1, attrs)
	}
}
