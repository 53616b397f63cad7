package sockets

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// A schema's connection settings where they act, through the pool the
// request path opens from a configuration, on both engines: reuse, the
// idle timeout (from defaults), the connection limit. Moved from the
// root package's connections_test.go (issue 31), which keeps the legacy
// path's side; the pool's own rules, on pools built directly, are in
// pool_internal_test.go.

// openConfigured opens schema products of cfg (no hook) and checks that
// it runs on engine.
func openConfigured(t *testing.T, engine string, cfg env.Config) *poolTransport {
	t.Helper()
	tr := openSchemaWith(t, cfg, func(*backend.Schema) {})
	ranOn(t, engine, tr)
	return tr
}

// TestSchemaWarmConnectionReused: without a lifetime passing, consecutive
// requests share one connection.
func TestSchemaWarmConnectionReused(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := wiretest.NewServer(t, wiretest.Options{})
		tr := openConfigured(t, engine, engineSchema(engine, srv.SchemaURL(), nil))
		mustPost(t, tr, srv.SchemaURL(), 5)
		if opened := srv.Opened(); len(opened) != 1 {
			t.Errorf("opened %d connections for 5 sequential requests, want 1", len(opened))
		}
	})
}

// TestSchemaIdleConnTimeout: an idle connection is closed after
// defaults.idle_conn_timeout.
func TestSchemaIdleConnTimeout(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := wiretest.NewServer(t, wiretest.Options{})
		cfg := engineSchema(engine, srv.SchemaURL(), nil)
		cfg.Defaults.IdleConnTimeout = 50 * time.Millisecond
		tr := openConfigured(t, engine, cfg)
		mustPost(t, tr, srv.SchemaURL(), 1)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		srv.WaitClosed(t, ctx, srv.Last(t).Remote)
	})
}

// TestSchemaMaxConnsPerHost: with defaults.max_conns_per_host 1, four
// concurrent requests queue for the one connection and never run side by
// side at the source schema (the first is held until the three others
// wait in the pool); without a limit, all four are at the server at once,
// on four connections.
func TestSchemaMaxConnsPerHost(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		for _, limit := range []int{1, env.NoLimit} {
			t.Run("limit="+map[int]string{1: "1", env.NoLimit: "none"}[limit], func(t *testing.T) {
				var now, peak atomic.Int32
				arrived, release := make(chan struct{}, 4), make(chan struct{})
				var releaseOnce sync.Once
				letGo := func() { releaseOnce.Do(func() { close(release) }) }
				srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
					n := now.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					arrived <- struct{}{}
					<-release
					now.Add(-1)
					io.WriteString(w, "{}")
				}})
				cfg := engineSchema(engine, srv.SchemaURL(), nil)
				cfg.Defaults.MaxConnsPerHost = limit
				tr := openConfigured(t, engine, cfg)
				t.Cleanup(letGo) // a failed test lets its held requests end before the pool drains and the server closes
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						if st, err := wirePost(tr, srv.SchemaURL(), "{}"); err != nil || st != http.StatusOK {
							t.Errorf("status %d, %v", st, err)
						}
					})
				}
				atServer := map[int]int{1: 1, env.NoLimit: 4}[limit]
				for range atServer {
					select {
					case <-arrived:
					case <-time.After(testTimeout):
						t.Fatalf("%d requests reached the server at once within %v, want %d", peak.Load(), testTimeout, atServer)
					}
				}
				if limit == 1 {
					waitForWaiters(t, tr.pool, 3)
				}
				letGo()
				wg.Wait()
				conns := len(srv.Opened())
				if limit == 1 && (peak.Load() != 1 || conns != 1) {
					t.Errorf("peak concurrency %d on %d connections, want 1 and 1", peak.Load(), conns)
				}
				if limit == env.NoLimit && (peak.Load() != 4 || conns != 4) {
					t.Errorf("peak concurrency %d on %d connections, want the 4 requests side by side", peak.Load(), conns)
				}
			})
		}
	})
}
