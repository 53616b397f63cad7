package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// The names of the traffic shaping instruments (see RecordCompressed,
// RecordRateLimited).
const (
	MetricCompressedRequests    = "fusion.transport.request_compression.requests"
	MetricCompressionBytesSaved = "fusion.transport.request_compression.bytes_saved"
	MetricRateLimited           = "fusion.transport.rate_limit.limited"
)

// shapingInstruments are the instruments of request compression and the
// rate limit.
type shapingInstruments struct {
	compressed metric.Int64Counter
	saved      metric.Int64Counter
	limited    metric.Int64Counter
}

func newShapingInstruments(m metric.Meter, check func(error)) shapingInstruments {
	var s shapingInstruments
	var err error
	s.compressed, err = m.Int64Counter(MetricCompressedRequests,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose body was sent compressed (request_compression)."))
	check(err)
	s.saved, err = m.Int64Counter(MetricCompressionBytesSaved,
		metric.WithUnit("By"),
		metric.WithDescription("Request body bytes not sent thanks to request_compression: uncompressed length less compressed length, counted once per call."))
	check(err)
	s.limited, err = m.Int64Counter(MetricRateLimited,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests (attempts and hedges included) that the source schema's rate limit refused, unsent."))
	check(err)
	return s
}

// RecordCompressed counts one request body of source schema schema on
// path sent compressed, raw bytes long before and sent after.
//
// On a nil *Telemetry it does nothing.
func (t *Telemetry) RecordCompressed(ctx context.Context, schema, path string, raw, sent int) {
	if t == nil {
		return
	}
	attrs := metric.WithAttributes(AttrSourceSchema.String(schema), AttrPath.String(path))
	t.shaping.compressed.Add(ctx, 1, attrs)
	t.shaping.saved.Add(ctx, int64(raw-sent), attrs)
}

// RecordRateLimited counts one request of source schema schema on path
// that its rate limit refused.
//
// On a nil *Telemetry it does nothing.
func (t *Telemetry) RecordRateLimited(ctx context.Context, schema, path string) {
	if t == nil {
		return
	}
	t.shaping.limited.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrPath.String(path)))
}
