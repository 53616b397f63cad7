package middleware_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/middleware"
)

// TestUpgradeGoesAlone: a query that asks for a protocol upgrade is never
// shared by Dedupe nor hedged by Hedge: each caller's request reaches the
// transport, and each gets the 101's connection itself as its body. The
// transport holds each 101 until a second request comes or 100ms pass,
// so that a sharing or a hedge has its chance; two callers ask at once.
func TestUpgradeGoesAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		mw   middleware.Middleware
	}{
		{"dedupe", middleware.Dedupe()},
		{"hedge", middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const callers = 2
			var mu sync.Mutex
			calls := 0
			all := make(chan struct{})
			conns := map[net.Conn]bool{}
			rt := tc.mw(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				calls++
				if calls == callers {
					close(all)
				}
				c, peer := net.Pipe()
				t.Cleanup(func() { c.Close(); peer.Close() })
				conns[c] = true
				mu.Unlock()
				hold := time.NewTimer(100 * time.Millisecond)
				defer hold.Stop()
				select {
				case <-all:
				case <-hold.C:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
				resp, _ := fakeResponse(req, http.StatusSwitchingProtocols, "")
				resp.Body = c
				return resp, nil
			}))
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			bodies := make(chan any, callers)
			for range callers {
				go func() {
					req := newRequest(t, ctx, "http://products.test/graphql", queryBody, true)
					req.Header.Set("Connection", "Upgrade")
					req.Header.Set("Upgrade", "websocket")
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Errorf("upgrade: %v", err)
						bodies <- nil
						return
					}
					bodies <- resp.Body
				}()
			}
			got := map[any]bool{}
			for range callers {
				got[await(t, bodies, "a caller's upgrade")] = true
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != callers {
				t.Errorf("the transport got %d requests for %d callers, want one each", calls, callers)
			}
			for b := range got {
				c, ok := b.(net.Conn)
				if !ok || !conns[c] {
					t.Errorf("a caller got a %T, want the 101's connection itself", b)
				}
			}
		})
	}
}
