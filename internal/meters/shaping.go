package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// shapingInstruments are the instruments of request compression and the
// rate limit.
type shapingInstruments struct {
	compressed  metric.Int64Counter
	saved       metric.Int64Counter
	limited     metric.Int64Counter
	storeErrors metric.Int64Counter
	fallbacks   metric.Int64Counter
	returns     metric.Int64Counter
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
	s.storeErrors, err = m.Int64Counter(MetricRateLimitStoreErrors,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose check of the source schema's shared rate limit (rate_limit.store: redis) failed or outlived rate_limit.store_timeout: each decided by rate_limit.on_store_error."))
	check(err)
	s.fallbacks, err = m.Int64Counter(MetricRateLimitFallbacks,
		metric.WithUnit("{fallback}"),
		metric.WithDescription("Times the source schema's shared rate limit fell back to rate_limit.on_store_error because its Redis store failed."))
	check(err)
	s.returns, err = m.Int64Counter(MetricRateLimitReturns,
		metric.WithUnit("{return}"),
		metric.WithDescription("Times the source schema's shared rate limit was shared again after a fall back: its Redis store answered."))
	check(err)
	return s
}

// RecordCompressed counts one request body of source schema schema on
// path sent compressed, raw bytes long before and sent after; ctx is the
// request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordCompressed(ctx context.Context, schema, path string, raw, sent int) {
	if s == nil {
		return
	}
	attrs := schemaPath(schema, path)
	s.shaping.compressed.Add(ctx, 1, attrs)
	s.shaping.saved.Add(ctx, int64(raw-sent), attrs)
}

// RecordRateLimited counts one request of source schema schema on path
// that its rate limit refused; ctx is the refused request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordRateLimited(ctx context.Context, schema, path string) {
	if s == nil {
		return
	}
	s.shaping.limited.Add(ctx, 1, schemaPath(schema, path))
}

// RecordRateLimitStoreError counts one request of source schema schema
// whose check of the shared rate limit failed; ctx is the request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordRateLimitStoreError(ctx context.Context, schema string) {
	if s == nil {
		return
	}
	s.shaping.storeErrors.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema)))
}

// RecordRateLimitFallback counts one fall back of source schema schema's
// shared rate limit; ctx is the request whose check failed first.
//
// On a nil *Set it does nothing.
func (s *Set) RecordRateLimitFallback(ctx context.Context, schema string) {
	if s == nil {
		return
	}
	s.shaping.fallbacks.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema)))
}

// RecordRateLimitReturn counts one return of source schema schema's shared
// rate limit from a fall back; ctx is the request whose check succeeded.
//
// On a nil *Set it does nothing.
func (s *Set) RecordRateLimitReturn(ctx context.Context, schema string) {
	if s == nil {
		return
	}
	s.shaping.returns.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema)))
}
