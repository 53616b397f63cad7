package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// cacheInstruments are the instruments of the response cache.
type cacheInstruments struct {
	events metric.Int64Counter
}

func newCacheInstruments(m metric.Meter, check func(error)) cacheInstruments {
	var c cacheInstruments
	var err error
	c.events, err = m.Int64Counter(MetricCacheEvents,
		metric.WithUnit("{event}"),
		metric.WithDescription("Response cache events per source schema, by fusion.cache.status (hit, miss, bypass, stored, not_stored, store_error) and fusion.cache.reason (why a call bypassed the cache, an answer was not stored, or a store failed)."))
	check(err)
	return c
}

// RecordCache counts one response cache event of source schema schema:
// status is the event's kind (hit, miss, bypass, stored, not_stored,
// store_error), reason why, if any. A hit, miss or bypass also sets the
// span of ctx, if any, the attribute AttrCacheStatus.
//
// On a nil *Set it only sets the span's attribute.
func (s *Set) RecordCache(ctx context.Context, schema, status, reason string) {
	switch status {
	case "hit", "miss", "bypass":
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(AttrCacheStatus.String(status))
		}
	}
	if s == nil {
		return
	}
	s.cache.events.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrCacheStatus.String(status), AttrCacheReason.String(reason)))
}
