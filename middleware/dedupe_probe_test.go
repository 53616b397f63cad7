package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/middleware"
)

// userKey is the context key of the user a test call is made for.
type userKey struct{}

// noToken is the user whose TokenFunc fails.
const noToken = "nobody"

// userToken is a TokenFunc that takes the user from the context, as a
// gateway's per-user token source does.
func userToken(ctx context.Context) (string, error) {
	user, _ := ctx.Value(userKey{}).(string)
	if user == "" || user == noToken {
		return "", errors.New("no token for this user")
	}
	return tokenFor(user), nil
}

func tokenFor(user string) string { return "Bearer " + user + "-token" }

// userBody is the body that bodyPerUser sends for user.
func userBody(user string) string {
	return fmt.Sprintf(`{"query":"{ me }","variables":{"user":%q}}`, user)
}

// bodyPerUser is an attempt middleware that sends a body of its own, which
// names the user.
func bodyPerUser(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			io.Copy(io.Discard, req.Body)
			req.Body.Close()
		}
		user, _ := req.Context().Value(userKey{}).(string)
		body := userBody(user)
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(strings.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
		return next.RoundTrip(out)
	})
}

// nonce is an attempt middleware that numbers every request it sends in
// an X-Nonce header, probes included.
func nonce() middleware.Middleware {
	var n atomic.Int64
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			out := req.Clone(req.Context())
			out.Header.Set("X-Nonce", fmt.Sprint(n.Add(1)))
			return next.RoundTrip(out)
		})
	}
}

// ownContext is an attempt middleware that sends the request under a
// context of its own, which keeps the user but not the probe's mark.
func ownContext(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		user, _ := req.Context().Value(userKey{}).(string)
		return next.RoundTrip(req.WithContext(context.WithValue(context.Background(), userKey{}, user)))
	})
}

// answersInProbe is an attempt middleware that answers a key probe
// itself, as a cache in front of the source schema might.
func answersInProbe(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if middleware.IsKeyProbe(req.Context()) {
			resp, _ := fakeResponse(req, http.StatusOK, `{"data":{}}`)
			return resp, nil
		}
		return next.RoundTrip(req)
	})
}

// againOnError is an attempt middleware that sends a request once more
// when the rest of the chain fails, as an inner retry might.
func againOnError(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return next.RoundTrip(req.Clone(req.Context()))
		}
		return resp, err
	})
}

// TestDedupeProbeSharing: with attempt middleware inside Dedupe (Token
// where the package doc puts it), Dedupe keys each call on its request as
// that middleware would send it. Two users' calls do not share, one user's
// still do, and a call whose request cannot be known goes alone: its token
// failed (then it fails as its attempt does), or a middleware dropped the
// probe's context, answered the probe itself, or sent twice. Every caller gets the answer to its own request.
func TestDedupeProbeSharing(t *testing.T) {
	token := middleware.Token(userToken)
	tests := []struct {
		name         string
		attempt      []middleware.Middleware
		users        []string
		wantJoins    int  // callers that take part in dedupe
		wantRequests int  // requests that reach the source schema
		wantEarly    int  // callers that fail before the server answers
		ownBody      bool // the source schema gets userBody, not queryBody
	}{
		{"token per user", []middleware.Middleware{token}, []string{"alice", "bob"}, 2, 2, 0, false},
		{"one user's token shares", []middleware.Middleware{token}, []string{"alice", "alice", "alice"}, 3, 1, 0, false},
		{"failed token goes alone", []middleware.Middleware{token}, []string{"alice", noToken}, 1, 1, 1, false},
		{"body per user", []middleware.Middleware{token, bodyPerUser}, []string{"alice", "bob"}, 2, 2, 0, true},
		{"one user's body shares", []middleware.Middleware{token, bodyPerUser}, []string{"alice", "alice"}, 2, 1, 0, true},
		{"a nonce never shares", []middleware.Middleware{token, nonce()}, []string{"alice", "alice"}, 2, 2, 0, false},
		{"a context of its own goes alone", []middleware.Middleware{ownContext, token}, []string{"alice", "alice"}, 0, 2, 0, false},
		{"an answer in the probe goes alone", []middleware.Middleware{token, answersInProbe}, []string{"alice", "alice"}, 0, 2, 0, false},
		{"two requests in the probe go alone", []middleware.Middleware{againOnError, token}, []string{"alice", "alice"}, 0, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t)
			hook, joins := joinCounter()
			rt := middleware.Chain(g.transport(), append([]middleware.Middleware{middleware.DedupeWithProbe(tt.attempt, hook, maxBody)}, tt.attempt...)...)

			out := make(chan result, len(tt.users))
			for i, user := range tt.users {
				ctx := context.WithValue(t.Context(), userKey{}, user)
				start(t, rt, i, newRequest(t, ctx, g.URL+"/graphql", queryBody, true), out)
			}
			for range tt.wantJoins {
				await(t, joins, "a caller to join")
			}
			for range tt.wantRequests {
				await(t, g.arrived, "a request at the server")
			}
			var results []result
			for range tt.wantEarly {
				results = append(results, await(t, out, "a failed caller's result, before the server answers"))
			}
			g.open()
			for len(results) < len(tt.users) {
				results = append(results, await(t, out, "a caller's result"))
			}
			for _, r := range results {
				user := tt.users[r.i]
				body := queryBody
				if tt.ownBody {
					body = userBody(user)
				}
				switch want := echo("/graphql", tokenFor(user), "", body); {
				case user == noToken:
					if r.err == nil || !strings.Contains(r.err.Error(), "Authorization token: no token for this user") {
						t.Errorf("caller %d (%s) got %q, %v; want its token's error", r.i, user, r.body, r.err)
					}
				case r.err != nil || r.body != want:
					t.Errorf("caller %d (%s) got %q, %v; want %q", r.i, user, r.body, r.err, want)
				}
			}
			if got := len(g.received()); got != tt.wantRequests {
				t.Errorf("server saw %d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

// markRecorder is an attempt middleware that records, for each request it
// gets, whether its context is a key probe's, and what the rest of the
// chain returned to it.
type markRecorder struct {
	mu    sync.Mutex
	calls []mark // guarded by mu
}

// mark is one request a markRecorder got.
type mark struct {
	probe bool // IsKeyProbe of its context
	resp  bool // the rest of the chain returned a response
	err   bool // the rest of the chain returned an error
}

func (m *markRecorder) middleware(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		probe := middleware.IsKeyProbe(req.Context())
		resp, err := next.RoundTrip(req)
		m.mu.Lock()
		m.calls = append(m.calls, mark{probe: probe, resp: resp != nil, err: err != nil})
		m.mu.Unlock()
		return resp, err
	})
}

func (m *markRecorder) marks() []mark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mark(nil), m.calls...)
}

// TestIsKeyProbe: an attempt middleware inside Dedupe with a probe runs
// once more per shared-eligible call, before the real attempt, under a
// context that IsKeyProbe reports; that run sends nothing (the server gets
// one request) and gets an error, never a response. The real attempt, a
// call that is never shared (a mutation) and a Dedupe without a probe run
// it under contexts that are not a probe's.
func TestIsKeyProbe(t *testing.T) {
	probe, sent := mark{probe: true, err: true}, mark{resp: true}
	tests := []struct {
		name  string
		probe bool // Dedupe keys through the attempt middleware
		body  string
		want  []mark
	}{
		{"query", true, queryBody, []mark{probe, sent}},
		{"mutation", true, mutationBody, []mark{sent}},
		{"no probe", false, queryBody, []mark{sent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body string) {
				io.WriteString(w, `{"data":{}}`)
			})
			rec := &markRecorder{}
			dedupe := middleware.DedupeWithHook(nil, maxBody)
			if tt.probe {
				dedupe = middleware.DedupeWithProbe([]middleware.Middleware{rec.middleware}, nil, maxBody)
			}
			rt := middleware.Chain(srv.transport(), dedupe, rec.middleware)
			resp, err := rt.RoundTrip(newRequest(t, t.Context(), srv.URL+"/graphql", tt.body, true))
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			if got := rec.marks(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("the attempt middleware saw %+v; want %+v", got, tt.want)
			}
			if got := len(srv.received()); got != 1 {
				t.Errorf("server saw %d requests, want 1", got)
			}
		})
	}
	if middleware.IsKeyProbe(context.Background()) {
		t.Error("IsKeyProbe(context.Background()) = true")
	}
}

// TestKeyProbeThroughPolicies: this package's own policies, put in the
// attempt middleware, take a key probe for what it is, a request that was
// not sent: a breaker that opens on one failure stays closed, a rate
// limit with a turn for each query lets every query through (a probe
// takes none), and the request log has one record per request sent.
func TestKeyProbeThroughPolicies(t *testing.T) {
	const queries = 3
	var opened atomic.Int64
	breaker := middleware.NewBreaker(middleware.BreakerConfig{
		Schema: "products", FailureRatio: 0.01, MinRequests: 1, Window: time.Hour, OpenFor: time.Hour,
		OnStateChange: func(_ context.Context, _, to middleware.BreakerState) {
			if to == middleware.BreakerOpen {
				opened.Add(1)
			}
		},
	})
	limiter := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 1e-6, Burst: queries})
	var log bytes.Buffer // written by the callers' goroutine only: the queries go one after another
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	attempt := []middleware.Middleware{middleware.RequestLog(logger, "products"), breaker.Middleware(), limiter.Middleware(), middleware.Token(userToken)}

	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body string) {
		io.WriteString(w, `{"data":{}}`)
	})
	rt := middleware.Chain(srv.transport(), append([]middleware.Middleware{middleware.DedupeWithProbe(attempt, nil, maxBody)}, attempt...)...)
	ctx := context.WithValue(t.Context(), userKey{}, "alice")
	for i := range queries {
		resp, err := rt.RoundTrip(newRequest(t, ctx, srv.URL+"/graphql", queryBody, true))
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		readBody(t, resp)
	}
	if got := len(srv.received()); got != queries {
		t.Errorf("server saw %d requests, want %d", got, queries)
	}
	if n := opened.Load(); n != 0 {
		t.Errorf("the breaker opened %d times", n)
	}
	if got := strings.Count(log.String(), "source schema request"); got != queries {
		t.Errorf("the request log has %d records, want %d:\n%s", got, queries, log.String())
	}
}
