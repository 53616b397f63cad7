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

// TestDedupeFollowerLeaves checks that a caller that joined a shared
// request leaves alone when its context ends: the request goes on, and
// the first caller and the other followers get its answer.
func TestDedupeFollowerLeaves(t *testing.T) {
	g := newGate(t)
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := make(chan result, 3)
	start(t, rt, 0, caller{}.request(t, t.Context(), g.URL), out) // the first: it sends the request
	await(t, joins, "the first caller to join")
	await(t, g.arrived, "the shared request at the server")
	start(t, rt, 1, caller{}.request(t, ctx, g.URL), out)
	await(t, joins, "the leaving follower to join")
	start(t, rt, 2, caller{}.request(t, t.Context(), g.URL), out)
	await(t, joins, "the staying follower to join")

	cancel()
	if r := await(t, out, "the cancelled follower to return"); r.i != 1 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller %d returned %v after follower 1's cancel, want context.Canceled from 1", r.i, r.err)
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

// TestDedupeLeaderLeaves checks that the shared request is the first
// caller's own: when the first caller leaves before the answer, its
// request is cancelled, and the followers start again. One of them sends
// its own request (the server sees its X-Request-Id), the other joins it,
// and both get the answer.
func TestDedupeLeaderLeaves(t *testing.T) {
	g := newGate(t)
	hook, joins := joinCounter()
	rt := middleware.Chain(g.transport(), middleware.DedupeWithHook(hook, maxBody))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := make(chan result, 3)
	callers := []caller{
		{extra: http.Header{"X-Request-Id": {"r0"}}},
		{extra: http.Header{"X-Request-Id": {"r1"}}},
		{extra: http.Header{"X-Request-Id": {"r2"}}},
	}
	start(t, rt, 0, callers[0].request(t, ctx, g.URL), out)
	await(t, joins, "the first caller to join")
	await(t, g.arrived, "the first caller's request at the server")
	for i := 1; i < 3; i++ {
		start(t, rt, i, callers[i].request(t, t.Context(), g.URL), out)
		await(t, joins, "a follower to join")
	}

	cancel()
	if r := await(t, out, "the first caller to return"); r.i != 0 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller %d returned %v after the first caller's cancel, want context.Canceled from 0", r.i, r.err)
	}
	if n := await(t, g.cancelled, "the first caller's request to be cancelled"); n != 1 {
		t.Fatalf("request %d cancelled, want 1", n)
	}
	// The followers start again: one leads (1 waiter), the other joins it.
	if n := await(t, joins, "a follower to lead"); n != 1 {
		t.Fatalf("a follower started again with %d waiters, want 1", n)
	}
	if n := await(t, joins, "the other follower to join it"); n != 2 {
		t.Fatalf("the other follower joined with %d waiters, want 2", n)
	}
	if n := await(t, g.arrived, "the follower's own request at the server"); n != 2 {
		t.Fatalf("request %d arrived, want 2", n)
	}
	g.open()
	for range 2 {
		r := await(t, out, "a follower's result")
		if r.err != nil {
			t.Fatalf("caller %d: %v", r.i, r.err)
		}
		if want := callers[r.i].want(); r.body != want {
			t.Errorf("caller %d read %q, want %q", r.i, r.body, want)
		}
	}
	got := g.received()
	if len(got) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(got))
	}
	if id := got[1].Header.Get("X-Request-Id"); id != "r1" && id != "r2" {
		t.Errorf("the second request carried X-Request-Id %q, want a follower's (r1 or r2)", id)
	}
}

// TestDedupeAllCallersLeave checks that the shared request is cancelled
// once its first caller has gone and no follower waits, and that a later
// caller starts afresh.
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
	// The follower first, then the first caller.
	for _, i := range []int{1, 0} {
		cancels[i]()
		if r := await(t, out, "a cancelled caller to return"); r.i != i || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller %d returned %v after caller %d's cancel, want context.Canceled from %d", r.i, r.err, i, i)
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

// headersThenHold is a source schema whose first answer sends its
// headers and the first part of its body, then holds the rest until
// release closes; every later request gets "request <n>" at once.
func headersThenHold(t *testing.T, release <-chan struct{}) *server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n > 1 {
			fmt.Fprintf(w, "request %d", n)
			return
		}
		io.WriteString(w, "first:")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "rest")
		case <-r.Context().Done():
		}
	})
}

// releaser returns a channel and a function that closes it once; the
// function also runs when the test ends, before its servers close.
func releaser(t *testing.T) (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return ch, open
}

// TestDedupeLateCallerGoesAlone checks that a query in flight is shared
// only until its response's headers are in: with nobody joined by then,
// the first caller gets the response as it streams (it reads the first
// part while the server holds the rest), and a caller that arrives after
// sends its own request and gets its own answer.
func TestDedupeLateCallerGoesAlone(t *testing.T) {
	release, open := releaser(t)
	srv := headersThenHold(t, release)
	hook, joins := joinCounter()
	rt := middleware.Chain(srv.transport(), middleware.DedupeWithHook(hook, maxBody))

	type answer struct {
		resp *http.Response
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		resp, err := rt.RoundTrip(caller{}.request(t, t.Context(), srv.URL))
		first <- answer{resp, err}
	}()
	a := await(t, first, "the first caller's response headers, while the server holds the body")
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	part := make([]byte, len("first:"))
	if _, err := io.ReadFull(a.resp.Body, part); err != nil || string(part) != "first:" {
		t.Fatalf("the first caller read %q, %v; want the first part as it streams", part, err)
	}
	await(t, joins, "the first caller to join")

	resp, err := rt.RoundTrip(caller{}.request(t, t.Context(), srv.URL))
	if err != nil {
		t.Fatalf("the late caller: %v", err)
	}
	if body := readBody(t, resp); body != "request 2" {
		t.Errorf("the late caller read %q, want its own answer", body)
	}
	open()
	if rest, err := io.ReadAll(a.resp.Body); err != nil || string(rest) != "rest" {
		t.Errorf("the first caller read %q, %v after the server let go; want the rest", rest, err)
	}
	if got := len(srv.received()); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

// TestDedupeLeaderLeavesDuringBody checks that a first caller that
// leaves after the shared response's headers are in, while the body is
// read for the followers, leaves the followers to start again: the one
// that waits sends its own request and gets its own answer.
func TestDedupeLeaderLeavesDuringBody(t *testing.T) {
	release, _ := releaser(t)
	srv := headersThenHold(t, release)
	hook, joins := joinCounter()
	letHeaders := make(chan struct{})
	headersIn := make(chan struct{}, 1)
	next := srv.transport()
	// The first request's response headers reach dedupe only once the
	// follower has joined; headersIn tells when they have.
	held := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Header.Get("X-Request-Id") == "r0" {
			await(t, letHeaders, "the follower to join")
			defer func() { headersIn <- struct{}{} }()
		}
		return next.RoundTrip(req)
	})
	rt := middleware.Chain(held, middleware.DedupeWithHook(hook, maxBody))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := make(chan result, 2)
	start(t, rt, 0, caller{extra: http.Header{"X-Request-Id": {"r0"}}}.request(t, ctx, srv.URL), out)
	await(t, joins, "the first caller to join")
	start(t, rt, 1, caller{extra: http.Header{"X-Request-Id": {"r1"}}}.request(t, t.Context(), srv.URL), out)
	if n := await(t, joins, "the follower to join"); n != 2 {
		t.Fatalf("the follower joined with %d waiters, want 2", n)
	}
	close(letHeaders)
	await(t, headersIn, "the first response's headers")
	cancel()
	results := map[int]result{}
	for range 2 {
		r := await(t, out, "a caller's result")
		results[r.i] = r
	}
	if r := results[0]; !errors.Is(r.err, context.Canceled) {
		t.Errorf("the first caller got %q, %v; want context.Canceled", r.body, r.err)
	}
	if r := results[1]; r.err != nil || r.body != "request 2" {
		t.Errorf("the follower got %q, %v; want its own answer, request 2", r.body, r.err)
	}
	got := srv.received()
	if len(got) != 2 || got[1].Header.Get("X-Request-Id") != "r1" {
		t.Errorf("server saw %d requests (%v), want 2, the second the follower's", len(got), got)
	}
}

// panicBody is a response body whose Read panics.
type panicBody struct{}

func (panicBody) Read([]byte) (int, error) { panic("boom") }
func (panicBody) Close() error             { return nil }

// TestDedupeLeaderPanics checks that a first caller whose request panics
// (a middleware further in), or whose answer's body panics as it is read
// for the followers, leaves no call behind: the follower starts again and
// sends its own request, and a later caller is not held by the call that
// ended.
func TestDedupeLeaderPanics(t *testing.T) {
	for _, where := range []string{"in the request", "reading the body"} {
		t.Run(where, func(t *testing.T) {
			hook, joins := joinCounter()
			joined := make(chan struct{})
			var mu sync.Mutex
			sent := 0
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				sent++
				n := sent
				mu.Unlock()
				if n == 1 {
					await(t, joined, "the follower to join")
					if where == "in the request" {
						panic("boom")
					}
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: panicBody{}, Request: req}, nil
				}
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(fmt.Sprintf("request %d", n))), Request: req}, nil
			})
			rt := middleware.Chain(next, middleware.DedupeWithHook(hook, maxBody))
			panicked := make(chan any, 1)
			go func() {
				defer func() { panicked <- recover() }()
				rt.RoundTrip(caller{}.request(t, t.Context(), "http://products.internal"))
			}()
			await(t, joins, "the first caller to join")
			out := make(chan result, 1)
			start(t, rt, 1, caller{}.request(t, t.Context(), "http://products.internal"), out)
			await(t, joins, "the follower to join")
			close(joined)
			if p := await(t, panicked, "the first caller's panic"); p != "boom" {
				t.Fatalf("the first caller recovered %v, want boom", p)
			}
			if r := await(t, out, "the follower's result"); r.err != nil || r.body != "request 2" {
				t.Errorf("the follower got %q, %v; want its own answer, request 2", r.body, r.err)
			}
			resp, err := rt.RoundTrip(caller{}.request(t, t.Context(), "http://products.internal"))
			if err != nil {
				t.Fatal(err)
			}
			if body := readBody(t, resp); body != "request 3" {
				t.Errorf("a later caller got %q, want request 3", body)
			}
		})
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

// TestDedupeUnshareableFirstCallerGone checks that when the first caller
// of a streamed answer leaves before its headers, its request ends, and
// the follower that waits sends its own request and gets its answer.
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
