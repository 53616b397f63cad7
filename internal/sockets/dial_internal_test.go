package sockets

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
)

// gatedDial is a Dial hook that counts its dials and holds each until
// proceed is closed, announcing it on entered.
type gatedDial struct {
	n       atomic.Int32
	entered chan struct{}
	proceed chan struct{}
}

func newGatedDial() *gatedDial {
	return &gatedDial{entered: make(chan struct{}, 8), proceed: make(chan struct{})}
}

func (d *gatedDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	d.entered <- struct{}{}
	select {
	case <-d.proceed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// openWithDial opens schema products of cfg with dial as its Dial hook,
// as the request path does, and drains it when the test ends.
func openWithDial(t *testing.T, cfg env.Config, dial func(context.Context, string, string) (net.Conn, error)) *poolTransport {
	t.Helper()
	settings, _ := cfg.Effective("products")
	u, err := url.Parse(cfg.SourceSchemas["products"].URL)
	if err != nil {
		t.Fatal(err)
	}
	s := &backend.Schema{Name: "products", URL: u, Settings: settings, Config: &cfg, LookupEnv: func(string) (string, bool) { return "", false },
		Log: slog.New(slog.DiscardHandler), Options: backend.SchemaOptions{Dial: dial}}
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

// call sends one request marked X-Call: name through tr.
func call(ctx context.Context, tr *poolTransport, srvURL, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srvURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Call", name)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// TestDialOutlivesCaller: a dial belongs to the pool, not to the request
// that started it. A caller whose context ends while its dial is held
// fails at once with its context's error; the dial goes on, and its
// connection serves the request that waited behind it (at
// max_conns_per_host 1), or, with nobody waiting, goes idle and serves the
// next request: the server sees one connection, the second caller's
// request on it, and the pool dials once.
func TestDialOutlivesCaller(t *testing.T) {
	for _, waiter := range []bool{true, false} {
		t.Run(map[bool]string{true: "next waiter", false: "idle"}[waiter], func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) {
				var mu sync.Mutex
				var calls []string
				srv := newPoolServer(t, func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					calls = append(calls, r.Header.Get("X-Call")+"@"+r.RemoteAddr)
					mu.Unlock()
					io.WriteString(w, "ok")
				}, nil)
				d := newGatedDial()
				tr := openWithDial(t, engineSchema(engine, srv.URL, func(s *env.SourceSchema) {
					s.MaxConnsPerHost = 1
					if !waiter {
						s.MaxConnsPerHost = 0 // the next request would dial its own if nothing were idle
					}
				}), d.dial)
				ranOn(t, engine, tr)
				p := tr.pool

				ctx, cancel := context.WithCancel(context.Background())
				first := make(chan error, 1)
				go func() { first <- call(ctx, tr, srv.URL, "first") }()
				select {
				case <-d.entered:
				case <-time.After(testTimeout):
					t.Fatal("the first request did not dial")
				}
				second := make(chan error, 1)
				if waiter {
					go func() { second <- call(context.Background(), tr, srv.URL, "second") }()
					waitForWaiter(t, p)
				}
				cancel()
				select {
				case err := <-first:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("first request: %v, want context.Canceled", err)
					}
				case <-time.After(testTimeout):
					t.Fatal("the cancelled request waited for its dial")
				}
				close(d.proceed)
				if !waiter {
					// Nobody waits: the connection goes idle.
					deadline := time.Now().Add(testTimeout)
					for open, idle := p.stats(); open != 1 || idle != 1; open, idle = p.stats() {
						if time.Now().After(deadline) {
							t.Fatalf("after the dial: %d open, %d idle; want the new connection idle", open, idle)
						}
						runtime.Gosched()
					}
					go func() { second <- call(context.Background(), tr, srv.URL, "second") }()
				}
				select {
				case err := <-second:
					if err != nil {
						t.Fatalf("second request: %v", err)
					}
				case <-time.After(testTimeout):
					t.Fatal("the second request was not served by the abandoned dial's connection")
				}
				opened, _ := srv.counts()
				mu.Lock()
				got := slices.Clone(calls)
				mu.Unlock()
				if n := d.n.Load(); n != 1 || len(opened) != 1 || len(got) != 1 || got[0] != "second@"+opened[0] {
					t.Errorf("%d dials, server connections %v, requests %v; want one dial, one connection, the second request on it", n, opened, got)
				}
			})
		})
	}
}

// TestDrainEndsAbandonedDial: a dial whose caller gave up ends when the
// pool drains (its context is the pool's), so no goroutine outlives the
// pool, and no connection stays open.
func TestDrainEndsAbandonedDial(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := newPoolServer(t, nil, nil)
		d := newGatedDial()
		ended := make(chan error, 1)
		tr := openWithDial(t, engineSchema(engine, srv.URL, nil), func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.dial(ctx, network, addr)
			ended <- err
			return c, err
		})
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { first <- call(ctx, tr, srv.URL, "first") }()
		<-d.entered
		cancel()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Fatalf("first request: %v, want context.Canceled", err)
		}
		tr.Drain()
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the dial ended with %v, want context.Canceled", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("drain did not end the dial")
		}
		if open, _ := tr.Conns(); open != 0 {
			t.Errorf("%d connections open after drain", open)
		}
	})
}
