package transport_test

// Shadow mode on the wire: the sample rate, and a caller that never waits
// for the shadow side.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/shadow"
	"github.com/fusiongo/transport/telemetry"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestShadowSampleRate: shadow mode sends a sample of queries through
// the sockets path at its rate. Both sides reach the same server; the
// sockets side is told apart by its missing Accept-Encoding (viaSockets).
// For n = 2000 at p = 0.1 the count is binomial, mean 200 and standard
// deviation 13.4; the bounds are more than 7 deviations away.
func TestShadowSampleRate(t *testing.T) {
	const n = 2000
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	// Enough comparison slots that no sampled query is dropped as busy.
	cfg.Shadow = env.ShadowSettings{Rate: 0.1, MaxConcurrent: 64}
	inv := newInvoker(t, cfg)
	for range n {
		post(t, inv, context.Background(), "products")
	}
	inv.Close() // waits for the comparisons, so every shadow request has arrived
	legacy, sockets := 0, 0
	for _, r := range srv.Requests() {
		if r.Header.Get("Accept-Encoding") == "" {
			sockets++
		} else {
			legacy++
		}
	}
	if legacy != n {
		t.Errorf("the legacy path sent %d queries, want every one of %d", legacy, n)
	}
	if sockets < 100 || sockets > 320 {
		t.Errorf("the sockets path was sent %d of %d queries at shadow rate 0.1, want 100 to 320 (mean 200)", sockets, n)
	}
}

// TestShadowCallerNeverWaits: in shadow mode the caller's Post returns,
// and its body reads to the end, while the candidate's request (the
// sockets path's: no Accept-Encoding) is still held by the server.
func TestShadowCallerNeverWaits(t *testing.T) {
	arrived := make(chan struct{})
	var arrivedOnce sync.Once
	release := make(chan struct{})
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			arrivedOnce.Do(func() { close(arrived) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the server closes
	cfg := config(env.PathLegacy, "products", srv.URL())
	// The candidate's own bound is far beyond the test.
	cfg.Shadow = env.ShadowSettings{Rate: 1, Timeout: time.Minute}
	inv := newInvoker(t, cfg)

	done := postAsync(inv, context.Background(), "products", `{"query":"{ ok }"}`)
	select {
	case <-arrived:
	case <-time.After(gapGuard):
		releaseAll()
		<-done
		t.Fatal("the candidate's request never reached the server")
	}
	var res postResult
	select {
	case res = <-done:
	case <-time.After(gapGuard):
		t.Error("the caller's Post did not return while the candidate was held: it waited for the candidate")
		releaseAll()
		res = <-done
	}
	releaseAll()
	if res.err != nil || res.body != `{"data":{"ok":true}}` {
		t.Errorf("caller got %q, %v; want the legacy answer read to its end", res.body, res.err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the server received %d requests, want the primary's and the candidate's", n)
	}
}

// TestShadowTelemetry: with WithTelemetry, shadow comparison is counted in
// the telemetry's shadow counters, beside the Publisher the caller set, with
// the shadowed request's context (exemplars of its trace): a query whose two
// answers differ counts one comparison, not equal, and one body difference;
// a query too large to keep counts one drop, too_large.
func TestShadowTelemetry(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			io.WriteString(w, `{"data":{"price":900}}`)
			return
		}
		io.WriteString(w, `{"data":{"price":899}}`)
	})
	cfg := config(env.PathLegacy, "products", srv.URL())
	cfg.Shadow = env.ShadowSettings{Rate: 1, MaxBodyBytes: 256}
	tr := newTraced(t)
	rec := newRecorder()
	inv := newInvoker(t, cfg, transport.WithTelemetry(tr.tel), transport.WithShadowPublisher(rec))
	if _, err := tr.post(inv, `{"query":"{ price }"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.post(inv, `{"query":"{ price }","variables":{"pad":"`+strings.Repeat("x", 300)+`"}}`); err != nil {
		t.Fatal(err)
	}
	inv.Close() // waits for the comparison

	var rm metricdata.ResourceMetrics
	if err := tr.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{} // "name attr=value ..." → sum
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !strings.HasPrefix(m.Name, "fusion.transport.shadow.") {
				continue
			}
			for _, p := range s.DataPoints {
				key := m.Name
				for _, kv := range p.Attributes.ToSlice() {
					key += " " + string(kv.Key) + "=" + kv.Value.Emit()
				}
				got[key] += p.Value
			}
		}
	}
	want := map[string]int64{
		telemetry.MetricShadowComparisons + " fusion.shadow.equal=false fusion.source_schema=products":  1,
		telemetry.MetricShadowMismatches + " fusion.shadow.kind=body fusion.source_schema=products":     1,
		telemetry.MetricShadowDropped + " fusion.shadow.reason=too_large fusion.source_schema=products": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shadow counters (-want +got):\n%s", diff)
	}
	tr.check(t, telemetry.MetricShadowComparisons, telemetry.MetricShadowMismatches, telemetry.MetricShadowDropped)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.mismatches) != 1 || rec.dropped[shadow.DropTooLarge] != 1 {
		t.Errorf("the caller's Publisher got %d mismatches and drops %v, want 1 and 1 too_large: WithTelemetry must not replace it", len(rec.mismatches), rec.dropped)
	}
}
