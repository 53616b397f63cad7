package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

func TestMiddlewareSpan(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		status    int
		wantName  string
		wantCode  codes.Code
		wantAttrs map[string]string // besides those every request has
	}{
		{
			name: "POST 200", method: http.MethodPost, status: 200,
			wantName: "POST", wantCode: codes.Unset,
			wantAttrs: map[string]string{"http.request.method": "POST", "http.response.status_code": "200"},
		},
		{
			name: "GET 200", method: http.MethodGet, status: 200,
			wantName: "GET", wantCode: codes.Unset,
			wantAttrs: map[string]string{"http.request.method": "GET", "http.response.status_code": "200"},
		},
		{
			name: "404 is the source schema's answer, not an error", method: http.MethodPost, status: 404,
			wantName: "POST", wantCode: codes.Unset,
			wantAttrs: map[string]string{"http.request.method": "POST", "http.response.status_code": "404"},
		},
		{
			name: "500 is an error", method: http.MethodPost, status: 500,
			wantName: "POST", wantCode: codes.Error,
			wantAttrs: map[string]string{"http.request.method": "POST", "http.response.status_code": "500", "error.type": "500"},
		},
		{
			name: "a method no RFC defines", method: "PURGE", status: 200,
			wantName: "HTTP", wantCode: codes.Unset,
			wantAttrs: map[string]string{"http.request.method": "_OTHER", "http.request.method_original": "PURGE", "http.response.status_code": "200"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			srv := newServer(t)
			rt := r.tel.Middleware("products", "sockets")(transport(t))
			ctx, parent := r.tp.Tracer("gateway").Start(context.Background(), "gateway request")

			host := strings.TrimPrefix(srv.URL, "http://")
			// User information, query (GraphQL variables) and fragment
			// must stay out of url.full.
			target := "http://user:secret@" + host + "/graphql?status=" + strconv.Itoa(tt.status) + "&variables=%7B%22ssn%22%3A1%7D#frag"
			req, err := http.NewRequestWithContext(ctx, tt.method, target, strings.NewReader(`{"query":"{ok}"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			before := req.Header.Clone()

			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			drain(t, resp)
			parent.End()

			spans := r.clientSpans()
			if len(spans) != 1 {
				t.Fatalf("got %d client spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name() != tt.wantName {
				t.Errorf("span name = %q, want %q", s.Name(), tt.wantName)
			}
			psc := parent.SpanContext()
			if s.SpanContext().TraceID() != psc.TraceID() {
				t.Errorf("trace ID = %s, want the parent's %s", s.SpanContext().TraceID(), psc.TraceID())
			}
			if s.Parent().SpanID() != psc.SpanID() {
				t.Errorf("parent span ID = %s, want %s", s.Parent().SpanID(), psc.SpanID())
			}
			if s.Status().Code != tt.wantCode || s.Status().Description != "" {
				t.Errorf("status = %+v, want code %v without description", s.Status(), tt.wantCode)
			}

			wantHeader := "00-" + psc.TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
			seen := srv.headers()
			if len(seen) != 1 || seen[0].Get("Traceparent") != wantHeader {
				t.Errorf("server saw trace headers %v, want traceparent %q", seen, wantHeader)
			}

			su, _ := url.Parse(srv.URL)
			want := map[string]string{
				"fusion.source_schema":     "products",
				"fusion.transport.path":    "sockets",
				"server.address":           "127.0.0.1",
				"server.port":              su.Port(),
				"url.full":                 "http://" + host + "/graphql",
				"network.protocol.version": "1.1",
			}
			for k, v := range tt.wantAttrs {
				want[k] = v
			}
			if diff := cmp.Diff(want, attrs(s.Attributes())); diff != "" {
				t.Errorf("span attributes mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, req.Header); diff != "" {
				t.Errorf("caller's request headers changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMiddlewareTransportError(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	target := srv.URL + "/graphql"
	srv.Close() // nothing listens any more: the dial is refused

	rt := r.tel.Middleware("reviews", "legacy")(transport(t))
	ctx, parent := r.tp.Tracer("gateway").Start(context.Background(), "gateway request")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("RoundTrip to a closed server succeeded")
	}
	parent.End()

	spans := r.clientSpans()
	if len(spans) != 1 {
		t.Fatalf("got %d client spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Status().Code != codes.Error {
		t.Errorf("status = %+v, want Error", s.Status())
	}
	if got := attrs(s.Attributes())["error.type"]; got != telemetry.ErrorTypeConnectionRefused {
		t.Errorf("error.type = %q, want %q", got, telemetry.ErrorTypeConnectionRefused)
	}
	if !hasEvent(s, "exception") {
		t.Errorf("span has no exception event: %v", s.Events())
	}

	m := r.collect(t)
	errs, ok := m[telemetry.MetricErrors].(metricdata.Sum[int64])
	if !ok || len(errs.DataPoints) != 1 {
		t.Fatalf("%s = %#v, want one data point", telemetry.MetricErrors, m[telemetry.MetricErrors])
	}
	p := errs.DataPoints[0]
	if p.Value != 1 {
		t.Errorf("%s = %d, want 1", telemetry.MetricErrors, p.Value)
	}
	u, _ := url.Parse(target)
	want := map[string]string{
		"fusion.source_schema":  "reviews",
		"fusion.transport.path": "legacy",
		"http.request.method":   "POST",
		"server.address":        u.Hostname(),
		"server.port":           u.Port(),
		"error.type":            telemetry.ErrorTypeConnectionRefused,
	}
	if diff := cmp.Diff(want, setAttrs(p.Attributes)); diff != "" {
		t.Errorf("%s attributes mismatch (-want +got):\n%s", telemetry.MetricErrors, diff)
	}
}

func hasEvent(s sdktrace.ReadOnlySpan, name string) bool {
	for _, e := range s.Events() {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestMiddlewareEndsWithBody checks that the span and the in-flight count
// last until the body is closed or read to its end.
func TestMiddlewareEndsWithBody(t *testing.T) {
	type step struct {
		do    func(io.ReadCloser) error
		ended bool // after do
	}
	readOne := func(b io.ReadCloser) error { _, err := b.Read(make([]byte, 1)); return err }
	readAll := func(b io.ReadCloser) error { _, err := io.ReadAll(b); return err }
	closeBody := func(b io.ReadCloser) error { return b.Close() }
	tests := []struct {
		name  string
		steps []step
	}{
		{"closed unread", []step{{closeBody, true}}},
		{"read to the end, not closed", []step{{readAll, true}, {closeBody, true}}},
		{"read in part, then closed", []step{{readOne, false}, {closeBody, true}}},
		{"closed twice", []step{{closeBody, true}, {closeBody, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			srv := newServer(t)
			rt := r.tel.Middleware("products", "sockets")(transport(t))
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			check := func(when string, ended bool) {
				t.Helper()
				wantSpans, wantInFlight, wantRequests := 0, int64(1), int64(0)
				if ended {
					wantSpans, wantInFlight, wantRequests = 1, 0, 1
				}
				if got := len(r.clientSpans()); got != wantSpans {
					t.Errorf("%s: %d client spans ended, want %d", when, got, wantSpans)
				}
				m := r.collect(t)
				got := map[string]int64{
					"in flight": total(t, m[telemetry.MetricRequestsInFlight]),
					"requests":  total(t, m[telemetry.MetricRequests]),
					"durations": total(t, m[telemetry.MetricRequestDuration]),
					"errors":    total(t, m[telemetry.MetricErrors]),
				}
				want := map[string]int64{"in flight": wantInFlight, "requests": wantRequests, "durations": wantRequests, "errors": 0}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: metrics mismatch (-want +got):\n%s", when, diff)
				}
			}
			check("before the body", false)
			for i, s := range tt.steps {
				if err := s.do(resp.Body); err != nil && !errors.Is(err, io.EOF) {
					t.Fatalf("step %d: %v", i, err)
				}
				check("after step "+strconv.Itoa(i), s.ended)
			}
			resp.Body.Close()
		})
	}
}

// TestMiddlewareReplacesForwardedTraceHeaders: trace headers that header
// forwarding copied from the gateway request give way to the new span's,
// on the wire only.
func TestMiddlewareReplacesForwardedTraceHeaders(t *testing.T) {
	r := newRig(t)
	srv := newServer(t)
	rt := r.tel.Middleware("products", "sockets")(transport(t))
	ctx, parent := r.tp.Tracer("gateway").Start(context.Background(), "gateway request")
	defer parent.End()

	const staleParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Traceparent", staleParent)
	req.Header.Set("Tracestate", "vendor=stale")
	before := req.Header.Clone()

	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	drain(t, resp)

	seen := srv.headers()
	if len(seen) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(seen))
	}
	got := seen[0]
	if tp := got.Get("Traceparent"); !strings.HasPrefix(tp, "00-"+parent.SpanContext().TraceID().String()+"-") {
		t.Errorf("traceparent = %q, want one in the parent's trace", tp)
	}
	if ts := got.Values("Tracestate"); len(ts) != 0 {
		t.Errorf("tracestate = %q, want none: the span has no trace state", ts)
	}
	if diff := cmp.Diff(before, req.Header); diff != "" {
		t.Errorf("caller's request headers changed (-before +after):\n%s", diff)
	}
}

// TestMiddlewarePassThrough: without providers or propagator, nothing
// changes on the wire and the request goes on as it came.
func TestMiddlewarePassThrough(t *testing.T) {
	globalNoop, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	tests := []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"all-nil Options: global no-op providers and propagator", globalNoop},
		{"nil *Telemetry", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			next := &seenBy{next: transport(t)}
			rt := tt.tel.Middleware("products", "sockets")(next)
			if tt.tel == nil && rt != http.RoundTripper(next) {
				t.Errorf("nil *Telemetry: Middleware wrapped next, want next itself")
			}

			// A sampled parent span from an SDK: the no-op propagator
			// must still send nothing.
			r := newRig(t)
			ctx, parent := r.tp.Tracer("gateway").Start(context.Background(), "gateway request")
			defer parent.End()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			drain(t, resp)

			if len(next.got) != 1 || next.got[0] != req {
				t.Errorf("next got %v, want the caller's request %p itself", next.got, req)
			}
			if seen := srv.headers(); len(seen) != 1 || seen[0].Get("Traceparent") != "" || seen[0].Get("Tracestate") != "" {
				t.Errorf("server saw trace headers %v, want none", seen)
			}
		})
	}
}

// TestMiddlewareConcurrent runs requests whose bodies are closed while
// being read, for the race detector and the exactly-once end.
func TestMiddlewareConcurrent(t *testing.T) {
	r := newRig(t)
	srv := newServer(t)
	rt := r.tel.Middleware("products", "sockets")(transport(t))
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				io.Copy(io.Discard, resp.Body) // may fail: Close races with it
			}()
			resp.Body.Close()
			<-done
		})
	}
	wg.Wait()

	m := r.collect(t)
	got := map[string]int64{
		"requests":  total(t, m[telemetry.MetricRequests]),
		"errors":    total(t, m[telemetry.MetricErrors]),
		"in flight": total(t, m[telemetry.MetricRequestsInFlight]),
		"spans":     int64(len(r.clientSpans())),
	}
	want := map[string]int64{"requests": n, "errors": 0, "in flight": 0, "spans": n}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestMiddlewareCloseDuringRead: a Read that the caller's Close cuts short
// fails, but the request did not: the caller stopped reading. The fake
// body lets the Read's error reach the middleware before Close does.
func TestMiddlewareCloseDuringRead(t *testing.T) {
	r := newRig(t)
	b := &abortedBody{closed: make(chan struct{}), readReturned: make(chan struct{})}
	rt := r.tel.Middleware("products", "sockets")(wiretest.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: b, Request: req}, nil
	}))
	req, err := http.NewRequest(http.MethodPost, "http://products.invalid/graphql", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	go func() {
		defer close(b.readReturned)
		if _, err := resp.Body.Read(make([]byte, 8)); err == nil {
			t.Error("Read succeeded, want the abort error")
		}
	}()
	resp.Body.Close()

	spans := r.clientSpans()
	if len(spans) != 1 || spans[0].Status().Code != codes.Unset {
		t.Fatalf("client spans = %v, want one with status Unset", spans)
	}
	m := r.collect(t)
	got := map[string]int64{"requests": total(t, m[telemetry.MetricRequests]), "errors": total(t, m[telemetry.MetricErrors])}
	if diff := cmp.Diff(map[string]int64{"requests": 1, "errors": 0}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// abortedBody blocks Read until Close, and Close returns only once that
// Read has returned through the middleware.
type abortedBody struct {
	closed       chan struct{}
	readReturned chan struct{}
}

func (b *abortedBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, errors.New("read on closed body")
}

func (b *abortedBody) Close() error {
	close(b.closed)
	<-b.readReturned
	return nil
}

// TestMiddlewareUpgrade: a 101 body is the connection, an
// io.ReadWriteCloser, and must reach the caller as it is.
func TestMiddlewareUpgrade(t *testing.T) {
	r := newRig(t)
	conn := &upgradedConn{}
	rt := r.tel.Middleware("products", "sockets")(wiretest.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Body: conn, Request: req}, nil
	}))
	req, err := http.NewRequest(http.MethodGet, "http://products.invalid/graphql", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if _, ok := resp.Body.(io.ReadWriteCloser); !ok || resp.Body != io.ReadCloser(conn) {
		t.Errorf("body = %T, want the upgraded connection itself", resp.Body)
	}
	if n := len(r.clientSpans()); n != 1 {
		t.Errorf("%d client spans ended, want 1 (at once)", n)
	}
	if got := total(t, r.collect(t)[telemetry.MetricRequestsInFlight]); got != 0 {
		t.Errorf("in flight = %d, want 0", got)
	}
}

type upgradedConn struct{}

func (*upgradedConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (*upgradedConn) Write(p []byte) (int, error) { return len(p), nil }
func (*upgradedConn) Close() error                { return nil }
