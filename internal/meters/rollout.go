package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// rolloutInstruments are the instruments of the runtime rollout
// (transport.WithRollout).
type rolloutInstruments struct {
	fallbacks metric.Int64Counter
}

func newRolloutInstruments(m metric.Meter, check func(error)) rolloutInstruments {
	var r rolloutInstruments
	var err error
	r.fallbacks, err = m.Int64Counter(MetricRolloutFallbacks,
		metric.WithUnit("{request}"),
		metric.WithDescription("Gateway requests whose path the startup switch decided because the rollout flag could not, by fusion.rollout.reason (provider_error, timeout, busy, invalid_variant, not_built, no_value)."))
	check(err)
	return r
}

// RecordRolloutFallback counts one gateway request that fell back to the
// startup switch, for reason; ctx is its first source schema call's. It is
// recorded once per gateway request, at its decision.
//
// On a nil *Set it does nothing.
func (s *Set) RecordRolloutFallback(ctx context.Context, reason string) {
	if s == nil {
		return
	}
	s.rollout.fallbacks.Add(ctx, 1, metric.WithAttributes(AttrRolloutReason.String(reason)))
}
