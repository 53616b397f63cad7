package transport_test

// GraphQL over HTTP GET under the policies that send a query twice or
// share it: retry, hedging and dedupe classify a GET by its ?query=
// (operation.Classify), as they classify a POST by its body. A GET query
// is retried, hedged and shared; a GET mutation is sent once per call.

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// getDocuments are the GET requests' documents: a query, and a mutation
// that the source schema runs (mutationServer runs what a GET asks, as not
// every server refuses it).
var getDocuments = []struct {
	name, document string
	query          bool
}{
	{"query", "query Q { a }", true},
	{"mutation", "mutation M { pay(amount: 100) }", false},
}

// getCall sends a GET of document to the schema products at schemaURL and
// returns the response's status, or the error.
type getCall struct {
	name string
	send func(ctx context.Context, inv *transport.Transport, schemaURL, document string) (int, error)
}

var getCalls = []getCall{
	{"Do", func(ctx context.Context, inv *transport.Transport, schemaURL, document string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, getURL(schemaURL, document), nil)
		if err != nil {
			return 0, err
		}
		return statusOf(inv.Do(ctx, "products", req))
	}},
	{"Client", func(ctx context.Context, inv *transport.Transport, schemaURL, document string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, getURL(schemaURL, document), nil)
		if err != nil {
			return 0, err
		}
		return statusOf(inv.Client().Do(req))
	}},
}

// getURL is schemaURL with document as its query parameter.
func getURL(schemaURL, document string) string {
	return schemaURL + "?" + url.Values{"query": {document}}.Encode()
}

// statusOf reads and closes a response and returns its status.
func statusOf(resp *http.Response, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// TestClassifyGETRetry: with retry.max_attempts 3 and a source schema that
// answers the first request 503 (after running it), a GET query is sent
// again and the caller gets the 200; a GET mutation is sent once and the
// caller gets the 503. Every path, through Do and Client.
func TestClassifyGETRetry(t *testing.T) {
	for _, p := range paths {
		for _, doc := range getDocuments {
			for _, call := range getCalls {
				t.Run(string(p)+"/"+doc.name+"/"+call.name, func(t *testing.T) {
					var first, framed atomic.Bool
					srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
						framed.CompareAndSwap(false, hasBody(r))
						if first.CompareAndSwap(false, true) {
							http.Error(w, "busy", http.StatusServiceUnavailable)
							return true
						}
						return false
					})
					inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
						s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
					}))
					status, err := call.send(context.Background(), inv, srv.URL(), doc.document)
					if err != nil {
						t.Fatal(err)
					}
					wantSent, wantStatus, wantRan := 2, http.StatusOK, int32(0)
					if !doc.query {
						wantSent, wantStatus, wantRan = 1, http.StatusServiceUnavailable, 1
					}
					if sent := len(srv.Requests()); sent != wantSent || status != wantStatus || srv.ran.Load() != wantRan {
						t.Errorf("the source schema got %d requests and ran %d mutations, the caller got %d; want %d, %d and %d", sent, srv.ran.Load(), status, wantSent, wantRan, wantStatus)
					}
					if framed.Load() {
						t.Error("a GET reached the source schema with a body (Content-Length or Transfer-Encoding)")
					}
				})
			}
		}
	}
}

// TestClassifyGETHedge: with hedging after 1ms, a GET query whose answer
// is held goes out a second time; a GET mutation does not. The server
// holds each request until a second comes or 200ms pass (secondChance).
func TestClassifyGETHedge(t *testing.T) {
	for _, p := range paths {
		for _, doc := range getDocuments {
			t.Run(string(p)+"/"+doc.name, func(t *testing.T) {
				chance := newSecondChance()
				srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
					chance.hold()
					return false
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: time.Millisecond}}
				}))
				status, err := getCalls[0].send(context.Background(), inv, srv.URL(), doc.document)
				if err != nil || status != http.StatusOK {
					t.Fatalf("status %d, error %v", status, err)
				}
				want := 2
				if !doc.query {
					want = 1
				}
				if n := chance.count(); n != want {
					t.Errorf("the source schema got %d requests, want %d", n, want)
				}
			})
		}
	}
}

// TestClassifyGETDedupe: with dedupe on, two callers that send one GET
// query at the same time share one request; two that send one GET
// mutation each send their own. The server holds the first request until
// the second arrives, or, once the second call has entered the pipeline
// (WithMiddleware, outside dedupe), for a window in which it does not: the
// window bounds the observation of an absence, it times nothing.
func TestClassifyGETDedupe(t *testing.T) {
	const window = time.Second
	for _, p := range paths {
		for _, doc := range getDocuments {
			t.Run(string(p)+"/"+doc.name, func(t *testing.T) {
				firstArrived, secondArrived := make(chan struct{}), make(chan struct{})
				release := make(chan struct{})
				var arrivals atomic.Int32
				var framed atomic.Bool
				srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
					framed.CompareAndSwap(false, hasBody(r))
					switch arrivals.Add(1) {
					case 1:
						close(firstArrived)
						<-release
					case 2:
						close(secondArrived)
					}
					return false
				})
				// entered counts the calls that reached the pipeline; the
				// second closes secondEntered.
				var entered atomic.Int32
				secondEntered := make(chan struct{})
				outer := func(next http.RoundTripper) http.RoundTripper {
					return roundTripFunc(func(req *http.Request) (*http.Response, error) {
						if entered.Add(1) == 2 {
							close(secondEntered)
						}
						return next.RoundTrip(req)
					})
				}
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = env.Enabled }), transport.WithMiddleware(outer))
				var releaseOnce sync.Once
				t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

				results := make(chan error, 2)
				ask := func() {
					status, err := getCalls[0].send(context.Background(), inv, srv.URL(), doc.document)
					if err == nil && status != http.StatusOK {
						err = &statusError{status}
					}
					results <- err
				}
				go ask()
				<-firstArrived
				go ask()
				<-secondEntered
				select {
				case <-secondArrived:
				case <-time.After(window):
				}
				releaseOnce.Do(func() { close(release) })
				for range 2 {
					if err := <-results; err != nil {
						t.Error(err)
					}
				}
				want, wantRan := 1, int32(0)
				if !doc.query {
					want, wantRan = 2, 2
				}
				if n := len(srv.Requests()); n != want || srv.ran.Load() != wantRan {
					t.Errorf("the source schema got %d requests and ran %d mutations for 2 calls; want %d and %d", n, srv.ran.Load(), want, wantRan)
				}
				if framed.Load() {
					t.Error("a GET reached the source schema with a body (Content-Length or Transfer-Encoding)")
				}
			})
		}
	}
}

// hasBody reports whether r came with a body's framing: a Content-Length
// or a Transfer-Encoding. A GET that a policy sends again must not.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// statusError is a call's unexpected status.
type statusError struct{ status int }

func (e *statusError) Error() string { return http.StatusText(e.status) }
