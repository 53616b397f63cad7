package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/otel/propagation"
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
