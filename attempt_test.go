package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// tokenCounter is a token source that returns a new token on every call,
// "Bearer t1", "Bearer t2", ..., and counts the calls.
type tokenCounter struct{ n atomic.Int64 }

func (c *tokenCounter) token(context.Context) (string, error) {
	return fmt.Sprintf("Bearer t%d", c.n.Add(1)), nil
}

// callCounter is a middleware that counts the requests that pass it.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) middleware(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		c.n.Add(1)
		return next.RoundTrip(req)
	})
}

// authorizations returns the Authorization header of each request srv
// received, in order.
func authorizations(srv *schemaServer) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, r.Header.Get("Authorization"))
	}
	return out
}

// TestAttemptMiddlewareRetry: with middleware.Token in
// SchemaOptions.AttemptMiddleware, retry max_attempts 3 and a server that
// answers 503 twice then 200, the server sees three different tokens, one
// per attempt, on every path and engine; SchemaOptions.Middleware and
// WithMiddleware still run once for the call.
func TestAttemptMiddlewareRetry(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var seen atomic.Int64
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if seen.Add(1) <= 2 {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			var tokens tokenCounter
			var global, schema callCounter
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
			}), transport.WithMiddleware(global.middleware), transport.WithSchemaOptions("products", transport.SchemaOptions{
				Middleware:        []func(http.RoundTripper) http.RoundTripper{schema.middleware},
				AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{middleware.Token(tokens.token)},
			}))
			if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
				t.Fatalf("Post: %d, %v; want the third attempt's 200", st, err)
			}
			want := []string{"Bearer t1", "Bearer t2", "Bearer t3"}
			if diff := cmp.Diff(want, authorizations(srv)); diff != "" {
				t.Errorf("Authorization per request mismatch (-want +got):\n%s", diff)
			}
			if g, s := global.n.Load(), schema.n.Load(); g != 1 || s != 1 {
				t.Errorf("WithMiddleware ran %d times, SchemaOptions.Middleware %d; want once each for the call", g, s)
			}
		})
	}
}

// TestAttemptMiddlewareHedge: with hedging, the hedge carries its own
// attempt's token, on every path and engine. The server holds the first
// try until the hedge arrives, so that the hedge is always sent.
func TestAttemptMiddlewareHedge(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			hedged := make(chan struct{})
			var seen atomic.Int64
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if seen.Add(1) == 1 {
					select {
					case <-hedged:
					case <-r.Context().Done():
						return
					case <-time.After(resilienceGuard):
					}
				} else {
					close(hedged)
				}
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			var tokens tokenCounter
			var schema callCounter
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: time.Millisecond}, MaxExtra: 1}
			}), transport.WithSchemaOptions("products", transport.SchemaOptions{
				Middleware:        []func(http.RoundTripper) http.RoundTripper{schema.middleware},
				AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{middleware.Token(tokens.token)},
			}))
			if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
				t.Fatalf("Post: %d, %v", st, err)
			}
			select {
			case <-hedged:
			default:
				t.Fatal("the call returned before its hedge reached the server")
			}
			// The first try and its hedge race to the server: either may
			// arrive first, each with its own token.
			want := []string{"Bearer t1", "Bearer t2"}
			if diff := cmp.Diff(want, slices.Sorted(slices.Values(authorizations(srv)))); diff != "" {
				t.Errorf("Authorization per request mismatch (-want +got):\n%s", diff)
			}
			if n := schema.n.Load(); n != 1 {
				t.Errorf("SchemaOptions.Middleware ran %d times; want once for the call", n)
			}
		})
	}
}

// TestAttemptMiddlewareRefusedUnsent: an attempt that the rate limit
// refuses, unsent, never reaches the attempt middleware: Token fetches no
// token for it, on every path and engine.
func TestAttemptMiddlewareRefusedUnsent(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			var tokens tokenCounter
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
				s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.01, Burst: 1, Wait: env.Off}
			}), transport.WithSchemaOptions("products", transport.SchemaOptions{
				AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{middleware.Token(tokens.token)},
			}))
			if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
				t.Fatalf("first Post: %d, %v", st, err)
			}
			if _, err := call(inv, queryBody); !errors.Is(err, fault.ErrRateLimited) {
				t.Fatalf("second Post: %v; want ErrRateLimited", err)
			}
			if diff := cmp.Diff([]string{"Bearer t1"}, authorizations(srv)); diff != "" {
				t.Errorf("Authorization per request mismatch (-want +got):\n%s", diff)
			}
			if n := tokens.n.Load(); n != 1 {
				t.Errorf("the token source was called %d times; want 1 (the refused call fetched none)", n)
			}
		})
	}
}
