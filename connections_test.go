package transport_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// The legacy path's connections: reuse, the idle timeout, the connection
// limit, through its shared net/http transport. The sockets path's
// (issue 31) are tested beside its pool, on both engines, in
// internal/sockets: connections_internal_test.go for these settings from a
// configuration, pool_internal_test.go for the pool's own rules
// (conn_lifetime, maxIdle, the waiters' order, drain).

// TestWarmConnectionReused: consecutive requests share one connection.
func TestWarmConnectionReused(t *testing.T) {
	srv := newSchemaServer(t, nil)
	inv := newInvoker(t, config(env.PathLegacy, "products", srv.URL()))
	for range 5 {
		post(t, inv, context.Background(), "products")
	}
	if opened := srv.Opened(); len(opened) != 1 {
		t.Errorf("opened %d connections for 5 sequential requests, want 1", len(opened))
	}
}

// TestIdleConnTimeout: an idle connection is closed after idle_conn_timeout.
func TestIdleConnTimeout(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	cfg.Defaults.IdleConnTimeout = 50 * time.Millisecond
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.WaitClosed(t, ctx, srv.Last(t).Remote)
}

// TestMaxConnsPerHost: with a limit of 1, concurrent requests queue for the
// one connection and never run side by side at the source schema; without
// a limit they do.
func TestMaxConnsPerHost(t *testing.T) {
	for _, path := range []env.Path{env.PathLegacy} {
		for _, limit := range []int{1, env.NoLimit} {
			t.Run(string(path)+"/limit="+map[int]string{1: "1", env.NoLimit: "none"}[limit], func(t *testing.T) {
				var now, peak atomic.Int32
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					n := now.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					<-time.After(30 * time.Millisecond) // hold the connection so requests overlap
					now.Add(-1)
					io.WriteString(w, "{}")
				})
				cfg := config(path, "products", srv.URL())
				cfg.Defaults.MaxConnsPerHost = limit
				inv := newInvoker(t, cfg)
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() { post(t, inv, context.Background(), "products") })
				}
				wg.Wait()
				conns := len(srv.Opened())
				if limit == 1 && (peak.Load() != 1 || conns != 1) {
					t.Errorf("peak concurrency %d on %d connections, want 1 and 1", peak.Load(), conns)
				}
				if limit == env.NoLimit && (peak.Load() < 2 || conns < 2) {
					t.Errorf("peak concurrency %d on %d connections, want requests side by side", peak.Load(), conns)
				}
			})
		}
	}
}
