package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// The tests of issue 17, item 3 ("a mutation can run twice"): a request
// object whose member "query" holds a query and whose member "Query" holds
// a mutation runs the mutation on a Go source schema, since encoding/json
// matches member names without case and the last one wins. Every part of
// the transport that sends a query twice, or shares one, must see a
// mutation there, and send it once per call.

// caseVariantBodies hold such a request, alone and as the second entry of a
// batch.
var caseVariantBodies = []struct{ name, body string }{
	{"object", `{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`},
	{"batch", `[{"query":"query Q { a }"},{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}]`},
}

// opKindGuard bounds a wait in these tests; it only ends a wait that the
// code under test would otherwise leave hanging, and never times anything.
const opKindGuard = 10 * time.Second

// gqlgenParams is what gqlgen's POST transport decodes a request body into
// (graphql.RawParams), and graph-gophers' relay handler alike: the
// encoding/json rules apply, member names matched without case, the last
// one winning, a null leaving a field as it was.
type gqlgenParams struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// mutationServer is a source schema that reads each request as a Go
// GraphQL server does and counts the mutations it ran.
type mutationServer struct {
	*schemaServer
	ran atomic.Int32
}

// newMutationServer starts a mutationServer. After it has run a request,
// then answers it if non-nil and it returns true; otherwise the server
// answers 200 with one result per operation.
func newMutationServer(t *testing.T, then func(w http.ResponseWriter, r *http.Request) bool) *mutationServer {
	t.Helper()
	m := &mutationServer{}
	m.schemaServer = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var batch []gqlgenParams
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // as gqlgen does
		var err error
		switch {
		case r.Method == http.MethodGet:
			// A server that runs what a GET asks, mutations included
			// (GraphQL over HTTP forbids it; not every server refuses).
			q := r.URL.Query()
			batch = append(batch, gqlgenParams{Query: q.Get("query"), OperationName: q.Get("operationName")})
		case bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")):
			err = dec.Decode(&batch)
		default:
			var p gqlgenParams
			err = dec.Decode(&p)
			batch = append(batch, p)
		}
		if err != nil {
			http.Error(w, `{"errors":[{"message":"json request body could not be decoded"}]}`, http.StatusBadRequest)
			return
		}
		for _, p := range batch {
			// The test's documents hold one operation each: the server
			// runs it, and a mutation pays.
			if strings.HasPrefix(strings.TrimSpace(p.Query), "mutation") {
				m.ran.Add(1)
			}
		}
		if then != nil && then(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"a":1}}`)
	})
	return m
}

// TestCaseVariantMutationShadow: shadow mode (rate 1) does not send the
// request through the sockets path too: the server runs the mutation once
// for one Post, and no comparison is made.
func TestCaseVariantMutationShadow(t *testing.T) {
	for _, b := range caseVariantBodies {
		t.Run(b.name, func(t *testing.T) {
			srv := newMutationServer(t, nil)
			rec := newRecorder()
			inv := newInvoker(t, shadowConfig(1, "products", srv.URL()), transport.WithShadowPublisher(rec))
			resp, err := inv.Post(context.Background(), "products", []byte(b.body))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			inv.Close() // waits for the shadow comparison, if one was started
			legacy, sockets := countPaths(srv.schemaServer)
			if n := srv.ran.Load(); n != 1 || legacy != 1 || sockets != 0 {
				t.Errorf("the server ran the mutation %d times for one Post (requests: %d by legacy, %d by sockets); want once, by legacy only", n, legacy, sockets)
			}
			select {
			case <-rec.compared:
				t.Error("shadow compared the answers of a mutation")
			default:
			}
		})
	}
}

// TestCaseVariantMutationRetry: with retry.max_attempts 3 and a server
// that answers 503 the first time (after running the request), the
// request is sent once: the caller gets the 503.
func TestCaseVariantMutationRetry(t *testing.T) {
	for _, p := range paths {
		for _, b := range caseVariantBodies {
			t.Run(string(p)+"/"+b.name, func(t *testing.T) {
				var first atomic.Bool
				srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
					if first.CompareAndSwap(false, true) {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return true
					}
					return false
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
				}))
				resp, err := inv.Post(context.Background(), "products", []byte(b.body))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if n, sent := srv.ran.Load(), len(srv.Requests()); n != 1 || sent != 1 || resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("the server ran the mutation %d times in %d requests for one Post, and the caller got %d; want once, in one request, and the 503", n, sent, resp.StatusCode)
				}
			})
		}
	}
}

// TestCaseVariantMutationDedupe: with dedupe on, two callers that send the
// request at the same time each get their own: the server runs the
// mutation twice, once per call. The server holds the first request until
// the second arrives, so the second caller finds the first in flight.
func TestCaseVariantMutationDedupe(t *testing.T) {
	for _, p := range paths {
		for _, b := range caseVariantBodies {
			t.Run(string(p)+"/"+b.name, func(t *testing.T) {
				firstArrived, secondArrived := make(chan struct{}), make(chan struct{})
				var arrivals atomic.Int32
				srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
					switch arrivals.Add(1) {
					case 1:
						close(firstArrived)
						select {
						case <-secondArrived:
						case <-time.After(opKindGuard): // the second caller shares this request
						}
					case 2:
						close(secondArrived)
					}
					return false
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = env.Enabled }))
				first := postAsync(inv, context.Background(), "products", b.body)
				select {
				case <-firstArrived:
				case res := <-first:
					t.Fatalf("the first call ended before its request reached the server: %+v", res)
				}
				second := postAsync(inv, context.Background(), "products", b.body)
				for i, done := range []<-chan postResult{first, second} {
					if res := <-done; res.err != nil {
						t.Errorf("call %d: %v", i+1, res.err)
					}
				}
				if n, sent := srv.ran.Load(), len(srv.Requests()); n != 2 || sent != 2 {
					t.Errorf("the server ran the mutation %d times in %d requests for 2 calls; want once per call", n, sent)
				}
			})
		}
	}
}

// TestCaseVariantMutationCanary: under a canary at rate 1, a sockets
// attempt that reached the server, which ran it and then closed the
// connection without an answer, is not sent again on legacy: the caller
// gets the sockets error, for Post and for Do.
func TestCaseVariantMutationCanary(t *testing.T) {
	for _, b := range caseVariantBodies {
		for _, do := range []bool{false, true} {
			t.Run(b.name+map[bool]string{false: "/Post", true: "/Do"}[do], func(t *testing.T) {
				srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
					if !bySockets(r) {
						return false
					}
					if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
						conn.Close()
					}
					return true
				})
				inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL()))
				var resp *http.Response
				var err error
				if do {
					req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(b.body)) // GetBody set
					req.Header.Set("Content-Type", "application/json")
					resp, err = inv.Do(gatewayCtx(), "products", req)
				} else {
					resp, err = inv.Post(gatewayCtx(), "products", []byte(b.body))
				}
				status := 0
				if err == nil {
					readAll(t, resp)
					status = resp.StatusCode
				}
				legacy, sockets := countPaths(srv.schemaServer)
				if n := srv.ran.Load(); n != 1 || legacy != 0 || err == nil {
					t.Errorf("the server ran the mutation %d times for one call (requests: %d by sockets, %d by legacy), and the caller got status %d, error %v; want once, by sockets only, and the sockets error", n, sockets, legacy, status, err)
				}
			})
		}
	}
}

// TestCanaryGETResend: under a canary at rate 1, a GET whose sockets
// attempt the server ran and then dropped without an answer goes again on
// legacy only if its query parameter is a query, or it has none.
func TestCanaryGETResend(t *testing.T) {
	tests := []struct {
		name      string
		rawQuery  string
		wantRuns  int32 // mutations the server ran
		wantAgain bool  // sent again on legacy
	}{
		{"a query", "query=query+Q+%7B+a+%7D", 0, true},
		{"no document", "extensions=%7B%7D", 0, true},
		{"a mutation", "query=mutation+M+%7B+pay%28amount%3A+100%29+%7D", 1, false},
		{"a mutation beside a query", "query=query+Q+%7B+a+%7D&query=mutation+M+%7B+pay%28amount%3A+100%29+%7D", 0, false},
		{"a document that does not parse", "query=%7B+a", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newMutationServer(t, func(w http.ResponseWriter, r *http.Request) bool {
				if !bySockets(r) {
					return false
				}
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
				return true
			})
			inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL()))
			req, _ := http.NewRequest(http.MethodGet, srv.URL()+"?"+tt.rawQuery, nil)
			resp, err := inv.Do(gatewayCtx(), "products", req)
			if err == nil {
				readAll(t, resp)
			}
			legacy, sockets := countPaths(srv.schemaServer)
			if again := legacy == 1; again != tt.wantAgain || sockets != 1 || (err == nil) != tt.wantAgain || srv.ran.Load() != tt.wantRuns {
				t.Errorf("requests: %d by sockets, %d by legacy; the server ran %d mutations; the caller's error: %v. Want 1 by sockets, sent again on legacy: %v, %d mutations", sockets, legacy, srv.ran.Load(), err, tt.wantAgain, tt.wantRuns)
			}
		})
	}
}
