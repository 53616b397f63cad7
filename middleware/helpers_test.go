package middleware_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// guard bounds every wait in these tests, so that a broken rule fails a
// test instead of hanging the binary; no test relies on it passing.
const guard = 10 * time.Second

// Request bodies of each kind.
const (
	queryBody        = `{"query":"query Product($id: ID!) { product(id: $id) { name } }","variables":{"id":"1"}}`
	mutationBody     = `{"query":"mutation { addReview(text: \"great\") { id } }"}`
	subscriptionBody = `{"query":"subscription { reviewAdded { id } }"}`
	persistedBody    = `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`
	// caseVariantBody runs the mutation on a Go source schema: encoding/json
	// reads "Query" as "query", the last one winning (issue 17, item 3).
	caseVariantBody = `{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`
)

// newRequest builds a POST of body to url with ctx. With rewindable, the
// body is a *strings.Reader and the request has GetBody; without, it is an
// opaque reader that can be read once.
func newRequest(t testing.TB, ctx context.Context, url, body string, rewindable bool) *http.Request {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if !rewindable {
		r = io.NopCloser(r) // hides the type, so no GetBody
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if rewindable != (req.GetBody != nil) {
		t.Fatalf("GetBody set: %t, want %t", req.GetBody != nil, rewindable)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// received is what a test server got.
type received struct {
	Method string
	Header http.Header
	Body   string
}

// server is a loopback source schema that records what reaches it.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

// newServer starts a recording server that calls h for each request, with
// the request's number (from 1) and its body, already read.
func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int, body string)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server reading body: %v", err)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, received{Method: r.Method, Header: r.Header.Clone(), Body: string(body)})
		n := len(s.reqs)
		s.mu.Unlock()
		h(w, r, n, string(body))
	}))
	t.Cleanup(s.Close)
	return s
}

// received returns a copy of what the server got so far.
func (s *server) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.reqs...)
}

// transport returns the server's client transport, to end a chain.
func (s *server) transport() http.RoundTripper { return s.Client().Transport }

// readBody reads and closes resp's body.
func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("reading response body: %v", err)
	}
	return string(b)
}

// roundTripFunc makes a function a RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// trackedBody is a response body that records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return nil
}

// fakeResponse is a response to req with status and body, whose closing
// is tracked.
func fakeResponse(req *http.Request, status int, body string) (*http.Response, *trackedBody) {
	tb := &trackedBody{Reader: bytes.NewReader([]byte(body))}
	return &http.Response{
		Status:        http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          tb,
		ContentLength: int64(len(body)),
		Request:       req,
	}, tb
}
