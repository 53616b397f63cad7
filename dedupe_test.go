package transport_test

// Dedupe on the wire: users asking the same query at once each get their
// own answer, and one caller's header timeout does not cut the body others
// share.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestDedupeKeyPerUser: with dedupe on, users asking the same query at the
// same time each get their own answer, on every path, whether the header
// that tells them apart was forwarded by headers.forward_matching (Post) or
// set by the caller on its request (Do, as graphql-go-tools sets its fetch
// headers): every header is in the key. Rounds of users at once; the
// server holds each round until every user's request has come, so that a
// key that let users share would show.
func TestDedupeKeyPerUser(t *testing.T) {
	const users, rounds = 6, 15
	if testing.Short() {
		t.Skip("a concurrency test: 90 calls per path and call")
	}
	for _, p := range paths {
		for _, call := range []string{"Post/forward_matching", "Do/caller header"} {
			t.Run(string(p)+"/"+call, func(t *testing.T) {
				var mu sync.Mutex
				arrived := 0
				gate := make(chan struct{})
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					arrived++
					if arrived == users {
						close(gate)
					}
					g := gate
					mu.Unlock()
					// A key that lets users share sends fewer than users
					// requests: the round goes on after a grace instead.
					select {
					case <-g:
					case <-time.After(300 * time.Millisecond):
					}
					fmt.Fprintf(w, `{"data":{"me":%q}}`, r.Header.Get("X-User-Id"))
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.Dedupe = env.Enabled
					if strings.HasPrefix(call, "Post") {
						s.Headers.ForwardMatching = []string{"^X-User-"}
					}
				}))
				var wrong failures
				for round := range rounds {
					mu.Lock()
					arrived, gate = 0, make(chan struct{})
					mu.Unlock()
					var wg sync.WaitGroup
					for u := range users {
						user := fmt.Sprintf("user-%d", u)
						wg.Go(func() {
							got, err := askAs(inv, srv.URL(), call, user)
							switch want := fmt.Sprintf(`{"data":{"me":%q}}`, user); {
							case err != nil:
								wrong.Add("round %d, %s: %v", round, user, err)
							case got != want:
								wrong.Add("round %d, %s got %s", round, user, got)
							}
						})
					}
					wg.Wait()
				}
				if n, first := wrong.Report(); n > 0 {
					t.Errorf("%d of %d calls did not get their own answer:\n\t%s", n, users*rounds, first)
				}
			})
		}
	}
}

// askAs sends the one query of TestDedupeKeyPerUser as user, by call, and
// returns the body of the answer.
func askAs(inv transport.Invoker, url, call, user string) (string, error) {
	const query = `{"query":"{ me }"}`
	var resp *http.Response
	var err error
	if strings.HasPrefix(call, "Post") {
		resp, err = inv.Post(gatewayCtx("X-User-Id", user), "products", []byte(query))
	} else {
		req, rerr := http.NewRequest(http.MethodPost, url, strings.NewReader(query))
		if rerr != nil {
			return "", rerr
		}
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(query)), nil }
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-Id", user)
		resp, err = inv.Do(context.Background(), "products", req)
	}
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestDedupeHeaderTimeoutSparesBody: with dedupe on, header_timeout bounds
// the wait for the response headers only, as it does without dedupe: an
// answer whose headers came at once and whose body comes after twice the
// header bound reaches both callers whole. On h1 the request path's own
// header timer is the one at stake only with request_timeout set.
func TestDedupeHeaderTimeoutSparesBody(t *testing.T) {
	const header = 100 * time.Millisecond
	for _, p := range append(slices.Clone(paths), "sockets-h2c") {
		t.Run(string(p), func(t *testing.T) {
			release := make(chan struct{})
			h2c := p == "sockets-h2c"
			if h2c {
				p = env.PathSockets
			}
			srv := newWireServer(t, wiretest.Options{H2COnly: h2c, Handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"data":{"slow":"`)
				w.(http.Flusher).Flush()
				// The rest after twice the header bound, counted from when
				// the headers left.
				late := time.NewTimer(2 * header)
				defer late.Stop()
				select {
				case <-late.C:
				case <-r.Context().Done():
					return
				}
				<-release
				io.WriteString(w, `body"}}`)
			}})
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				if h2c {
					s.HTTPVersion = "h2c"
				}
				s.Dedupe = env.Enabled
				s.HeaderTimeout = header
				s.RequestTimeout = time.Hour // on h1, the request path's header timer, not the engine's
			}))
			first := postAsync(inv, context.Background(), "products", `{"query":"{ slow }"}`)
			second := postAsync(inv, context.Background(), "products", `{"query":"{ slow }"}`)
			close(release)
			for i, ch := range []<-chan postResult{first, second} {
				r := <-ch
				if r.err != nil || r.body != `{"data":{"slow":"body"}}` {
					t.Errorf("caller %d got %q, %v; want the whole body", i, r.body, r.err)
				}
			}
		})
	}
}

// dedupeOn is the configuration of the dedupe wire tests: dedupe on, and
// the gateway request's X-Request-Id forwarded, so that the source schema
// tells whose request it got (X-Request-Id is not in the dedupe key).
func dedupeOn(p env.Path, url string) env.Config {
	cfg := withSchema(p, url, func(s *env.SourceSchema) { s.Dedupe = env.Enabled })
	cfg.ForwardHeaders = []string{"X-Request-Id"}
	return cfg
}

// TestDedupeLeaderLeavesFollowerAnswered: the shared request is the first
// caller's own. When the first caller's context ends while a follower
// waits, the source schema sees that request cancelled, then the
// follower's own request (its X-Request-Id), and the follower gets its
// answer, on every path.
func TestDedupeLeaderLeavesFollowerAnswered(t *testing.T) {
	const query = `{"query":"{ me }"}`
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			arrived := make(chan string, 4)
			cancelled := make(chan string, 4)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("X-Request-Id")
				arrived <- id
				if id == "leader" {
					<-r.Context().Done()
					cancelled <- id
					return
				}
				fmt.Fprintf(w, `{"data":{"for":%q}}`, id)
			})
			joined := make(chan int, 4)
			inv := newInvoker(t, dedupeOn(p, srv.URL()), transport.WithDedupeJoinedHook(func(n int) { joined <- n }))
			ctx, cancel := context.WithCancel(gatewayCtx("X-Request-Id", "leader"))
			defer cancel()
			leader := postAsync(inv, ctx, "products", query)
			if id := awaitGap(t, arrived, "the leader's request"); id != "leader" {
				t.Fatalf("the source schema got %q's request first", id)
			}
			awaitGap(t, joined, "the leader to join")
			follower := postAsync(inv, gatewayCtx("X-Request-Id", "follower"), "products", query)
			if n := awaitGap(t, joined, "the follower to join"); n != 2 {
				t.Fatalf("the follower joined with %d waiters, want 2", n)
			}
			cancel()
			if r := awaitGap(t, leader, "the leader's return"); !errors.Is(r.err, context.Canceled) {
				t.Errorf("the leader got %q, %v; want context.Canceled", r.body, r.err)
			}
			awaitGap(t, cancelled, "the leader's request cancelled at the source schema")
			if id := awaitGap(t, arrived, "the follower's own request"); id != "follower" {
				t.Errorf("the source schema's second request came for %q, want the follower's", id)
			}
			if r := awaitGap(t, follower, "the follower's answer"); r.err != nil || r.body != `{"data":{"for":"follower"}}` {
				t.Errorf("the follower got %q, %v; want its own answer", r.body, r.err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("the source schema got %d requests, want 2", n)
			}
		})
	}
}

// TestDedupeLateCallerAlone: a query is open to join only until its
// response headers are in. With nobody joined by then, the first caller
// reads its answer as it streams (the first part while the source schema
// holds the rest), and a second caller of the same query sends its own
// request (its X-Request-Id reaches the source schema) and gets its own
// answer, on every path.
func TestDedupeLateCallerAlone(t *testing.T) {
	const query = `{"query":"{ me }"}`
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			release := make(chan struct{})
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("X-Request-Id")
				if id != "first" {
					fmt.Fprintf(w, `{"data":{"for":%q}}`, id)
					return
				}
				io.WriteString(w, `{"data":`)
				w.(http.Flusher).Flush()
				select {
				case <-release:
					io.WriteString(w, `{"for":"first"}}`)
				case <-r.Context().Done():
				}
			})
			defer close(release) // before the server closes
			inv := newInvoker(t, dedupeOn(p, srv.URL()))
			type answer struct {
				resp *http.Response
				err  error
			}
			first := make(chan answer, 1)
			go func() {
				resp, err := inv.Post(gatewayCtx("X-Request-Id", "first"), "products", []byte(query))
				first <- answer{resp, err}
			}()
			a := awaitGap(t, first, "the first caller's response headers, while the source schema holds the body")
			if a.err != nil {
				t.Fatal(a.err)
			}
			resp := a.resp
			defer resp.Body.Close()
			part := make([]byte, len(`{"data":`))
			if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != `{"data":` {
				t.Fatalf("the first caller read %q, %v; want the first part as it streams", part, err)
			}
			r := awaitGap(t, postAsync(inv, gatewayCtx("X-Request-Id", "second"), "products", query), "the second caller's answer")
			if r.err != nil || r.body != `{"data":{"for":"second"}}` {
				t.Errorf("the second caller got %q, %v; want its own answer", r.body, r.err)
			}
			var ids []string
			for _, req := range srv.Requests() {
				ids = append(ids, req.Header.Get("X-Request-Id"))
			}
			if !slices.Equal(ids, []string{"first", "second"}) {
				t.Errorf("the source schema got requests for %q, want first and second", ids)
			}
		})
	}
}
