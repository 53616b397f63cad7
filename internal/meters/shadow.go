package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/fusiongo/transport/shadow"
)

// shadowInstruments are the counters of shadow comparison.
type shadowInstruments struct {
	comparisons metric.Int64Counter
	mismatches  metric.Int64Counter
	dropped     metric.Int64Counter
}

func newShadowInstruments(m metric.Meter, check func(error)) shadowInstruments {
	var s shadowInstruments
	var err error
	s.comparisons, err = m.Int64Counter(MetricShadowComparisons,
		metric.WithUnit("{comparison}"),
		metric.WithDescription("Shadowed queries compared, equal or not."))
	check(err)
	s.mismatches, err = m.Int64Counter(MetricShadowMismatches,
		metric.WithUnit("{difference}"),
		metric.WithDescription("Differences found between the legacy and the sockets answer of a shadowed query, by kind."))
	check(err)
	s.dropped, err = m.Int64Counter(MetricShadowDropped,
		metric.WithUnit("{comparison}"),
		metric.WithDescription("Sampled queries that could not be compared, by reason."))
	check(err)
	return s
}

// RecordShadowCompared counts a comparison of source schema schema's two
// answers, equal or not; ctx is the shadowed request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordShadowCompared(ctx context.Context, schema string, equal bool) {
	if s == nil {
		return
	}
	s.shadow.comparisons.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrShadowEqual.Bool(equal)))
}

// RecordShadowMismatch counts one difference of kind kind between source
// schema schema's two answers; ctx is the shadowed request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordShadowMismatch(ctx context.Context, schema, kind string) {
	if s == nil {
		return
	}
	s.shadow.mismatches.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrShadowKind.String(kind)))
}

// RecordShadowDropped counts a sampled query of source schema schema that
// could not be compared, for reason; ctx is the shadowed request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordShadowDropped(ctx context.Context, schema, reason string) {
	if s == nil {
		return
	}
	s.shadow.dropped.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrShadowReason.String(reason)))
}

// ShadowPublisher returns a shadow.Publisher that counts what a Shadow
// finds in s's shadow counters, with the shadowed request's context: each
// comparison, each difference of a mismatch by its kind, each drop by its
// reason. On a nil *Set it returns nil.
func (s *Set) ShadowPublisher() shadow.Publisher {
	if s == nil {
		return nil
	}
	return shadowPublisher{s}
}

// shadowPublisher is Set.ShadowPublisher's.
type shadowPublisher struct{ s *Set }

func (p shadowPublisher) Publish(ctx context.Context, m shadow.Mismatch) {
	for _, d := range m.Differences {
		p.s.RecordShadowMismatch(ctx, m.Schema, string(d.Kind))
	}
}

func (p shadowPublisher) Compared(ctx context.Context, schema string, equal bool) {
	p.s.RecordShadowCompared(ctx, schema, equal)
}

func (p shadowPublisher) Dropped(ctx context.Context, schema, reason string) {
	p.s.RecordShadowDropped(ctx, schema, reason)
}
