package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/middleware"
)

// await receives from ch, or fails the test if nothing comes in time. The
// limit only guards against a hang; no test relies on it passing.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// gate is a source schema whose handler blocks requests until the test
// opens it, and then answers with an echo of what identifies the request,
// so that each caller can tell whether it got the answer to its own.
type gate struct {
	*server
	arrived   chan int      // the number of each request that reached the handler
	cancelled chan int      // the number of each request cancelled while blocked
	release   chan struct{} // closed by open
	once      sync.Once

	blocks func(n int) bool // which requests block; nil: all
	header http.Header      // set on each response
	pad    int              // bytes of padding after each echo
}

// newGate starts a gate; configure it with opts before any request.
func newGate(t *testing.T, opts ...func(*gate)) *gate {
	g := &gate{arrived: make(chan int, 64), cancelled: make(chan int, 64), release: make(chan struct{})}
	for _, o := range opts {
		o(g)
	}
	g.server = newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body string) {
		g.arrived <- n
		if g.blocks == nil || g.blocks(n) {
			select {
			case <-g.release:
			case <-r.Context().Done():
				g.cancelled <- n
				return
			}
		}
		for k, v := range g.header {
			w.Header()[k] = v
		}
		io.WriteString(w, echo(r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Cookie"), body)+identityOf(r.Header))
		io.WriteString(w, strings.Repeat(".", g.pad))
	})
	t.Cleanup(g.open) // before the server closes: cleanups run last first
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// echo is the answer of a gate to a request with these parts.
func echo(uri, auth, cookie, body string) string {
	return fmt.Sprintf("uri=%s auth=%s cookie=%s body=%s", uri, auth, cookie, body)
}

// caller is one request of a dedupe test.
type caller struct {
	body, query, auth, cookie, tenant string
	extra                             http.Header // more headers, as they are (any case), echoed back
	opaque                            bool        // the body can be read once: no GetBody
	trailer                           bool        // the request declares a trailer
}

func (c caller) bodyOrQuery() string {
	if c.body == "" {
		return queryBody
	}
	return c.body
}

func (c caller) request(t *testing.T, ctx context.Context, base string) *http.Request {
	req := newRequest(t, ctx, base+"/graphql"+c.query, c.bodyOrQuery(), !c.opaque)
	for k, v := range map[string]string{"Authorization": c.auth, "Cookie": c.cookie, "X-Tenant": c.tenant} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	for k, v := range c.extra {
		req.Header[k] = v
	}
	if c.trailer {
		req.Trailer = http.Header{"X-Sum": nil}
	}
	return req
}

// want is the answer to c's own request.
func (c caller) want() string {
	return echo("/graphql"+c.query, c.auth, c.cookie, c.bodyOrQuery()) + c.identity()
}

// identity is what a gate echoes of c's tenant and extra headers, the ones
// that are not trace context: the headers that tell users apart.
func (c caller) identity() string {
	h := http.Header{}
	if c.tenant != "" {
		h.Set("X-Tenant", c.tenant)
	}
	for k, v := range c.extra {
		h[http.CanonicalHeaderKey(k)] = v
	}
	return identityOf(h)
}

// identityOf is the part of a gate's echo that holds the headers of h
// that tell users apart, in a stable order.
func identityOf(h http.Header) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		switch k {
		case "X-Tenant", "X-Role", "X-Ab", "X-A", "X-User-Id", "Baggage":
			fmt.Fprintf(&b, " %s=%s", k, strings.Join(h[k], ","))
		}
	}
	return b.String()
}

// result is what one caller got.
type result struct {
	i    int
	req  *http.Request
	resp *http.Response
	body string
	err  error
}

// start runs req on rt in a goroutine and sends what it got to out.
func start(t *testing.T, rt http.RoundTripper, i int, req *http.Request, out chan<- result) {
	go func() {
		resp, err := rt.RoundTrip(req)
		r := result{i: i, req: req, resp: resp, err: err}
		if err == nil {
			r.body = readBody(t, resp)
		}
		out <- r
	}()
}

// maxBody is the largest body that the tests' dedupe shares.
const maxBody = 4096

// joinCounter returns a dedupe hook and the channel it reports joins on.
func joinCounter() (func(int), chan int) {
	joins := make(chan int, 64)
	return func(n int) { joins <- n }, joins
}

func TestDedupeSharing(t *testing.T) {
	q := caller{}
	tests := []struct {
		name         string
		callers      []caller
		wantJoins    int // callers that take part in dedupe
		wantRequests int // requests that reach the source schema
	}{
		{"identical queries share", []caller{q, q, q, q, q}, 5, 1},
		{"bodies without GetBody share", []caller{{opaque: true}, q, {opaque: true}}, 3, 1},
		{"same Authorization shares", []caller{{auth: "Bearer a"}, {auth: "Bearer a"}}, 2, 1},
		{"different Authorization", []caller{{auth: "Bearer a"}, {auth: "Bearer b"}}, 2, 2},
		{"Authorization or none", []caller{{auth: "Bearer a"}, {}}, 2, 2},
		{"different Cookie", []caller{{cookie: "s=1"}, {cookie: "s=2"}}, 2, 2},
		{"different variables", []caller{{body: `{"query":"{ a }","variables":{"x":1}}`}, {body: `{"query":"{ a }","variables":{"x":2}}`}}, 2, 2},
		{"different URL", []caller{{query: "?v=1"}, {query: "?v=2"}}, 2, 2},
		{"every header in the key", []caller{{tenant: "a"}, {tenant: "b"}, {tenant: "a"}}, 3, 2},
		{"a header or none", []caller{{tenant: "a"}, {}}, 2, 2},
		{"a header's values in order", []caller{{extra: http.Header{"X-Role": {"a", "b"}}}, {extra: http.Header{"X-Role": {"b", "a"}}}}, 2, 2},
		{"names and values apart", []caller{{extra: http.Header{"X-Ab": {"c"}}}, {extra: http.Header{"X-A": {"bc"}}}}, 2, 2},
		{"a header in another case", []caller{{extra: http.Header{"x-user-id": {"alice"}}}, {extra: http.Header{"x-user-id": {"bob"}}}}, 2, 2},
		{"trace context not in the key", []caller{
			{extra: http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "Tracestate": {"a=1"}, "X-Request-Id": {"r1"}, "X-B3-Traceid": {"1"}, "B3": {"1-2"}}},
			{extra: http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}, "Tracestate": {"a=2"}, "X-Request-Id": {"r2"}, "X-B3-Traceid": {"2"}, "B3": {"3-4"}}},
			{extra: http.Header{"traceparent": {"x"}, "x-request-id": {"r3"}}},
		}, 3, 1},
		{"baggage in the key", []caller{{extra: http.Header{"Baggage": {"user=alice"}}}, {extra: http.Header{"Baggage": {"user=bob"}}}}, 2, 2},
		{"trailers never shared", []caller{{trailer: true}, {trailer: true}}, 0, 2},
		{"mutations never shared", []caller{{body: mutationBody}, {body: mutationBody, opaque: true}, {body: mutationBody}}, 0, 3},
		{"subscriptions never shared", []caller{{body: subscriptionBody}, {body: subscriptionBody}}, 0, 2},
		{"persisted queries never shared", []caller{{body: persistedBody}, {body: persistedBody}}, 0, 2},
		{"case variants of query with a mutation never shared", []caller{{body: caseVariantBody}, {body: caseVariantBody, opaque: true}}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t)
			hook, joins := joinCounter()
			rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))

			out := make(chan result, len(tt.callers))
			for i, c := range tt.callers {
				start(t, rt, i, c.request(t, t.Context(), g.URL), out)
			}
			// Every caller waits, or is blocked at the server, before any
			// answer comes.
			for range tt.wantJoins {
				await(t, joins, "a caller to join")
			}
			for range tt.wantRequests {
				await(t, g.arrived, "a request at the server")
			}
			g.open()
			for range tt.callers {
				r := await(t, out, "a caller's result")
				if r.err != nil {
					t.Errorf("caller %d: %v", r.i, r.err)
					continue
				}
				if want := tt.callers[r.i].want(); r.body != want {
					t.Errorf("caller %d got %q, want %q", r.i, r.body, want)
				}
			}
			if got := len(g.received()); got != tt.wantRequests {
				t.Errorf("server saw %d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

// TestDedupeOwnResponses checks that callers of one shared request get
// responses that they can read and change apart from each other.
func TestDedupeOwnResponses(t *testing.T) {
	g := newGate(t, func(g *gate) { g.header = http.Header{"X-Cache": {"miss"}} })
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))
	const n = 3
	out := make(chan result, n)
	for i := range n {
		start(t, rt, i, caller{}.request(t, t.Context(), g.URL), out)
	}
	for range n {
		await(t, joins, "a caller to join")
	}
	g.open()
	var results []result
	for range n {
		r := await(t, out, "a caller's result")
		if r.err != nil {
			t.Fatalf("caller %d: %v", r.i, r.err)
		}
		results = append(results, r)
	}
	results[0].resp.Header.Set("X-Cache", "changed")
	for _, r := range results {
		if r.body != (caller{}).want() {
			t.Errorf("caller %d read %q", r.i, r.body)
		}
		if r.resp.Request != r.req {
			t.Errorf("caller %d: response's Request is not the caller's request", r.i)
		}
		if r.resp.ContentLength != int64(len(r.body)) {
			t.Errorf("caller %d: ContentLength %d, body %d bytes", r.i, r.resp.ContentLength, len(r.body))
		}
	}
	for _, r := range results[1:] {
		if got := r.resp.Header.Get("X-Cache"); got != "miss" {
			t.Errorf("caller %d sees X-Cache %q: headers are shared", r.i, got)
		}
	}
	if got := len(g.received()); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}

// TestDedupeCallersLeave checks that callers whose context ends leave alone:
// the first caller's and a follower's cancellation fail neither the shared
// request nor the callers that still wait.
func TestDedupeCallersLeave(t *testing.T) {
	g := newGate(t)
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))

	ctxs := make([]context.Context, 4)
	cancels := make([]context.CancelFunc, 4)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(t.Context())
		defer cancels[i]()
	}
	out := make(chan result, 4)
	start(t, rt, 0, caller{}.request(t, ctxs[0], g.URL), out) // the first: it starts the request
	await(t, joins, "the first caller to join")
	await(t, g.arrived, "the shared request at the server")
	for i := 1; i < 4; i++ {
		start(t, rt, i, caller{}.request(t, ctxs[i], g.URL), out)
		await(t, joins, "a follower to join")
	}

	for _, i := range []int{0, 1} {
		cancels[i]()
		r := await(t, out, "a cancelled caller to return")
		if r.i != i || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller %d returned %v after caller %d's cancel, want context.Canceled from %d", r.i, r.err, i, i)
		}
	}
	g.open()
	for range 2 {
		r := await(t, out, "a waiting caller's result")
		if r.err != nil {
			t.Fatalf("caller %d: %v", r.i, r.err)
		}
		if r.body != (caller{}).want() {
			t.Errorf("caller %d read %q", r.i, r.body)
		}
	}
	select {
	case n := <-g.cancelled:
		t.Errorf("shared request %d was cancelled", n)
	default:
	}
	if got := len(g.received()); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}

// TestDedupeAllCallersLeave checks that the shared request is cancelled once
// its last caller has gone, and that a later caller starts afresh.
func TestDedupeAllCallersLeave(t *testing.T) {
	g := newGate(t, func(g *gate) { g.blocks = func(n int) bool { return n == 1 } })
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))

	out := make(chan result, 2)
	var cancels []context.CancelFunc
	for i := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancels = append(cancels, cancel)
		start(t, rt, i, caller{}.request(t, ctx, g.URL), out)
		await(t, joins, "a caller to join")
		if i == 0 {
			await(t, g.arrived, "the shared request at the server")
		}
	}
	for _, cancel := range cancels {
		cancel()
		if r := await(t, out, "a cancelled caller to return"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller %d: %v, want context.Canceled", r.i, r.err)
		}
	}
	if n := await(t, g.cancelled, "the shared request to be cancelled"); n != 1 {
		t.Errorf("request %d cancelled, want 1", n)
	}

	resp, err := rt.RoundTrip(caller{}.request(t, t.Context(), g.URL))
	if err != nil {
		t.Fatalf("later caller: %v", err)
	}
	if body := readBody(t, resp); body != (caller{}).want() {
		t.Errorf("later caller read %q", body)
	}
	if got := len(g.received()); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

// TestDedupeUnshareable checks responses that are not shared: the first
// caller gets the response as it streams, every other caller sends its own
// request, and the first caller's body still ends the request when closed.
func TestDedupeUnshareable(t *testing.T) {
	tests := []struct {
		name string
		opt  func(*gate)
	}{
		{"incremental delivery", func(g *gate) { g.header = http.Header{"Content-Type": {"multipart/mixed; boundary=-"}} }},
		{"server-sent events", func(g *gate) { g.header = http.Header{"Content-Type": {"text/event-stream"}} }},
		{"body over the limit", func(g *gate) { g.pad = maxBody }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t, tt.opt, func(g *gate) { g.blocks = func(n int) bool { return n == 1 } })
			hook, joins := joinCounter()
			rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))
			const n = 3
			out := make(chan result, n)
			start(t, rt, 0, caller{}.request(t, t.Context(), g.URL), out)
			await(t, joins, "the first caller to join")
			await(t, g.arrived, "the first request at the server")
			for i := 1; i < n; i++ {
				start(t, rt, i, caller{}.request(t, t.Context(), g.URL), out)
				await(t, joins, "a follower to join")
			}
			g.open()
			want := (caller{}).want() + strings.Repeat(".", g.pad)
			for range n {
				r := await(t, out, "a caller's result")
				if r.err != nil {
					t.Fatalf("caller %d: %v", r.i, r.err)
				}
				if r.body != want {
					t.Errorf("caller %d read %d bytes, want %d", r.i, len(r.body), len(want))
				}
			}
			if got := len(g.received()); got != n {
				t.Errorf("server saw %d requests, want %d", got, n)
			}
		})
	}
}

// TestDedupeUnshareableFirstCallerGone checks that a stream nobody waits
// for is closed, and the callers that wait send their own requests.
func TestDedupeUnshareableFirstCallerGone(t *testing.T) {
	g := newGate(t, func(g *gate) {
		g.header = http.Header{"Content-Type": {"text/event-stream"}}
		g.blocks = func(n int) bool { return n == 1 }
	})
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := make(chan result, 2)
	start(t, rt, 0, caller{}.request(t, ctx, g.URL), out)
	await(t, joins, "the first caller to join")
	await(t, g.arrived, "the first request at the server")
	start(t, rt, 1, caller{}.request(t, t.Context(), g.URL), out)
	await(t, joins, "a follower to join")
	cancel()
	if r := await(t, out, "the first caller to return"); r.i != 0 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller %d returned %v, want context.Canceled from 0", r.i, r.err)
	}
	g.open()
	r := await(t, out, "the follower's result")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.body != (caller{}).want() {
		t.Errorf("follower read %q", r.body)
	}
	if got := len(g.received()); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

// TestDedupeSharedError checks that every caller gets the error of the
// shared request.
func TestDedupeSharedError(t *testing.T) {
	errDown := errors.New("source schema down")
	release := make(chan struct{})
	sent := 0
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent++
		select {
		case <-release:
		case <-time.After(guard):
			t.Error("the shared request was never released")
		}
		return nil, errDown
	})
	hook, joins := joinCounter()
	rt := middleware.Chain(next, middleware.DedupeWithHook(hook, maxBody))
	const n = 3
	out := make(chan result, n)
	for i := range n {
		start(t, rt, i, caller{}.request(t, t.Context(), "http://products.internal"), out)
	}
	for range n {
		await(t, joins, "a caller to join")
	}
	close(release)
	for range n {
		if r := await(t, out, "a caller's result"); !errors.Is(r.err, errDown) {
			t.Errorf("caller %d: %v, want %v", r.i, r.err, errDown)
		}
	}
	if sent != 1 {
		t.Errorf("%d requests sent, want 1", sent)
	}
}

// TestDedupeSharesRetries checks the intended order, Dedupe outside Retry:
// callers share the whole retried result, so the source schema sees one
// request per attempt, not per caller.
func TestDedupeSharesRetries(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n == 1 {
			select {
			case <-release:
			case <-time.After(guard):
				t.Error("the first attempt was never released")
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the server closes: cleanups run last first
	hook, joins := joinCounter()
	rt := middleware.Chain(srv.transport(), middleware.DedupeWithHook(hook, maxBody), middleware.Retry(fastRetry(3)))
	const n = 4
	out := make(chan result, n)
	for i := range n {
		start(t, rt, i, caller{}.request(t, t.Context(), srv.URL), out)
	}
	for range n {
		await(t, joins, "a caller to join")
	}
	open()
	for range n {
		r := await(t, out, "a caller's result")
		if r.err != nil {
			t.Fatalf("caller %d: %v", r.i, r.err)
		}
		if r.resp.StatusCode != http.StatusOK || r.body != "ok" {
			t.Errorf("caller %d got %d %q, want 200 ok", r.i, r.resp.StatusCode, r.body)
		}
	}
	if got := len(srv.received()); got != 2 {
		t.Errorf("server saw %d requests, want 2 (one per attempt)", got)
	}
}
