package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/telemetry"
)

func TestMetricsRequests(t *testing.T) {
	r := newRig(t)
	srv := newServer(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	rt := r.tel.Middleware("products", "sockets")(transport(t))

	for _, target := range []string{srv.URL, closed.URL} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, target, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			drain(t, resp)
		}
	}

	m := r.collect(t)
	got := map[string]int64{}
	for _, name := range []string{telemetry.MetricRequests, telemetry.MetricErrors, telemetry.MetricRequestDuration, telemetry.MetricRequestsInFlight} {
		got[name] = total(t, m[name])
	}
	want := map[string]int64{
		telemetry.MetricRequests:         2,
		telemetry.MetricErrors:           1,
		telemetry.MetricRequestDuration:  2, // count
		telemetry.MetricRequestsInFlight: 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics mismatch (-want +got):\n%s", diff)
	}

	// One duration series per outcome: the status code for the answer,
	// the error's kind for the refused dial.
	h, _ := m[telemetry.MetricRequestDuration].(metricdata.Histogram[float64])
	outcomes := map[string]uint64{}
	for _, p := range h.DataPoints {
		a := setAttrs(p.Attributes)
		outcomes["status="+a["http.response.status_code"]+" error.type="+a["error.type"]] += p.Count
		if p.Sum < 0 {
			t.Errorf("negative duration %v", p.Sum)
		}
	}
	wantOutcomes := map[string]uint64{"status=200 error.type=": 1, "status= error.type=connection_refused": 1}
	if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
		t.Errorf("duration series mismatch (-want +got):\n%s", diff)
	}
}

func TestObserveConnections(t *testing.T) {
	type conns struct {
		schema     string
		open, idle int
	}
	tests := []struct {
		name   string
		path   string
		yields []conns
		want   map[string]int64 // "instrument schema path" → value
	}{
		{"no schemas", "sockets", nil, map[string]int64{}},
		{
			"two schemas", "sockets",
			[]conns{{"products", 3, 1}, {"reviews", 2, 2}},
			map[string]int64{
				"open products sockets": 3, "idle products sockets": 1,
				"open reviews sockets": 2, "idle reviews sockets": 2,
			},
		},
		{
			"legacy path", "legacy",
			[]conns{{"accounts", 1, 0}},
			map[string]int64{"open accounts legacy": 1, "idle accounts legacy": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			unregister, err := r.set.ObserveConnections(tt.path, func(yield func(string, int, int)) {
				for _, c := range tt.yields {
					yield(c.schema, c.open, c.idle)
				}
			})
			if err != nil {
				t.Fatalf("ObserveConnections: %v", err)
			}
			if diff := cmp.Diff(tt.want, gauges(t, r.collect(t))); diff != "" {
				t.Errorf("gauges mismatch (-want +got):\n%s", diff)
			}
			if err := unregister(); err != nil {
				t.Fatalf("unregister: %v", err)
			}
			if got := gauges(t, r.collect(t)); len(got) != 0 {
				t.Errorf("after unregister, gauges = %v, want none", got)
			}
		})
	}
}

// gauges flattens the connection gauges to "open schema path" → value.
func gauges(t *testing.T, m map[string]metricdata.Aggregation) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for prefix, name := range map[string]string{"open": telemetry.MetricConnectionsOpen, "idle": telemetry.MetricConnectionsIdle} {
		if m[name] == nil {
			continue
		}
		g, ok := m[name].(metricdata.Gauge[int64])
		if !ok {
			t.Fatalf("%s is a %T, want a Gauge[int64]", name, m[name])
		}
		for _, p := range g.DataPoints {
			a := setAttrs(p.Attributes)
			out[prefix+" "+a["fusion.source_schema"]+" "+a["fusion.transport.path"]] = p.Value
		}
	}
	return out
}

func TestRecordReload(t *testing.T) {
	type reload struct{ kept, replaced, removed int }
	tests := []struct {
		name    string
		reloads []reload
		want    map[string]int64
	}{
		{
			"none", nil,
			map[string]int64{telemetry.MetricReloads: 0, telemetry.MetricTransportsKept: 0, telemetry.MetricTransportsReplaced: 0, telemetry.MetricTransportsRemoved: 0},
		},
		{
			"one", []reload{{kept: 2, replaced: 1}},
			map[string]int64{telemetry.MetricReloads: 1, telemetry.MetricTransportsKept: 2, telemetry.MetricTransportsReplaced: 1, telemetry.MetricTransportsRemoved: 0},
		},
		{
			"three, one that changed nothing", []reload{{kept: 2, replaced: 1}, {kept: 3}, {kept: 1, replaced: 1, removed: 1}},
			map[string]int64{telemetry.MetricReloads: 3, telemetry.MetricTransportsKept: 6, telemetry.MetricTransportsReplaced: 2, telemetry.MetricTransportsRemoved: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			for _, rl := range tt.reloads {
				r.set.RecordReload(rl.kept, rl.replaced, rl.removed)
			}
			m := r.collect(t)
			got := map[string]int64{}
			for name := range tt.want {
				got[name] = total(t, m[name])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reload counters mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNilTelemetry(t *testing.T) {
	var tel *telemetry.Telemetry
	meters.Of(tel).RecordReload(1, 2, 3)
	unregister, err := meters.Of(tel).ObserveConnections("sockets", func(func(string, int, int)) {
		t.Error("nil *Telemetry called the connections func")
	})
	if err != nil {
		t.Fatalf("ObserveConnections: %v", err)
	}
	if err := unregister(); err != nil {
		t.Fatalf("unregister: %v", err)
	}
}
