package meters

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// resilienceInstruments are the instruments of the circuit breaker, the
// retry budget and hedging.
type resilienceInstruments struct {
	state       metric.Int64Gauge
	transitions metric.Int64Counter
	exhausted   metric.Int64Counter
	hedgesSent  metric.Int64Counter
	hedgesWon   metric.Int64Counter
}

// newResilienceInstruments creates the resilience instruments on m; check
// collects a rejected one's error.
func newResilienceInstruments(m metric.Meter, check func(error)) resilienceInstruments {
	var r resilienceInstruments
	var err error
	r.state, err = m.Int64Gauge(MetricBreakerState,
		metric.WithUnit("1"),
		metric.WithDescription("State of a source schema's circuit breaker: 0 closed, 1 half-open, 2 open; recorded on every change."))
	check(err)
	r.transitions, err = m.Int64Counter(MetricBreakerTransitions,
		metric.WithUnit("{transition}"),
		metric.WithDescription("Changes of state of a source schema's circuit breaker, by the state changed to."))
	check(err)
	r.exhausted, err = m.Int64Counter(MetricRetryBudgetExhaustions,
		metric.WithUnit("{retry}"),
		metric.WithDescription("Retries and hedges not made because the source schema's retry budget was spent."))
	check(err)
	r.hedgesSent, err = m.Int64Counter(MetricHedgesSent,
		metric.WithUnit("{request}"),
		metric.WithDescription("Hedged queries: extra sends of a query whose response headers were late."))
	check(err)
	r.hedgesWon, err = m.Int64Counter(MetricHedgesWon,
		metric.WithUnit("{request}"),
		metric.WithDescription("Hedges whose response was the one returned to the caller."))
	check(err)
	return r
}

// RecordBreakerState records a change of source schema schema's circuit
// breaker on path to state to ("closed", "half_open", "open"; state is
// its number, 0, 1 or 2): fusion.transport.breaker.state is set and
// fusion.transport.breaker.transitions counted. ctx is that of the request
// that caused the change (the failure that opened it, the trial that
// closed it, the request that found its open time over), or
// context.Background() when no request did (Breaker.State).
//
// On a nil *Set it does nothing.
func (s *Set) RecordBreakerState(ctx context.Context, schema, path, to string, state int64) {
	if s == nil {
		return
	}
	s.resilience.state.Record(ctx, state, schemaPath(schema, path))
	s.resilience.transitions.Add(ctx, 1, metric.WithAttributes(AttrSourceSchema.String(schema), AttrPath.String(path), AttrBreakerState.String(to)))
}

// RecordBudgetExhausted counts one retry or hedge of source schema schema
// on path that its retry budget refused; ctx is the refused request's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordBudgetExhausted(ctx context.Context, schema, path string) {
	if s == nil {
		return
	}
	s.resilience.exhausted.Add(ctx, 1, schemaPath(schema, path))
}

// RecordHedge counts a hedge of source schema schema on path: sent, or
// won (its response was the one returned); ctx is the hedged query's.
//
// On a nil *Set it does nothing.
func (s *Set) RecordHedge(ctx context.Context, schema, path string, won bool) {
	if s == nil {
		return
	}
	if won {
		s.resilience.hedgesWon.Add(ctx, 1, schemaPath(schema, path))
		return
	}
	s.resilience.hedgesSent.Add(ctx, 1, schemaPath(schema, path))
}
