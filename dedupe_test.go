package transport_test

// Dedupe on the wire: users asking the same query at once each get their
// own answer, and one caller's header timeout does not cut the body others
// share.

import (
	"context"
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
