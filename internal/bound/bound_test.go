package bound_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/bound"
)

// TestMain fails the package if a request, its server handler or its
// connection outlives the test that sent it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// short is the bound a test expects to pass; long one it expects never to
// pass while the test runs. later is a bound or deadline that must not be
// the one that passes, in a test that waits for one to pass, and how long
// a server that waits for its client to give up waits at most: were the
// code to ignore the short bound, the test would fail when later passes
// rather than hang.
const (
	short = 50 * time.Millisecond
	long  = time.Hour
	later = 10 * time.Second
)

// newServer starts a loopback server running h. done is closed when the
// test ends, before the server closes, so that a handler blocked on it
// returns and Close does not wait for it.
func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request body to its end: only then does the server
		// watch the connection and cancel r.Context() when the client
		// goes away.
		io.Copy(io.Discard, r.Body)
		h(w, r, done)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv
}

// newClient returns a transport of its own, so that no test shares
// connections with another.
func newClient(t *testing.T) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// parent returns the caller's context: with a deadline d from now if d is
// positive, without one otherwise.
func parent(t *testing.T, d time.Duration) context.Context {
	if d <= 0 {
		return context.Background()
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func target(t *testing.T, raw string) bound.Target {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return bound.Target{Schema: "x", Method: http.MethodPost, URL: u}
}

// starter arms a Guard for a request: Guard.Begin on a Guard of its own
// (start), or on one inside a larger per-request struct.
type starter func(ctx context.Context, t bound.Target, header, request time.Duration) (context.Context, *bound.Guard)

var starters = []struct {
	name  string
	start starter
}{
	{"new Guard", start},
	{"Begin", func(ctx context.Context, t bound.Target, header, request time.Duration) (context.Context, *bound.Guard) {
		var g struct {
			_ int // the Guard as part of a larger per-request struct
			bound.Guard
		}
		return g.Begin(ctx, t, header, request), &g.Guard
	}},
}

// start arms a new Guard.
func start(ctx context.Context, t bound.Target, header, request time.Duration) (context.Context, *bound.Guard) {
	g := new(bound.Guard)
	return g.Begin(ctx, t, header, request), g
}

// send starts a POST to srv under the bounds and returns what Finish made
// of the round trip, with the context the request was sent with.
func send(t *testing.T, tr http.RoundTripper, srv *httptest.Server, ctx context.Context, header, request time.Duration) (context.Context, *http.Response, error) {
	t.Helper()
	return sendWith(t, start, tr, srv, ctx, header, request)
}

// sendWith is send with the Guard armed by start.
func sendWith(t *testing.T, start starter, tr http.RoundTripper, srv *httptest.Server, ctx context.Context, header, request time.Duration) (context.Context, *http.Response, error) {
	t.Helper()
	ctx, g := start(ctx, target(t, srv.URL), header, request)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"query":"{a}"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.Finish(tr.RoundTrip(req))
	return ctx, resp, err
}

// escalate are the bounds a test tries in turn when the bound must pass
// after the response headers arrive: on a loaded machine the headers of a
// loopback server may take longer than the first.
var escalate = []time.Duration{short, 250 * time.Millisecond, time.Second, 5 * time.Second}

// which names the bound an error reports.
type which int

const (
	none         which = iota // no bound of ours: the caller's deadline
	headerBound               // *fault.HeaderTimeoutError
	requestBound              // *fault.RequestTimeoutError
)

// checkTimeout asserts that err is a deadline error that names exactly the
// bound want (with its value d), and no other.
func checkTimeout(t *testing.T, err error, want which, d time.Duration) {
	t.Helper()
	if err == nil {
		t.Fatal("error = nil, want a deadline error")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%q, context.DeadlineExceeded) = false", err)
	}
	var hte *fault.HeaderTimeoutError
	var rte *fault.RequestTimeoutError
	gotHeader, gotRequest := errors.As(err, &hte), errors.As(err, &rte)
	if gotHeader != (want == headerBound) {
		t.Errorf("error %q: names the header bound = %v, want %v", err, gotHeader, want == headerBound)
	}
	if gotRequest != (want == requestBound) {
		t.Errorf("error %q: names the request bound = %v, want %v", err, gotRequest, want == requestBound)
	}
	if strings.Contains(err.Error(), "(header_timeout)") != (want == headerBound) ||
		strings.Contains(err.Error(), "(request_timeout)") != (want == requestBound) {
		t.Errorf("error text %q does not name exactly the bound that passed", err)
	}
	switch {
	case gotHeader && want == headerBound:
		if hte.Bound != d || !hte.Timeout() {
			t.Errorf("fault.HeaderTimeoutError{Bound: %v}.Timeout() = %v, want Bound %v and true", hte.Bound, hte.Timeout(), d)
		}
	case gotRequest && want == requestBound:
		if rte.Bound != d || !rte.Timeout() {
			t.Errorf("fault.RequestTimeoutError{Bound: %v}.Timeout() = %v, want Bound %v and true", rte.Bound, rte.Timeout(), d)
		}
	}
}

// TestLateHeaders: a server that never answers is cut by whichever bound
// passes first, and the error names that one only. The header bound only
// applies when the caller's context has no deadline; the request bound only
// when the caller's deadline is later than it.
func TestLateHeaders(t *testing.T) {
	for _, tc := range []struct {
		name            string
		deadline        time.Duration // the caller's; 0: none
		header, request time.Duration
		want            which
		bound           time.Duration // the value the error names
	}{
		{"header bound", 0, short, 0, headerBound, short},
		{"header bound before request bound", 0, short, later, headerBound, short},
		{"request bound", 0, 0, short, requestBound, short},
		{"request bound before header bound", 0, later, short, requestBound, short},
		{"request bound before caller deadline, header bound not applied", later, short, short, requestBound, short},
		{"caller deadline before request bound", short, later, later, none, 0},
	} {
		for _, st := range starters {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				arrived := make(chan struct{})  // the handler runs
				finished := make(chan struct{}) // the handler returned
				var sawEnd atomic.Bool          // the handler saw its request end
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
					close(arrived)
					defer close(finished)
					// Block before writing headers until the client gives up,
					// or answer after later, so that a bound that never passes
					// fails the test instead of hanging it.
					select {
					case <-r.Context().Done():
						sawEnd.Store(true)
					case <-time.After(later):
						w.WriteHeader(http.StatusOK)
					case <-done:
					}
				})
				_, resp, err := sendWith(t, st.start, newClient(t), srv, parent(t, tc.deadline), tc.header, tc.request)
				if resp != nil {
					resp.Body.Close()
					t.Fatalf("got a response (%s), want an error", resp.Status)
				}
				checkTimeout(t, err, tc.want, tc.bound)
				select {
				case <-arrived:
					<-finished
					if !sawEnd.Load() {
						t.Error("the server did not see its request end: the bound did not cut it on the wire")
					}
				default:
					// On a loaded machine the bound may pass before the request
					// reaches the server; then it has nothing to see.
					t.Log("the bound passed before the request reached the server")
				}
			})
		}
	}
}

// TestBodyAfterHeaders: the header bound stops when the headers arrive, so
// a body that streams on well after it would have passed is read to the
// end; and it is not applied at all when the caller's context has a
// deadline, so late headers under a (later) caller deadline arrive.
func TestBodyAfterHeaders(t *testing.T) {
	for _, tc := range []struct {
		name         string
		deadline     time.Duration
		request      time.Duration
		headersFirst bool // the server sends headers at once, the rest late
	}{
		{"body streams after headers", 0, 0, true},
		{"body streams after headers, request bound later", 0, long, true},
		{"late headers under a caller deadline", long, 0, false},
		{"late headers under a caller deadline and a request bound", long, long, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, header := range escalate {
				if bodyAfterHeaders(t, tc.deadline, header, tc.request, tc.headersFirst, i == len(escalate)-1) {
					return
				}
				t.Logf("the headers took longer than the header bound %v; again with a larger one", header)
			}
		})
	}
}

// bodyAfterHeaders is one attempt of TestBodyAfterHeaders. It returns false,
// to try again with a larger header bound, if the headers the server sent
// at once did not arrive within it and last is false.
func bodyAfterHeaders(t *testing.T, deadline, header, request time.Duration, headersFirst, last bool) bool {
	t.Helper()
	late := make(chan struct{})    // closed when the server has been slow for twice the header bound
	release := make(chan struct{}) // closed by the test once it has seen late
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		if headersFirst {
			io.WriteString(w, "first,")
			w.(http.Flusher).Flush()
		}
		// A slow server: it goes on only after the header bound, armed
		// before this request was sent, has passed twice.
		time.AfterFunc(2*header, func() { close(late) })
		select {
		case <-release:
		case <-done:
			return
		}
		if !headersFirst {
			io.WriteString(w, "first,")
		}
		io.WriteString(w, "rest")
	})
	type result struct {
		resp *http.Response
		err  error
	}
	results := make(chan result, 1)
	ctx, g := start(parent(t, deadline), target(t, srv.URL), header, request)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	tr := newClient(t)
	go func() {
		resp, err := g.Finish(tr.RoundTrip(req))
		results <- result{resp, err}
	}()
	var r result
	if headersFirst {
		r = <-results
		var hte *fault.HeaderTimeoutError
		if errors.As(r.err, &hte) && !last {
			return false
		}
		if r.err != nil {
			t.Fatalf("round trip: %v", r.err)
		}
	}
	<-late
	if err := ctx.Err(); err != nil {
		t.Errorf("request context ended while the server was slow: %v (cause %v)", err, context.Cause(ctx))
	}
	close(release)
	if !headersFirst {
		r = <-results
		if r.err != nil {
			t.Fatalf("round trip: %v", r.err)
		}
	}
	defer r.resp.Body.Close()
	body, err := io.ReadAll(r.resp.Body)
	if err != nil || string(body) != "first,rest" {
		t.Errorf("body = %q, %v; want %q, nil", body, err, "first,rest")
	}
	return true
}

// TestBodyCut: the request bound, unlike the header bound, cuts a body that
// streams on; so does the caller's earlier deadline, with its own error.
// The read error names the source schema and the request.
func TestBodyCut(t *testing.T) {
	// The short bound (the request bound, or the caller's deadline) is
	// tried with the values of escalate in turn, until the headers arrive
	// before it passes; S marks it in the table.
	const S = -1
	for _, tc := range []struct {
		name                      string
		deadline, header, request time.Duration
		want                      which
	}{
		{"request bound", 0, 0, S, requestBound},
		{"request bound with a header bound", 0, later, S, requestBound},
		{"request bound before caller deadline", later, 0, S, requestBound},
		{"caller deadline before request bound", S, later, later, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			or := func(v, d time.Duration) time.Duration {
				if v == S {
					return d
				}
				return v
			}
			for i, d := range escalate {
				if bodyCut(t, or(tc.deadline, d), or(tc.header, d), or(tc.request, d), tc.want, d, i == len(escalate)-1) {
					return
				}
				t.Logf("the headers took longer than %v; again with a larger bound", d)
			}
		})
	}
}

// bodyCut is one attempt of TestBodyCut. It returns false, to try again with
// a larger bound, if the headers did not arrive before the bound d passed
// and last is false.
func bodyCut(t *testing.T, deadline, header, request time.Duration, want which, d time.Duration, last bool) bool {
	t.Helper()
	finished := make(chan struct{}) // the handler returned
	var sawEnd atomic.Bool          // the handler saw its request end
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		defer close(finished)
		io.WriteString(w, "first,")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			sawEnd.Store(true)
		case <-time.After(later): // end the body: a bound that never passes fails the test
			io.WriteString(w, "rest")
		case <-done:
		}
	})
	_, resp, err := send(t, newClient(t), srv, parent(t, deadline), header, request)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && !last {
			return false
		}
		t.Fatalf("round trip: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if string(body) != "first," {
		t.Errorf("body before the cut = %q, want %q", body, "first,")
	}
	checkTimeout(t, err, want, d)
	if prefix := fmt.Sprintf("source schema %q: Post %q: ", "x", srv.URL); !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("read error %q does not start with %q", err, prefix)
	}
	<-finished
	if !sawEnd.Load() {
		t.Error("the server did not see its request end: the bound did not cut it on the wire")
	}
	return true
}

// recordingBody is a response body that records Close.
type recordingBody struct {
	io.Reader
	closed bool
}

func (b *recordingBody) Close() error { b.closed = true; return nil }

// TestFinish covers what Finish makes of a round trip's result once the
// header bound has passed (the test waits for the context it cancels):
// headers that came just too late are dropped for the timeout, a transport
// error gets the timeout added unless it carries it already. Before the
// bound passes, an error is returned as is and releases the context.
func TestFinish(t *testing.T) {
	boom := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		header    time.Duration
		waitFired bool
		err       func(ctx context.Context) error // the transport's error; nil: a response
		check     func(t *testing.T, in, err error)
	}{
		{"headers just too late", short, true, nil, func(t *testing.T, _, err error) {
			var hte *fault.HeaderTimeoutError
			if !errors.As(err, &hte) || error(hte) != err {
				t.Errorf("error = %#v, want the *fault.HeaderTimeoutError itself", err)
			}
			checkTimeout(t, err, headerBound, short)
		}},
		{"transport error without the timeout", short, true, func(context.Context) error { return boom }, func(t *testing.T, _, err error) {
			if !errors.Is(err, boom) {
				t.Errorf("error %q does not wrap the transport's error", err)
			}
			checkTimeout(t, err, headerBound, short)
		}},
		{"transport error carrying the timeout", short, true, func(ctx context.Context) error {
			return fmt.Errorf("net/http: request canceled: %w", context.Cause(ctx))
		}, func(t *testing.T, in, err error) {
			if err != in {
				t.Errorf("error = %q, want the transport's error unchanged: %q", err, in)
			}
			checkTimeout(t, err, headerBound, short)
			if n := strings.Count(err.Error(), "header_timeout"); n != 1 {
				t.Errorf("error %q names the header bound %d times, want once", err, n)
			}
		}},
		{"transport error before the bound", long, false, func(context.Context) error { return boom }, func(t *testing.T, _, err error) {
			if err != boom {
				t.Errorf("error = %q, want the transport's error unchanged", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, g := start(context.Background(), target(t, "http://h/graphql"), tc.header, 0)
			if tc.waitFired {
				select {
				case <-ctx.Done(): // the header timer fired
				case <-time.After(later):
					t.Fatal("the header bound never passed")
				}
			}
			var (
				resp *http.Response
				body *recordingBody
				in   error
			)
			if tc.err == nil {
				body = &recordingBody{Reader: strings.NewReader("late")}
				resp = &http.Response{StatusCode: http.StatusOK, Body: body}
			} else {
				in = tc.err(ctx)
			}
			got, err := g.Finish(resp, in)
			if got != nil {
				t.Errorf("Finish returned a response with error %v", err)
			}
			if body != nil && !body.closed {
				t.Error("the late response's body was not closed")
			}
			if ctx.Err() == nil {
				t.Error("the request context was not released")
			}
			tc.check(t, in, err)
		})
	}
}

// errCause is a cause of a concrete type, for errors.As.
type errCause struct{ msg string }

func (e *errCause) Error() string { return e.msg }

// TestTargetErr: the error names the source schema around a *url.Error
// with net/http's spelling of the method and the URL without its password,
// and wraps the cause.
func TestTargetErr(t *testing.T) {
	for _, tc := range []struct {
		name, method, url string
		want              string
	}{
		{"post", http.MethodPost, "http://gw:secret@h:8080/graphql?query=%7Bcard%7D&variables=4111#frag", `source schema "x": Post "http://h:8080/graphql": boom`},
		{"get", http.MethodGet, "https://h/graphql", `source schema "x": Get "https://h/graphql": boom`},
		{"no method", "", "https://h/graphql", `source schema "x": Get "https://h/graphql": boom`},
		{"no url", http.MethodPost, "", `source schema "x": Post "": boom`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := bound.Target{Schema: "x", Method: tc.method}
			if tc.url != "" {
				tg.URL, _ = url.Parse(tc.url)
			}
			cause := &errCause{"boom"}
			err := tg.Err(cause)
			if err.Error() != tc.want {
				t.Errorf("Err() = %q\nwant     %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Err() = %q shows the password", err)
			}
			var ue *url.Error
			if !errors.As(err, &ue) || ue.Err != cause {
				t.Errorf("Err() = %#v, want a *url.Error around the cause", err)
			}
			var ec *errCause
			if !errors.Is(err, cause) || !errors.As(err, &ec) || ec != cause {
				t.Errorf("Err() = %q does not wrap the cause for errors.Is and errors.As", err)
			}
		})
	}
}

// TestBodyReadErrors: a body that ends early fails with an error naming the
// source schema and wrapping the cause; one that ends well reports io.EOF
// itself, as io.Reader requires.
func TestBodyReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		truncated bool
	}{
		{"complete", false},
		{"truncated", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Length", "10")
				if !tc.truncated {
					io.WriteString(w, "0123456789")
					return
				}
				io.WriteString(w, "012")
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close() // 7 bytes short
				}
			})
			for _, b := range []struct {
				name            string
				header, request time.Duration
			}{{"no bounds", 0, 0}, {"both bounds", long, long}} {
				t.Run(b.name, func(t *testing.T) {
					_, resp, err := send(t, newClient(t), srv, context.Background(), b.header, b.request)
					if err != nil {
						t.Fatalf("round trip: %v", err)
					}
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					if !tc.truncated {
						if err != nil || string(body) != "0123456789" {
							t.Fatalf("body = %q, %v; want the whole body", body, err)
						}
						if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
							t.Errorf("Read at the end = %d, %v; want 0, io.EOF itself", n, err)
						}
						return
					}
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("read error = %v, want io.ErrUnexpectedEOF", err)
					}
					if want := fmt.Sprintf("source schema %q: Post %q: unexpected EOF", "x", srv.URL); err.Error() != want {
						t.Errorf("read error = %q\nwant          %q", err, want)
					}
					var ue *url.Error
					if !errors.As(err, &ue) || ue.Op != "Post" {
						t.Errorf("read error %#v is not a *url.Error for Post", err)
					}
				})
			}
		})
	}
}

// TestCloseReleases: closing a body before its end ends the request's
// context at once, as cancelled, not timed out; the server sees its
// request end.
func TestCloseReleases(t *testing.T) {
	for _, tc := range []struct {
		name            string
		header, request time.Duration
	}{
		{"header bound", long, 0},
		{"request bound", 0, long},
		{"both bounds", long, long},
	} {
		for _, st := range starters {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				ended := make(chan struct{})
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
					io.WriteString(w, "first,")
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						close(ended)
					case <-done:
					}
				})
				ctx, resp, err := sendWith(t, st.start, newClient(t), srv, context.Background(), tc.header, tc.request)
				if err != nil {
					t.Fatalf("round trip: %v", err)
				}
				if _, err := io.ReadFull(resp.Body, make([]byte, len("first,"))); err != nil {
					t.Fatalf("reading the first part: %v", err)
				}
				if err := ctx.Err(); err != nil {
					t.Fatalf("request context ended before Close: %v", err)
				}
				resp.Body.Close()
				if err := ctx.Err(); err != context.Canceled {
					t.Errorf("request context after Close: %v, want context.Canceled", err)
				}
				if cause := context.Cause(ctx); errors.Is(cause, context.DeadlineExceeded) {
					t.Errorf("request context cause after Close = %v, want no timeout", cause)
				}
				<-ended
				resp.Body.Close() // a second Close is harmless
			})
		}
	}
}

// TestHeadersIn: once HeadersIn says a request's headers are in, its
// header bound and that of the call around it (a canary's first attempt)
// no longer end its context, and Finish reports no timeout; its request
// bound still does. A bound that passed before stays passed.
func TestHeadersIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nested  bool // a guard inside another, as a canary's attempt
		request time.Duration
		late    bool // HeadersIn comes after the header bound passed
	}{
		{"one guard", false, 0, false},
		{"nested guards", true, 0, false},
		{"request bound still applies", false, short, false},
		{"after the bound passed", false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var outer *bound.Guard
			if tc.nested {
				ctx, outer = start(ctx, bound.Target{Schema: "s"}, short, 0)
			}
			ctx, g := start(ctx, bound.Target{Schema: "s"}, short, tc.request)
			if tc.late {
				<-ctx.Done()
			}
			bound.HeadersIn(ctx)
			// Wait for twice the header bound: a timer still armed fires.
			passed := make(chan struct{})
			time.AfterFunc(2*short, func() { close(passed) })
			select {
			case <-passed:
			case <-ctx.Done():
			}
			err := context.Cause(ctx)
			var hte *fault.HeaderTimeoutError
			var rte *fault.RequestTimeoutError
			switch {
			case tc.late:
				if !errors.As(err, &hte) {
					t.Errorf("context ended with %v, want the header timeout that passed before HeadersIn", err)
				}
			case tc.request > 0:
				if !errors.As(err, &rte) {
					t.Errorf("context ended with %v, want the request timeout", err)
				}
			case err != nil:
				t.Errorf("context ended with %v after HeadersIn", err)
			}
			resp := &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok"))}
			got, ferr := g.Finish(resp, nil)
			if tc.late {
				if !errors.As(ferr, &hte) {
					t.Errorf("Finish after the bound passed: %v, want the header timeout", ferr)
				}
				return
			}
			if ferr != nil {
				t.Fatalf("Finish: %v", ferr)
			}
			got.Body.Close()
			if outer != nil {
				if _, err := outer.Finish(&http.Response{Body: io.NopCloser(strings.NewReader(""))}, nil); err != nil {
					t.Errorf("the outer guard's Finish: %v", err)
				}
			}
		})
	}
}
