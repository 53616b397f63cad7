package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// persistedInstruments are the instruments of automatic persisted queries.
type persistedInstruments struct {
	resends metric.Int64Counter
}

func newPersistedInstruments(m metric.Meter, check func(error)) persistedInstruments {
	var p persistedInstruments
	var err error
	p.resends, err = m.Int64Counter(MetricPersistedQueryResends,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests sent again with their query text because the source schema refused them by their hash (persisted_queries), by fusion.persisted_query.reason (not_found, not_supported, request_error)."))
	check(err)
	return p
}

// EventPersistedQueryResend is the span event of a request sent again with
// its query text, with AttrPersistedQueryReason.
const EventPersistedQueryResend = "persisted_query.resend"

// RecordPersistedQueryResend counts one request of source schema schema
// sent again with its query text, for reason, and marks the span of ctx,
// if any, with the event EventPersistedQueryResend.
//
// On a nil *Set it only marks the span.
func (s *Set) RecordPersistedQueryResend(ctx context.Context, schema, reason string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventPersistedQueryResend, trace.WithAttributes(AttrPersistedQueryReason.String(reason)))
	}
	if s == nil {
		return
	}
	s.persisted.resends.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrPersistedQueryReason.String(reason)))
}
