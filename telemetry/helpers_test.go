package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rig is a Telemetry on SDK providers whose spans and metrics a test reads
// back, with the W3C trace context propagator.
type rig struct {
	tel    *telemetry.Telemetry
	set    *meters.Set // tel's instruments, as the transport reaches them
	tp     *sdktrace.TracerProvider
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := telemetry.New(telemetry.Options{
		TracerProvider: r.tp,
		MeterProvider:  mp,
		Propagator:     propagation.TraceContext{},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.tel = tel
	r.set = meters.Of(tel)
	return r
}

// clientSpans are the ended spans of kind client.
func (r *rig) clientSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			out = append(out, s)
		}
	}
	return out
}

// collect reads every metric of the package by name.
func (r *rig) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != telemetry.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// total is the sum of an int64 sum's data points, or of a histogram's
// counts: one number per instrument to compare.
func total(t *testing.T, a metricdata.Aggregation) int64 {
	t.Helper()
	switch d := a.(type) {
	case nil:
		return 0
	case metricdata.Sum[int64]:
		var n int64
		for _, p := range d.DataPoints {
			n += p.Value
		}
		return n
	case metricdata.Histogram[float64]:
		var n int64
		for _, p := range d.DataPoints {
			n += int64(p.Count)
		}
		return n
	}
	t.Fatalf("unexpected aggregation %T", a)
	return 0
}

// attrs renders a set as key=value strings, sorted, for cmp.Diff.
func attrs(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func setAttrs(s attribute.Set) map[string]string { return attrs(s.ToSlice()) }

// server is a source schema that records each request (wiretest.Server)
// and answers with the status in the query's status parameter.
type server struct{ *wiretest.Server }

func newServer(t *testing.T) *server {
	t.Helper()
	return &server{wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusOK
		if v := r.URL.Query().Get("status"); v != "" {
			code, _ = strconv.Atoi(v)
		}
		w.WriteHeader(code)
		fmt.Fprint(w, `{"data":{"ok":true}}`)
	}})}
}

// headers are the trace headers of the requests the server has seen.
func (s *server) headers() []http.Header {
	var hs []http.Header
	for _, r := range s.Requests() {
		hs = append(hs, http.Header{"Traceparent": r.Header.Values("Traceparent"), "Tracestate": r.Header.Values("Tracestate")})
	}
	return hs
}

// transport is a fresh http.Transport whose connections close with the
// test, for the goroutine leak check.
func transport(t *testing.T) *http.Transport {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// drain reads resp's body to its end and closes it.
func drain(t *testing.T, resp *http.Response) {
	t.Helper()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("reading body: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("closing body: %v", err)
	}
}

// seenBy records the request that reaches it, then passes it on.
type seenBy struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []*http.Request
}

func (s *seenBy) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.got = append(s.got, req)
	s.mu.Unlock()
	return s.next.RoundTrip(req)
}
