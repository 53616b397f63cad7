package sockets

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestBuiltInDefaultsReachTheConnection checks the built-in defaults where
// they act, on a real connection: the dial runs under a 15 s deadline, and
// the pooled connection is given a lifetime of 2 min less at most 10%
// jitter and an idle bound of 90 s. These values are too long to wait for
// in a test; the wire tests in the root package run the same mechanisms
// with short values.
func TestBuiltInDefaultsReachTheConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer srv.Close()
	inv, err := New(env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: srv.URL}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	p := inv.state.Load().schemas["products"].pool

	var dialLeft time.Duration
	dial := p.tr.DialContext
	p.tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if d, ok := ctx.Deadline(); ok {
			dialLeft = time.Until(d)
		}
		return dial(ctx, network, addr)
	}
	started := time.Now()
	resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	if dialLeft <= 14*time.Second || dialLeft > env.DefaultConnectTimeout {
		t.Errorf("dial deadline %v away, want just under %v", dialLeft, env.DefaultConnectTimeout)
	}
	open, idle := p.stats()
	if open != 1 || idle != 1 {
		t.Fatalf("pool has %d connections, %d idle; want 1 and 1", open, idle)
	}
	p.mu.Lock()
	c := p.conns[0]
	p.mu.Unlock()
	life := c.expires.Sub(started)
	if life > env.DefaultConnLifetime || life < env.DefaultConnLifetime*9/10-time.Second {
		t.Errorf("connection lifetime %v, want between 108s and 120s", life)
	}
	if d := c.idleBound(time.Now()); d != env.DefaultIdleConnTimeout {
		t.Errorf("idle bound %v, want %v", d, env.DefaultIdleConnTimeout)
	}
	if h := inv.state.Load().schemas["products"].headerTimeout; h != env.DefaultHeaderTimeout {
		t.Errorf("header timeout %v, want %v", h, env.DefaultHeaderTimeout)
	}
}

// TestJitterSpreadsExpiry: connections dialled together do not all expire
// at the same instant, and none outlives its lifetime.
func TestJitterSpreadsExpiry(t *testing.T) {
	const n = 8
	var arrived sync.WaitGroup
	arrived.Add(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait() // hold every request until all n are in, on n connections
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: srv.URL}}}
	cfg.Defaults.ConnLifetime = time.Minute
	inv, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	started := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	p := inv.state.Load().schemas["products"].pool
	p.mu.Lock()
	defer p.mu.Unlock()
	distinct := map[time.Time]bool{}
	for _, c := range p.conns {
		distinct[c.expires] = true
		if c.expires.Sub(started) > time.Minute+time.Second {
			t.Errorf("expiry %v after start, beyond the lifetime", c.expires.Sub(started))
		}
	}
	if len(p.conns) != n || len(distinct) < n/2 {
		t.Errorf("%d connections with %d distinct expiries", len(p.conns), len(distinct))
	}
}
