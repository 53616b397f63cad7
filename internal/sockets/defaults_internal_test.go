package sockets

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
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
	tr := openTransport(t, env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: srv.URL}}}, "products")
	p := tr.pool

	if p.h1 == nil {
		t.Fatal("the built-in engine for an http schema is not h1")
	}
	var dialLeft time.Duration
	dial := p.h1.dial
	p.h1.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if d, ok := ctx.Deadline(); ok {
			dialLeft = time.Until(d)
		}
		return dial(ctx, network, addr)
	}
	started := time.Now()
	resp, err := post(tr, srv.URL)
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
	tr := openTransport(t, cfg, "products")
	started := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := post(tr, srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	p := tr.pool
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

// openTransport opens the sockets transport of source schema name in cfg,
// as the request path does, and drains it when the test ends.
func openTransport(t *testing.T, cfg env.Config, name string) *poolTransport {
	t.Helper()
	settings, _ := cfg.Effective(name)
	u, err := url.Parse(cfg.SourceSchemas[name].URL)
	if err != nil {
		t.Fatal(err)
	}
	s := &backend.Schema{Name: name, URL: u, Settings: settings, Config: &cfg, LookupEnv: os.LookupEnv, Log: slog.Default()}
	k, err := Backend{}.Key(s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Backend{}.Open(s, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Drain)
	return tr.(*poolTransport)
}

// post sends an empty JSON POST to u on tr.
func post(tr http.RoundTripper, u string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	return tr.RoundTrip(req)
}

// TestIgnored: the sockets path names legacy.handler_lifetime as ignored
// only when a configuration sets it to other than the built-in value,
// which env.Load writes into every configuration it loads.
func TestIgnored(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("source_schemas:\n  p:\n    url: http://p/graphql\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := env.Loader{}.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	set := loaded
	set.Legacy.HandlerLifetime = time.Minute
	for _, tt := range []struct {
		name string
		cfg  env.Config
		want []string
	}{
		{"nothing set", env.Config{}, nil},
		{"loaded from a file that sets nothing", loaded, nil},
		{"handler_lifetime set", set, []string{"legacy.handler_lifetime"}},
	} {
		if got := (Backend{}).Ignored(&tt.cfg); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Ignored = %v, want %v", tt.name, got, tt.want)
		}
	}
}
