package transport_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/telemetry"
)

// TestTelemetry: on both paths, each source schema request is a client
// span whose W3C trace context reaches the source schema, and the metrics
// count requests, reloads and (sockets) open connections.
func TestTelemetry(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
			if err != nil {
				t.Fatal(err)
			}
			srv := newSchemaServer(t, nil)
			cfg := config(path, "products", srv.URL())
			inv := newInvoker(t, cfg, transport.WithTelemetry(tel))

			ctx, parent := tp.Tracer("test").Start(context.Background(), "gateway request")
			post(t, inv, ctx, "products")
			parent.End()
			if err := inv.Reload(config(path, "products", srv.URL())); err != nil {
				t.Fatal(err)
			}

			ended := spans.Ended()
			var client sdktrace.ReadOnlySpan
			for _, s := range ended {
				if s.Name() != "gateway request" {
					client = s
				}
			}
			if client == nil {
				t.Fatalf("no client span among %d spans", len(ended))
			}
			if client.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("client span's parent %s, want the gateway span %s", client.Parent().SpanID(), parent.SpanContext().SpanID())
			}
			traceparent := srv.Last(t).Header.Get("Traceparent")
			if want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"; traceparent != want {
				t.Errorf("the source schema got traceparent %q, want %q", traceparent, want)
			}

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch d := m.Data.(type) {
					case metricdata.Sum[int64]:
						for _, p := range d.DataPoints {
							got[m.Name] += p.Value
						}
					case metricdata.Gauge[int64]:
						for _, p := range d.DataPoints {
							got[m.Name] += p.Value
						}
					}
				}
			}
			if got[telemetry.MetricRequests] != 1 || got[telemetry.MetricReloads] != 1 {
				t.Errorf("metrics %v: want 1 request and 1 reload", got)
			}
			if onSockets(path) && got[telemetry.MetricConnectionsOpen] != 1 {
				t.Errorf("open connections %d, want the 1 warm connection", got[telemetry.MetricConnectionsOpen])
			}
		})
	}
}

// TestRequestLog: one record per source schema request, with the source
// schema named, and no header value in it.
func TestRequestLog(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			var buf logBuffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			srv := newSchemaServer(t, nil)
			cfg := config(path, "products", srv.URL())
			cfg.ForwardHeaders = []string{"Authorization"}
			inv := newInvoker(t, cfg, transport.WithRequestLog(log))
			post(t, inv, gatewayCtx("Authorization", "Bearer secret-token-1"), "products")
			out := buf.String()
			if !strings.Contains(out, "source_schema=products") || !strings.Contains(out, "status=200") {
				t.Errorf("request log lacks the schema or status:\n%s", out)
			}
			if strings.Contains(out, "secret-token-1") {
				t.Errorf("request log carries a header value:\n%s", out)
			}
		})
	}
}
