package telemetry_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/telemetry"
)

// TestRecordCanaryShare: the share gauge holds the last share per source
// schema, and the fallback counter counts fallbacks only.
func TestRecordCanaryShare(t *testing.T) {
	type change struct {
		schema   string
		share    float64
		fallback bool
	}
	tests := []struct {
		name       string
		changes    []change
		wantShare  map[string]float64
		wantFallen map[string]int64
	}{
		{"none", nil, map[string]float64{}, map[string]int64{}},
		{
			"start, fall back, restart",
			[]change{{"products", 0.05, false}, {"reviews", 0.05, false}, {"products", 0, true}, {"products", 0.05, false}, {"reviews", 0.1, false}},
			map[string]float64{"products": 0.05, "reviews": 0.1},
			map[string]int64{"products": 1},
		},
		{
			"two fallbacks",
			[]change{{"products", 0.5, false}, {"products", 0, true}, {"products", 0.5, false}, {"products", 0, true}},
			map[string]float64{"products": 0},
			map[string]int64{"products": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			for _, c := range tt.changes {
				r.set.RecordCanaryShare(c.schema, c.share, c.fallback)
			}
			m := r.collect(t)
			share := map[string]float64{}
			if g, ok := m[telemetry.MetricCanaryShare].(metricdata.Gauge[float64]); ok {
				for _, p := range g.DataPoints {
					share[setAttrs(p.Attributes)["fusion.source_schema"]] = p.Value
				}
			}
			fallen := map[string]int64{}
			if s, ok := m[telemetry.MetricCanaryFallbacks].(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					fallen[setAttrs(p.Attributes)["fusion.source_schema"]] += p.Value
				}
			}
			if diff := cmp.Diff(tt.wantShare, share); diff != "" {
				t.Errorf("share gauge mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFallen, fallen); diff != "" {
				t.Errorf("fallback counter mismatch (-want +got):\n%s", diff)
			}
		})
	}
	var nilTel *telemetry.Telemetry
	meters.Of(nilTel).RecordCanaryShare("products", 1, true) // does nothing
}
