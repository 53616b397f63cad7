package transport_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
)

// TestPostFuncAttemptMiddlewareKeeps: an AttemptMiddleware may keep the
// request and the response it saw past its return (to log them later,
// say); PostFunc then does not reuse their memory for another call, on any
// path: after a run of calls, each kept request is still a Post and each
// kept response still carries its own call's answer.
func TestPostFuncAttemptMiddlewareKeeps(t *testing.T) {
	// seen is one attempt as the middleware kept it, and what it read of
	// the answer at the time.
	type seen struct {
		req  *http.Request
		resp *http.Response
		echo string // X-Echo as the attempt returned, copied
	}
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			var mu sync.Mutex
			var kept []seen // guarded by mu
			keep := func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := next.RoundTrip(req)
					if err == nil {
						mu.Lock()
						kept = append(kept, seen{req, resp, strings.Clone(resp.Header.Get("X-Echo"))})
						mu.Unlock()
					}
					return resp, err
				})
			}
			inv := newInvoker(t, config(path, "products", srv.URL()), transport.WithSchemaOptions("products", transport.SchemaOptions{
				AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{keep},
			}))
			const calls = 20
			for i := range calls {
				id := fmt.Sprintf("kept%d", i)
				if err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id)); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(kept) != calls {
				t.Fatalf("the middleware saw %d attempts, want %d", len(kept), calls)
			}
			for i, k := range kept {
				id := fmt.Sprintf("kept%d", i)
				if k.echo != id {
					t.Errorf("attempt %d returned X-Echo %q, want %q", i, k.echo, id)
				}
				if got := k.resp.Header.Get("X-Echo"); got != id || k.resp.StatusCode != http.StatusOK {
					t.Errorf("kept response %d after the run: %d, X-Echo %q; want 200, %q (its memory served another call)", i, k.resp.StatusCode, got, id)
				}
				if k.req.Method != http.MethodPost || k.req.URL == nil || k.req.URL.String() != srv.URL() {
					t.Errorf("kept request %d after the run: %q %v; want POST %s (its memory served another call)", i, k.req.Method, k.req.URL, srv.URL())
				}
			}
		})
	}
}
