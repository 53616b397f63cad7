package transport_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/telemetry"
)

// traced is a Telemetry on a ManualReader whose exemplar filter keeps the
// measurements made in a sampled span's context, and the trace IDs of the
// contexts the test's requests were sent with: a measurement recorded
// with a request's context has an exemplar of that request's trace.
type traced struct {
	tel    *telemetry.Telemetry
	reader *sdkmetric.ManualReader
	mu     sync.Mutex
	sent   map[trace.TraceID]bool
	n      uint64
}

func newTraced(t *testing.T) *traced {
	t.Helper()
	tr := &traced{reader: sdkmetric.NewManualReader(), sent: map[trace.TraceID]bool{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.reader), sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	tel, err := telemetry.New(telemetry.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	tr.tel = tel
	return tr
}

// ctx returns a new context in a sampled span of a trace of its own, as
// a gateway request's would be.
func (tr *traced) ctx() context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.n++
	var tid trace.TraceID
	var sid trace.SpanID
	binary.BigEndian.PutUint64(tid[8:], tr.n)
	binary.BigEndian.PutUint64(sid[:], tr.n)
	tr.sent[tid] = true
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
}

// post sends body as a request of its own trace, reads and closes the
// answer, and returns its status or error.
func (tr *traced) post(inv transport.Invoker, body string) (int, error) {
	resp, err := inv.Post(tr.ctx(), "products", []byte(body))
	if err != nil {
		return 0, err
	}
	drainClose(resp)
	return resp.StatusCode, nil
}

func drainClose(resp *http.Response) {
	buf := make([]byte, 512)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
}

// check collects, and fails the test unless each of the sums named has a
// point, and each of their points has exemplars, all of traces the test's
// requests were sent in.
func (tr *traced) check(t *testing.T, names ...string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tr.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]metricdata.Sum[int64]{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				sums[m.Name] = s
			}
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, name := range names {
		s, ok := sums[name]
		if !ok || len(s.DataPoints) == 0 {
			t.Errorf("%s: no point recorded", name)
			continue
		}
		for _, p := range s.DataPoints {
			if len(p.Exemplars) == 0 {
				t.Errorf("%s %v: no exemplar: recorded without the request's context", name, p.Attributes.ToSlice())
			}
			for _, e := range p.Exemplars {
				if tid := trace.TraceID(e.TraceID); !tr.sent[tid] {
					t.Errorf("%s: exemplar of trace %s, which no request was sent in", name, tid)
				}
			}
		}
	}
}

// TestTelemetryContextReachesResilience, on every path: the breaker's
// opening, the retries the budget refused, the hedges sent and won are
// recorded with the context of the request that caused them (issue 31):
// each has exemplars of the requests' traces.
func TestTelemetryContextReachesResilience(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			tr := newTraced(t)
			srv := newStatusServer(t, http.StatusServiceUnavailable)
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				breakerOn(time.Hour)(s)
				s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, BudgetRatio: 0.1, BudgetMinPerSecond: env.NoLimit}
			}), transport.WithTelemetry(tr.tel))
			for range 10 {
				tr.post(inv, queryBody)
			}
			tr.check(t, telemetry.MetricBreakerTransitions, telemetry.MetricRetryBudgetExhaustions)

			hedged := newTraced(t)
			hs := newHedgeServer(t)
			defer close(hs.release)
			hinv := newInvoker(t, withSchema(p, hs.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 20 * time.Millisecond}}
			}), transport.WithTelemetry(hedged.tel), hs.marked())
			for id := range 3 { // the first try of a multiple of 5 is held: its hedge wins
				if _, err := hedged.post(hinv, fmt.Sprintf(`{"query":"query { attempt }","variables":{"id":%d}}`, 5*(id+1))); err != nil {
					t.Fatal(err)
				}
			}
			hedged.check(t, telemetry.MetricHedgesSent, telemetry.MetricHedgesWon)
		})
	}
}

// TestTelemetryContextReachesShaping, on every path: a compressed body
// and a request the rate limit refused are recorded with their request's
// context.
func TestTelemetryContextReachesShaping(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			tr := newTraced(t)
			srv := newDecodingServer(t, nil)
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				compressed("gzip", 1024)(s)
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1}
			}), transport.WithTelemetry(tr.tel))
			body := entityBody("traced", 100)
			if _, err := tr.post(inv, body); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.post(inv, body); err == nil {
				t.Fatal("second call went through, want a rate limit refusal")
			}
			tr.check(t, telemetry.MetricCompressedRequests, telemetry.MetricCompressionBytesSaved, telemetry.MetricRateLimited)
		})
	}
}

// TestTelemetryContextReachesEjection: on the sockets path, the ejection
// of an address that keeps failing is recorded with the context of the
// request whose failure ejected it.
func TestTelemetryContextReachesEjection(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		tr := newTraced(t)
		set := newReplicas(t, 3)
		set.r[1].mode.Store(answer503)
		ejected := make(chan struct{}, 4)
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = time.Minute
		}), transport.WithResolver(newStubResolver(set.ips())), transport.WithTelemetry(tr.tel),
			transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
				if ev.Kind == transport.AddressEjected {
					ejected <- struct{}{}
				}
			}))
		for i := 0; ; i++ {
			if i == 100 {
				t.Fatal("no ejection after 100 calls")
			}
			tr.post(inv, `{"query":"{ok}"}`)
			select {
			case <-ejected:
			default:
				continue
			}
			break
		}
		tr.check(t, telemetry.MetricEjections)
	})
}
