package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/telemetry"
)

// TestRecordResilience: the breaker gauge holds the last state per schema
// and path, the transitions count by the state changed to, and the budget
// and hedge counters count what they are told; a nil *Telemetry records
// nothing.
func TestRecordResilience(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.set.RecordBreakerState(ctx, "products", "sockets", "open", 2)
	r.set.RecordBreakerState(ctx, "products", "sockets", "half_open", 1)
	r.set.RecordBreakerState(ctx, "products", "sockets", "open", 2)
	r.set.RecordBreakerState(ctx, "reviews", "legacy", "open", 2)
	r.set.RecordBreakerState(ctx, "reviews", "legacy", "half_open", 1)
	r.set.RecordBreakerState(ctx, "reviews", "legacy", "closed", 0)
	for range 3 {
		r.set.RecordBudgetExhausted(ctx, "products", "sockets")
	}
	r.set.RecordHedge(ctx, "products", "legacy", false)
	r.set.RecordHedge(ctx, "products", "legacy", false)
	r.set.RecordHedge(ctx, "products", "legacy", true)
	m := r.collect(t)

	state := map[string]int64{}
	if g, ok := m[telemetry.MetricBreakerState].(metricdata.Gauge[int64]); ok {
		for _, p := range g.DataPoints {
			a := setAttrs(p.Attributes)
			state[a["fusion.source_schema"]+"/"+a["fusion.transport.path"]] = p.Value
		}
	}
	if state["products/sockets"] != 2 || state["reviews/legacy"] != 0 || len(state) != 2 {
		t.Errorf("breaker state gauge %v, want products/sockets 2 (open), reviews/legacy 0 (closed)", state)
	}
	moves := map[string]int64{}
	if s, ok := m[telemetry.MetricBreakerTransitions].(metricdata.Sum[int64]); ok {
		for _, p := range s.DataPoints {
			a := setAttrs(p.Attributes)
			moves[a["fusion.source_schema"]+"/"+a["fusion.breaker.state"]] += p.Value
		}
	}
	if moves["products/open"] != 2 || moves["products/half_open"] != 1 || moves["reviews/closed"] != 1 {
		t.Errorf("breaker transitions %v", moves)
	}
	for name, want := range map[string]int64{telemetry.MetricRetryBudgetExhaustions: 3, telemetry.MetricHedgesSent: 2, telemetry.MetricHedgesWon: 1} {
		if got := total(t, m[name]); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}

	var nilTel *telemetry.Telemetry
	meters.Of(nilTel).RecordBreakerState(ctx, "products", "sockets", "open", 2)
	meters.Of(nilTel).RecordBudgetExhausted(ctx, "products", "sockets")
	meters.Of(nilTel).RecordHedge(ctx, "products", "sockets", true)
}
