package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fusiongo/transport/telemetry"
)

// A source schema request under a gateway span carries a W3C traceparent
// in the gateway's trace. In an application, the providers are the
// application's own (or nil, for the global ones).
func ExampleTelemetry_Middleware() {
	subgraph := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("traceparent received:", r.Header.Get("Traceparent") != "")
	}))
	defer subgraph.Close()

	tp := sdktrace.NewTracerProvider() // with an exporter in a real application
	defer tp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{
		TracerProvider: tp,
		Propagator:     propagation.TraceContext{}, // nil: the global propagator, a no-op unless set
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	rt := tel.Middleware("products", "sockets")(base)

	ctx, gatewaySpan := tp.Tracer("gateway").Start(context.Background(), "gateway request")
	defer gatewaySpan.End()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, subgraph.URL+"/graphql", strings.NewReader(`{"query":"{ topProducts { upc } }"}`))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // ends the span and the request's measurements
	fmt.Println("status:", resp.StatusCode)
	// Output:
	// traceparent received: true
	// status: 200
}

// A path reports its connections per source schema; the gauges read them
// whenever the MeterProvider collects.
func ExampleTelemetry_ObserveConnections() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{MeterProvider: mp})
	if err != nil {
		fmt.Println(err)
		return
	}

	unregister, err := tel.ObserveConnections("sockets", func(yield func(schema string, open, idle int)) {
		yield("products", 4, 1) // in a path: read from its pools
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unregister()

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
			schema, _ := p.Attributes.Value(telemetry.AttrSourceSchema)
			fmt.Println(m.Name, schema.AsString(), p.Value)
		}
	}
	// Unordered output:
	// fusion.transport.connections.open products 4
	// fusion.transport.connections.idle products 1
}

// A path records each reload that took effect.
func ExampleTelemetry_RecordReload() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{MeterProvider: mp})
	if err != nil {
		fmt.Println(err)
		return
	}

	tel.RecordReload(3, 1, 0) // products, reviews, accounts kept; inventory replaced

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			fmt.Println(m.Name, p.Value)
		}
	}
	// Unordered output:
	// fusion.transport.reloads 1
	// fusion.transport.transports.kept 3
	// fusion.transport.transports.replaced 1
	// fusion.transport.transports.removed 0
}

// With no options, the signals go to the global providers and propagator
// that the application installs with the otel package (otel.SetTracerProvider,
// otel.SetMeterProvider, otel.SetTextMapPropagator), also after New.
func ExampleNew() {
	tel, err := telemetry.New(telemetry.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = tel.Middleware("products", "legacy")(http.DefaultTransport)
	fmt.Println("ready")
	// Output: ready
}
