package transport_test

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

// The wire tests of issue 17: nothing to the wrong user, nothing run twice.
// Each failed on the code before the fix; docs/reliability.md has the
// figures.

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
								wrong.add("round %d, %s: %v", round, user, err)
							case got != want:
								wrong.add("round %d, %s got %s", round, user, got)
							}
						})
					}
					wg.Wait()
				}
				if n, first := wrong.report(); n > 0 {
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

// TestCanaryResendSpendsBounds: under a canary, a query that failed on
// sockets is sent again on legacy only within what is left of its bounds.
// A sockets attempt that used the whole header_timeout or request_timeout
// is not sent again (the server sees one request, not two, and the caller
// waited one bound, not two); one that failed at once goes again on legacy
// with the same deadline as the first attempt.
func TestCanaryResendSpendsBounds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		header, request time.Duration
	}{
		{"header_timeout", 100 * time.Millisecond, 0},
		{"request_timeout", 0, 100 * time.Millisecond},
	} {
		for _, call := range []string{"Post", "Do"} {
			t.Run("spent/"+tc.name+"/"+call, func(t *testing.T) {
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					<-r.Context().Done() // never answers: every attempt runs out of its bound
				})
				cfg := canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL())
				s := cfg.SourceSchemas["products"]
				s.HeaderTimeout, s.RequestTimeout = tc.header, tc.request
				cfg.SourceSchemas["products"] = s
				inv := newInvoker(t, cfg)
				var err error
				if call == "Post" {
					_, err = inv.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
				} else {
					req, _ := http.NewRequest(http.MethodGet, srv.URL()+"?query=%7B+a+%7D", nil)
					_, err = inv.Do(context.Background(), "products", req)
				}
				if err == nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Post: %v, want the %s error", err, tc.name)
				}
				srv.Close() // every request the server will see has come
				if legacy, sockets := countPaths(srv); legacy != 0 || sockets != 1 {
					t.Errorf("the server saw %d requests on sockets and %d on legacy, want 1 and 0: the re-send started the bounds again (%v)", sockets, legacy, err)
				}
			})
		}
	}
	t.Run("left/request_timeout", func(t *testing.T) {
		srv := newSchemaServer(t, nil)
		cfg := canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL())
		s := cfg.SourceSchemas["products"]
		s.RequestTimeout = time.Hour
		cfg.SourceSchemas["products"] = s
		var mu sync.Mutex
		var deadlines []time.Time
		record := func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				d, _ := req.Context().Deadline()
				mu.Lock()
				deadlines = append(deadlines, d)
				mu.Unlock()
				return next.RoundTrip(req)
			})
		}
		inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
			Dial:       failingDial, // the sockets attempt fails at once
			Middleware: []func(http.RoundTripper) http.RoundTripper{record},
		}))
		resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
		if err != nil {
			t.Fatalf("Post: %v, want the answer of the re-send on legacy", err)
		}
		readAll(t, resp)
		mu.Lock()
		defer mu.Unlock()
		if len(deadlines) != 2 || deadlines[0].IsZero() || !deadlines[0].Equal(deadlines[1]) {
			t.Errorf("attempt deadlines %v, want two, the re-send's the first's", deadlines)
		}
	})
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestReloadMovesWaitingRequest: a request waiting for a connection when a
// reload moves its schema to another URL reaches the new server with the
// new URL's path and Host, never the old request on the new address; a Do
// for another URL of the old server, or a request whose header rules
// changed, fails naming the schema, unsent.
func TestReloadMovesWaitingRequest(t *testing.T) {
	for _, engine := range engines {
		for _, tc := range []struct {
			name    string
			do      string // "": Post; else a Do for this path of the old server
			rules   bool   // the reload changes the header rules too
			wantErr bool
		}{
			{"Post", "", false, false},
			{"Do for the schema URL", "/graphql", false, false},
			{"Do for another path", "/other", false, true},
			{"Post, header rules changed", "", true, true},
			{"Do for another path, under retry", "/other", false, true},
		} {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				hold := make(chan struct{})
				var once sync.Once
				release := func() { once.Do(func() { close(hold) }) }
				held := make(chan struct{}, 1)
				old := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					held <- struct{}{}
					<-hold
				})
				t.Cleanup(release) // before the server closes
				moved := newSchemaServer(t, nil)
				movedURL := moved.Server.URL + "/v2/graphql"
				retried := strings.HasSuffix(tc.name, "under retry")
				cfg := engineConfig(engine, old.URL(), func(s *env.SourceSchema) {
					s.MaxConnsPerHost = 1
					if retried {
						s.Retry.MaxAttempts = 3
					}
				})
				entered := make(chan struct{}, 2)
				signal := func(next http.RoundTripper) http.RoundTripper {
					return roundTripFunc(func(req *http.Request) (*http.Response, error) {
						entered <- struct{}{}
						return next.RoundTrip(req)
					})
				}
				inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
					Middleware: []func(http.RoundTripper) http.RoundTripper{signal},
				}))
				// The one connection is busy...
				busy := postAsync(inv, context.Background(), "products", `{"query":"{ a }"}`)
				<-entered
				<-held
				// ...so this request waits for it (or is about to: either
				// way the old pool is drained under it before it sends).
				waiting := make(chan postResult, 1)
				go func() {
					var resp *http.Response
					var err error
					if tc.do == "" {
						resp, err = inv.Post(context.Background(), "products", []byte(`{"query":"{ b }"}`))
					} else {
						req, _ := http.NewRequest(http.MethodPost, old.Server.URL+tc.do, strings.NewReader(`{"query":"{ b }"}`))
						resp, err = inv.Do(context.Background(), "products", req)
					}
					if err != nil {
						waiting <- postResult{err: err}
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					waiting <- postResult{string(b), err}
				}()
				<-entered
				next := engineConfig(engine, movedURL, func(s *env.SourceSchema) {
					s.MaxConnsPerHost = 1
					if retried {
						s.Retry.MaxAttempts = 3
					}
					if tc.rules {
						s.Headers.Set = map[string]string{"X-New": "1"}
					}
				})
				if err := inv.Reload(next); err != nil {
					t.Fatal(err)
				}
				r := <-waiting
				release()
				<-busy
				if tc.wantErr {
					if r.err == nil || !errors.Is(r.err, transport.ErrReloaded) || !strings.Contains(r.err.Error(), `"products"`) {
						t.Errorf("got %q, %v; want an error naming the schema that wraps ErrReloaded", r.body, r.err)
					}
					if retried && !strings.Contains(r.err.Error(), "after 1 attempt(s)") {
						t.Errorf("retry sent the overtaken request again: %v", r.err)
					}
					if n := len(moved.Requests()); n != 0 {
						t.Errorf("the new server received %d requests, want none", n)
					}
					return
				}
				if r.err != nil {
					t.Fatalf("the moved request: %v", r.err)
				}
				got := moved.Last(t)
				if got.Path != "/v2/graphql" || got.Host != hostOf(movedURL) {
					t.Errorf("the new server got %s with Host %s, want /v2/graphql with Host %s", got.Path, got.Host, hostOf(movedURL))
				}
			})
		}
	}
}

// hostOf returns the host:port of a URL.
func hostOf(u string) string {
	rest := u[strings.Index(u, "://")+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
