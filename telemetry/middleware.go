package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusiongo/transport/internal/redact"
)

// Middleware returns the middleware that traces and measures the requests
// of source schema schema on path ("legacy" or "sockets"), for a path's
// pipeline of func(http.RoundTripper) http.RoundTripper.
//
// For each request it starts a client span, a child of the span in the
// request's context, and writes the trace context into the outgoing
// headers with the Propagator. The caller's request is never modified:
// when there are headers to add, the next RoundTripper gets a copy with
// cloned headers. Headers that the Propagator names (Fields) are removed
// from that copy first, so that a traceparent or tracestate forwarded from
// the gateway request does not travel with the new span's context.
//
// The span, the duration and the counters end when the response body is
// closed or read to its end (or fails), so they cover the body; a
// transport error ends them at once. A caller that never closes the body
// leaves the span open and the request in flight. A 101 Switching
// Protocols response and an empty body end at once, and their body is
// returned as it is.
//
// The span is named after the method ("POST"; "HTTP" for a method that no
// RFC defines), as the semantic conventions ask, and has status Error on a
// transport error, a body read error or a 5xx response. A 4xx response is
// not an error here: under GraphQL over HTTP it carries the source
// schema's answer to a bad request, which the gateway passes on.
//
// url.full has no user information, query or fragment: a GraphQL GET
// request carries its query and variables in the query string, and they
// may hold personal data.
//
// On a nil *Telemetry, the middleware returns next itself. A nil next is
// a wiring mistake: the middleware panics when it is applied.
func (t *Telemetry) Middleware(schema, path string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		if next == nil {
			panic("telemetry: Middleware(" + strconv.Quote(schema) + "): nil next RoundTripper")
		}
		if t == nil {
			return next
		}
		return &roundTripper{
			t:      t,
			next:   next,
			schema: AttrSourceSchema.String(schema),
			path:   AttrPath.String(path),
		}
	}
}

// roundTripper is the middleware for one source schema on one path.
type roundTripper struct {
	t            *Telemetry
	next         http.RoundTripper
	schema, path attribute.KeyValue
}

var _ http.RoundTripper = (*roundTripper)(nil)

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	t := rt.t
	start := time.Now()
	method, original := normalizeMethod(req.Method)

	// base are the attributes known before sending: the span starts with
	// them (a sampler sees them) and every measurement carries them.
	base := make([]attribute.KeyValue, 0, 5)
	base = append(base, rt.schema, rt.path, AttrRequestMethod.String(method))
	if req.URL != nil {
		host, port := serverOf(req.URL)
		if host != "" {
			base = append(base, AttrServerAddress.String(host))
		}
		if port > 0 {
			base = append(base, AttrServerPort.Int(port))
		}
	}
	name := method
	if method == methodOther {
		name = "HTTP"
	}
	ctx, span := t.tracer.Start(req.Context(), name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start),
		trace.WithAttributes(base...))
	if span.IsRecording() {
		if req.URL != nil {
			span.SetAttributes(AttrURLFull.String(redact.Request(req.URL)))
		}
		if original != "" {
			span.SetAttributes(AttrRequestMethodOriginal.String(original))
		}
	}

	c := &call{t: t, ctx: ctx, span: span, start: start, base: base}
	c.baseSet = attribute.NewSet(append([]attribute.KeyValue(nil), base...)...) // NewSet sorts its argument in place
	t.inFlight.Add(ctx, 1, metric.WithAttributeSet(c.baseSet))

	resp, err := rt.next.RoundTrip(rt.outgoing(ctx, req, span))
	if err != nil {
		c.end(err)
		return nil, err
	}
	c.status = resp.StatusCode
	if span.IsRecording() {
		span.SetAttributes(AttrResponseStatusCode.Int(resp.StatusCode))
		if v := protocolVersion(resp); v != "" {
			span.SetAttributes(AttrProtocolVersion.String(v))
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		// Nothing to wait for; a 101 body is the connection itself (an
		// io.ReadWriteCloser) and must keep its type.
		c.end(nil)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c}
	return resp, nil
}

// outgoing is the request to send: req itself when the propagator adds
// nothing and the span is not recording, so that the no-op providers cost
// no copy.
func (rt *roundTripper) outgoing(ctx context.Context, req *http.Request, span trace.Span) *http.Request {
	var carrier lazyHeader
	rt.t.prop.Inject(ctx, &carrier)
	if carrier.h == nil {
		if span.IsRecording() {
			// Give inner RoundTrippers the span as their parent.
			return req.WithContext(ctx)
		}
		return req
	}
	out := req.WithContext(ctx) // a shallow copy: req stays as it was
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = make(http.Header, len(carrier.h))
	}
	for _, f := range rt.t.prop.Fields() {
		out.Header.Del(f)
	}
	for k, v := range carrier.h {
		out.Header[k] = v
	}
	return out
}

// lazyHeader is a propagation.TextMapCarrier that allocates its header map
// only when the propagator sets a field, so that a no-op propagator costs
// no map.
type lazyHeader struct {
	h http.Header
}

func (l *lazyHeader) Get(key string) string { return l.h.Get(key) }

func (l *lazyHeader) Set(key, value string) {
	if l.h == nil {
		l.h = make(http.Header, 2)
	}
	l.h.Set(key, value)
}

func (l *lazyHeader) Keys() []string {
	keys := make([]string, 0, len(l.h))
	for k := range l.h {
		keys = append(keys, k)
	}
	return keys
}

// call is one request in flight, from RoundTrip until its body ends.
type call struct {
	t       *Telemetry
	ctx     context.Context // holds the span, so that exemplars link to it
	span    trace.Span
	start   time.Time
	base    []attribute.KeyValue
	baseSet attribute.Set
	status  int // set before the body is handed out, read-only afterwards
	ended   atomic.Bool
}

// end ends the span and records the measurements, once: Read and Close may
// race (net/http lets Close abort a Read in another goroutine). err is the
// transport or body read error, or nil.
func (c *call) end(err error) {
	if !c.ended.CompareAndSwap(false, true) {
		return
	}
	now := time.Now()
	attrs := make([]attribute.KeyValue, len(c.base), len(c.base)+2)
	copy(attrs, c.base)
	if c.status != 0 {
		attrs = append(attrs, AttrResponseStatusCode.Int(c.status))
	}
	var errType string
	if err != nil {
		errType = c.t.errorType(err)
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, err.Error())
	} else if errType = statusErrorType(c.status); errType != "" {
		// The status code says it all: the conventions leave the
		// description empty.
		c.span.SetStatus(codes.Error, "")
	}
	if errType != "" {
		kv := AttrErrorType.String(errType)
		c.span.SetAttributes(kv)
		attrs = append(attrs, kv)
	}
	c.span.End(trace.WithTimestamp(now))

	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	c.t.duration.Record(c.ctx, now.Sub(c.start).Seconds(), opt)
	c.t.requests.Add(c.ctx, 1, opt)
	if errType != "" {
		c.t.errors.Add(c.ctx, 1, opt)
	}
	c.t.inFlight.Add(c.ctx, -1, metric.WithAttributeSet(c.baseSet))
}

// body ends its call when it is closed, read to io.EOF, or fails.
type body struct {
	rc      io.ReadCloser
	c       *call
	closing atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF: // io.EOF itself, never wrapped, by io.Reader's contract
		b.c.end(nil)
	case err != nil && b.closing.Load():
		// The caller's Close, in another goroutine, cut this Read short:
		// the caller stopped reading, the request did not fail.
		b.c.end(nil)
	case err != nil:
		b.c.end(err)
	}
	return n, err
}

func (b *body) Close() error {
	b.closing.Store(true) // before rc.Close, so that a Read it aborts sees it
	err := b.rc.Close()
	b.c.end(nil)
	return err
}

// methodOther is http.request.method for a method that neither RFC 9110
// nor RFC 5789 (PATCH) defines: the semantic conventions keep such methods out of the attribute,
// where each would be a new metric series, and put them in
// http.request.method_original.
const methodOther = "_OTHER"

// normalizeMethod returns http.request.method for m, and m as
// http.request.method_original when it differs. An empty method is GET, as
// in net/http.
func normalizeMethod(m string) (method, original string) {
	switch m {
	case "":
		return http.MethodGet, ""
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace, http.MethodPatch:
		return m, ""
	}
	return methodOther, m
}

// serverOf returns server.address and server.port for u; the port is the
// scheme's default when u has none, and 0 when unknown.
func serverOf(u *url.URL) (string, int) {
	host := u.Hostname()
	p := u.Port()
	if p == "" {
		switch u.Scheme {
		case "http":
			return host, 80
		case "https":
			return host, 443
		}
		return host, 0
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return host, 0
	}
	return host, port
}

// protocolVersion is network.protocol.version for resp: "1.1", "2".
func protocolVersion(resp *http.Response) string {
	switch {
	case resp.ProtoMajor == 0:
		return ""
	case resp.ProtoMajor >= 2 && resp.ProtoMinor == 0:
		return strconv.Itoa(resp.ProtoMajor)
	}
	return strconv.Itoa(resp.ProtoMajor) + "." + strconv.Itoa(resp.ProtoMinor)
}
