package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/middleware"
)

// requestKey marks a request's context, so that a hook shows which
// context it was given.
type requestKey struct{}

// seenContexts keeps the mark of each context a hook was given, by hook.
type seenContexts struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (s *seenContexts) hook(name string) func(context.Context) {
	return func(ctx context.Context) {
		mark, _ := ctx.Value(requestKey{}).(string)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.seen == nil {
			s.seen = map[string][]string{}
		}
		s.seen[name] = append(s.seen[name], mark)
	}
}

func (s *seenContexts) of(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen[name]...)
}

// markedRequest is a query whose context carries mark.
func markedRequest(t *testing.T, mark string) *http.Request {
	t.Helper()
	return newRequest(t, context.WithValue(context.Background(), requestKey{}, mark), "http://products.test/graphql", queryBody, true)
}

func answerWith(status int) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, _ := fakeResponse(req, status, `{"data":{}}`)
		return resp, nil
	})
}

func sendMarked(t *testing.T, rt http.RoundTripper, req *http.Request) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err == nil {
		readBody(t, resp)
	}
}

// TestHooksGetTheRequestContext: every hook of an event that a request
// causes is given that request's context (issue 31: its trace and baggage
// reach the metrics); a breaker's change that State makes has none.
func TestHooksGetTheRequestContext(t *testing.T) {
	t.Run("breaker", func(t *testing.T) {
		var s seenContexts
		b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 1, FailureRatio: 1, OpenFor: time.Millisecond,
			OnStateChange: func(ctx context.Context, _, to middleware.BreakerState) { s.hook(to.String())(ctx) }})
		sendMarked(t, b.Middleware()(answerWith(http.StatusServiceUnavailable)), markedRequest(t, "failed"))
		time.Sleep(5 * time.Millisecond)
		if st := b.State(); st != middleware.BreakerHalfOpen {
			t.Fatalf("state %s, want half_open", st)
		}
		sendMarked(t, b.Middleware()(answerWith(http.StatusOK)), markedRequest(t, "trial"))
		for name, want := range map[string]string{"open": "failed", "half_open": "", "closed": "trial"} {
			if got := s.of(name); len(got) != 1 || got[0] != want {
				t.Errorf("OnStateChange to %s got contexts %q, want [%q]", name, got, want)
			}
		}
	})
	t.Run("retry budget", func(t *testing.T) {
		var s seenContexts
		budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.01, MinPerSecond: -1,
			OnExhausted: func(ctx context.Context, _ bool) { s.hook("exhausted")(ctx) }})
		rt := middleware.Retry(middleware.RetryConfig{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Budget: budget})(answerWith(http.StatusServiceUnavailable))
		sendMarked(t, rt, markedRequest(t, "retried"))
		if got := s.of("exhausted"); len(got) != 1 || got[0] != "retried" {
			t.Errorf("OnExhausted got contexts %q, want [retried]", got)
		}
	})
	t.Run("compression", func(t *testing.T) {
		var s seenContexts
		rt := middleware.Compress(middleware.CompressConfig{Codec: middleware.CodecGzip, MinBytes: 1,
			OnCompressed: func(ctx context.Context, _, _ int) { s.hook("compressed")(ctx) }})(answerWith(http.StatusOK))
		body := `{"query":"query { products { name } }","variables":{"pad":"` + strings.Repeat("a", 4096) + `"}}`
		sendMarked(t, rt, newRequest(t, context.WithValue(context.Background(), requestKey{}, "compressed"), "http://products.test/graphql", body, true))
		if got := s.of("compressed"); len(got) != 1 || got[0] != "compressed" {
			t.Errorf("OnCompressed got contexts %q, want [compressed]", got)
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		var s seenContexts
		l := middleware.NewRateLimiter(middleware.RateLimitConfig{RequestsPerSecond: 0.001, Burst: 1, OnLimited: s.hook("config")})
		rt := l.Observed(s.hook("observed"))(answerWith(http.StatusOK))
		sendMarked(t, rt, markedRequest(t, "first"))
		sendMarked(t, rt, markedRequest(t, "refused"))
		for _, name := range []string{"config", "observed"} {
			if got := s.of(name); len(got) != 1 || got[0] != "refused" {
				t.Errorf("%s hook got contexts %q, want [refused]", name, got)
			}
		}
	})
	t.Run("hedge", func(t *testing.T) {
		var s seenContexts
		next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			// The first attempt is late, whenever it arrives: the hedge
			// wins, and both hooks fire before the caller's return.
			if !middleware.IsHedge(req.Context()) {
				select {
				case <-req.Context().Done():
				case <-time.After(guard):
				}
			}
			resp, _ := fakeResponse(req, http.StatusOK, `{"data":{}}`)
			return resp, nil
		})
		rt := middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1, OnSent: s.hook("sent"), OnWon: s.hook("won")})(next)
		sendMarked(t, rt, markedRequest(t, "hedged"))
		for _, name := range []string{"sent", "won"} {
			if got := s.of(name); len(got) != 1 || got[0] != "hedged" {
				t.Errorf("On%s got contexts %q, want [hedged]", name, got)
			}
		}
	})
}
