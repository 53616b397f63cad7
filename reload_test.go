package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

func withLifetime(cfg env.Config, name string, d time.Duration) env.Config {
	out := cfg
	out.SourceSchemas = map[string]env.SourceSchema{}
	for k, v := range cfg.SourceSchemas {
		out.SourceSchemas[k] = v
	}
	s := out.SourceSchemas[name]
	s.ConnLifetime = d
	out.SourceSchemas[name] = s
	return out
}

// TestSocketsReloadKeepsUnchangedSchemas: a reload that changes one
// setting of one schema keeps the other's warm connection (same client
// port at the server), gives the changed one a new connection, and closes
// the replaced one at once.
func TestSocketsReloadKeepsUnchangedSchemas(t *testing.T) {
	products := newSchemaServer(t, nil)
	reviews := newSchemaServer(t, nil)
	cfg := config(env.PathSockets, "products", products.URL(), "reviews", reviews.URL())
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	post(t, inv, context.Background(), "reviews")
	productsConn, reviewsConn := products.Last(t).Remote, reviews.Last(t).Remote

	if err := inv.Reload(withLifetime(cfg, "products", 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	products.WaitClosed(t, ctx, productsConn) // drained and idle: closed at once

	post(t, inv, context.Background(), "products")
	post(t, inv, context.Background(), "reviews")
	if got := reviews.Last(t).Remote; got != reviewsConn {
		t.Errorf("reviews moved from %s to %s: its warm connection was not kept", reviewsConn, got)
	}
	if got := products.Last(t).Remote; got == productsConn {
		t.Errorf("products kept connection %s although its settings changed", got)
	}
}

// TestReloadHeaderListKeepsConnection: changing forwarded headers or the
// URL's path is not a transport change.
func TestReloadHeaderListKeepsConnection(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathSockets, "products", srv.URL())
	inv := newInvoker(t, cfg)
	post(t, inv, gatewayCtx("X-Tenant", "acme"), "products")
	first := srv.Last(t)
	next := config(env.PathSockets, "products", srv.Server.URL+"/v2/graphql")
	next.ForwardHeaders = []string{"X-Tenant"}
	if err := inv.Reload(next); err != nil {
		t.Fatal(err)
	}
	post(t, inv, gatewayCtx("X-Tenant", "acme"), "products")
	got := srv.Last(t)
	if got.Remote != first.Remote || got.Path != "/v2/graphql" || got.Header.Get("X-Tenant") != "acme" {
		t.Errorf("after reload: conn %s (was %s), path %s, X-Tenant %q", got.Remote, first.Remote, got.Path, got.Header.Get("X-Tenant"))
	}
}

// TestReloadDrainsInFlight: a request in flight on a replaced transport
// completes, body included, and its connection closes after it.
func TestReloadDrainsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			close(arrived)
			<-release
		}
		io.WriteString(w, `{"data":{}}`)
	})
	cfg := config(env.PathSockets, "products", srv.URL())
	cfg.ForwardHeaders = []string{"X-Slow"}
	inv := newInvoker(t, cfg)
	done := postAsync(inv, gatewayCtx("X-Slow", "1"), "products", `{}`)
	<-arrived
	slowConn := srv.Last(t).Remote
	if err := inv.Reload(withLifetime(cfg, "products", time.Minute)); err != nil {
		t.Fatal(err)
	}
	close(release)
	if r := <-done; r.err != nil || r.body != `{"data":{}}` {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.WaitClosed(t, ctx, slowConn)
}

// TestReloadRemovesSchema and rejects invalid configurations on both
// paths, keeping the old one in force.
func TestReloadRemoveAndReject(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			products := newSchemaServer(t, nil)
			reviews := newSchemaServer(t, nil)
			cfg := config(path, "products", products.URL(), "reviews", reviews.URL())
			inv := newInvoker(t, cfg)
			post(t, inv, context.Background(), "products")
			warm := products.Last(t).Remote

			bad := config(path, "products", "not a url", "reviews", reviews.URL())
			err := inv.Reload(bad)
			if err == nil || !strings.Contains(err.Error(), "source_schemas.products.url") || !strings.Contains(err.Error(), "old configuration kept") {
				t.Fatalf("Reload(bad) = %v", err)
			}
			post(t, inv, context.Background(), "products")
			if got := products.Last(t).Remote; got != warm {
				t.Errorf("after a rejected reload the connection changed from %s to %s", warm, got)
			}

			if err := inv.Reload(config(path, "products", products.URL())); err != nil {
				t.Fatal(err)
			}
			if _, err := inv.Post(context.Background(), "reviews", nil); err == nil || !strings.Contains(err.Error(), `source schema "reviews"`) {
				t.Errorf("removed schema: %v", err)
			}
		})
	}
}

// TestReloadNeverChangesPath: Reload ignores Config.Transport.
func TestReloadNeverChangesPath(t *testing.T) {
	other := newSchemaServer(t, nil)
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL(), http.StatusFound)
	})
	inv := newInvoker(t, config(env.PathLegacy, "products", srv.URL()))
	if err := inv.Reload(config(env.PathSockets, "products", srv.URL())); err != nil {
		t.Fatal(err)
	}
	resp, _ := post(t, inv, context.Background(), "products")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d: the invoker switched to the sockets path on reload", resp.StatusCode)
	}
}

// TestLegacyHandlerRotation: the legacy path replaces its shared transport
// after handler_lifetime; the next request opens a new connection and the
// old transport's idle connection is closed.
func TestLegacyHandlerRotation(t *testing.T) {
	const lifetime = 50 * time.Millisecond
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	cfg.Legacy.HandlerLifetime = lifetime
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	first := srv.Last(t).Remote
	<-time.After(2 * lifetime) // let the handler lifetime pass
	post(t, inv, context.Background(), "products")
	if srv.Last(t).Remote == first {
		t.Fatal("the request after the handler lifetime reused the old transport's connection")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.WaitClosed(t, ctx, first)
}

// TestLegacyReloadRotatesOnlyOnTransportChange.
func TestLegacyReloadRotatesOnlyOnTransportChange(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	first := srv.Last(t).Remote

	same := config(env.PathLegacy, "products", srv.URL())
	same.ForwardHeaders = []string{"X-Tenant"}
	if err := inv.Reload(same); err != nil {
		t.Fatal(err)
	}
	post(t, inv, context.Background(), "products")
	if got := srv.Last(t).Remote; got != first {
		t.Errorf("a header-only reload replaced the shared transport (%s -> %s)", first, got)
	}

	changed := same
	changed.Defaults.IdleConnTimeout = time.Minute
	if err := inv.Reload(changed); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.WaitClosed(t, ctx, first)
	post(t, inv, context.Background(), "products")
	if got := srv.Last(t).Remote; got == first {
		t.Error("a transport settings reload kept the old connection")
	}
}

// TestReloadUnderLoad: requests running while the configuration is
// reloaded over and over never fail because of it.
func TestReloadUnderLoad(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			cfg := config(path, "products", srv.URL())
			inv := newInvoker(t, cfg)
			var wg sync.WaitGroup
			errs := make(chan error, 1000)
			stop := make(chan struct{})
			for range 8 {
				wg.Go(func() {
					for i := 0; i < 200; i++ {
						select {
						case <-stop:
							return
						default:
						}
						resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
						if err != nil {
							errs <- err
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
			for i := range 40 {
				if err := inv.Reload(withLifetime(cfg, "products", time.Duration(i+1)*time.Minute)); err != nil {
					t.Error(err)
				}
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("request failed during reloads: %v", err)
				}
			}
		})
	}
}
