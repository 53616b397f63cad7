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

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
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

// TestReloadNeverChangesPath: Reload ignores Config.Path.
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

// TestReloadRemovedSchemaClosesConnections: on the sockets path a
// reload that removes a source schema closes its pool's idle connections.
func TestReloadRemovedSchemaClosesConnections(t *testing.T) {
	a := newSchemaServer(t, nil)
	b := newSchemaServer(t, nil)
	inv := newInvoker(t, config(env.PathSockets, "a", a.URL(), "b", b.URL()))
	post(t, inv, context.Background(), "b")
	warm := b.Last(t).Remote
	if err := inv.Reload(config(env.PathSockets, "a", a.URL())); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	closed := b.WaitClosedN(t, 1, gapGuard, "a reload that removes source schema b drains its pool, whose idle connection closes at once")
	if closed[0] != warm {
		t.Errorf("connection %s closed, want b's warm connection %s", closed[0], warm)
	}
	if _, err := inv.Post(context.Background(), "b", []byte(`{}`)); !errors.Is(err, fault.ErrUnknownSchema) {
		t.Errorf("Post to the removed schema: %v, want ErrUnknownSchema", err)
	}
}

// TestLegacyReloadKeepsTransportOnHeaderTimeout: defaults.header_timeout
// acts per request; a reload that changes only it keeps the legacy path's
// shared transport, so the next request reuses the warm connection and no
// connection closes.
func TestLegacyReloadKeepsTransportOnHeaderTimeout(t *testing.T) {
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	inv := newInvoker(t, cfg)
	post(t, inv, context.Background(), "products")
	warm := srv.Last(t).Remote
	next := config(env.PathLegacy, "products", srv.URL())
	next.Defaults.HeaderTimeout = 30 * time.Second
	if err := inv.Reload(next); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	post(t, inv, context.Background(), "products")
	if got := srv.Last(t).Remote; got != warm {
		t.Errorf("the request after the reload came on %s, want the warm connection %s (opened: %v)", got, warm, srv.Opened())
	}
	if n := len(srv.Opened()); n != 1 {
		t.Errorf("the server saw %d connections, want 1", n)
	}
	select {
	case addr := <-srv.Closed():
		t.Errorf("connection %s closed after a reload that changed only defaults.header_timeout", addr)
	default:
	}
}

// TestReloadMovesWaitingRequest: a request waiting for a connection when a
// reload moves its schema to another URL reaches the new server with the
// new URL's path and Host, never the old request on the new address; a Do
// for another URL of the old server, or a request whose header rules
// changed, fails naming the schema, unsent.
func TestReloadMovesWaitingRequest(t *testing.T) {
	for _, engine := range engines {
		for _, tc := range []struct {
			name    string
			do      string // "": Post; else a Do for this path of the old server
			rules   bool   // the reload changes the header rules too
			wantErr bool
		}{
			{"Post", "", false, false},
			{"Do for the schema URL", "/graphql", false, false},
			{"Do for another path", "/other", false, true},
			{"Post, header rules changed", "", true, true},
			{"Do for another path, under retry", "/other", false, true},
		} {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				hold := make(chan struct{})
				var once sync.Once
				release := func() { once.Do(func() { close(hold) }) }
				held := make(chan struct{}, 1)
				old := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					held <- struct{}{}
					<-hold
				})
				t.Cleanup(release) // before the server closes
				moved := newSchemaServer(t, nil)
				movedURL := moved.Server.URL + "/v2/graphql"
				retried := strings.HasSuffix(tc.name, "under retry")
				cfg := engineConfig(engine, old.URL(), func(s *env.SourceSchema) {
					s.MaxConnsPerHost = 1
					if retried {
						s.Retry.MaxAttempts = 3
					}
				})
				entered := make(chan struct{}, 2)
				signal := func(next http.RoundTripper) http.RoundTripper {
					return roundTripFunc(func(req *http.Request) (*http.Response, error) {
						entered <- struct{}{}
						return next.RoundTrip(req)
					})
				}
				inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
					Middleware: []func(http.RoundTripper) http.RoundTripper{signal},
				}))
				// The one connection is busy...
				busy := postAsync(inv, context.Background(), "products", `{"query":"{ a }"}`)
				<-entered
				<-held
				// ...so this request waits for it (or is about to: either
				// way the old pool is drained under it before it sends).
				waiting := make(chan postResult, 1)
				go func() {
					var resp *http.Response
					var err error
					if tc.do == "" {
						resp, err = inv.Post(context.Background(), "products", []byte(`{"query":"{ b }"}`))
					} else {
						req, _ := http.NewRequest(http.MethodPost, old.Server.URL+tc.do, strings.NewReader(`{"query":"{ b }"}`))
						resp, err = inv.Do(context.Background(), "products", req)
					}
					if err != nil {
						waiting <- postResult{err: err}
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					waiting <- postResult{string(b), err}
				}()
				<-entered
				next := engineConfig(engine, movedURL, func(s *env.SourceSchema) {
					s.MaxConnsPerHost = 1
					if retried {
						s.Retry.MaxAttempts = 3
					}
					if tc.rules {
						s.Headers.Set = map[string]string{"X-New": "1"}
					}
				})
				if err := inv.Reload(next); err != nil {
					t.Fatal(err)
				}
				r := <-waiting
				release()
				<-busy
				if tc.wantErr {
					if r.err == nil || !errors.Is(r.err, fault.ErrReloaded) || !strings.Contains(r.err.Error(), `"products"`) {
						t.Errorf("got %q, %v; want an error naming the schema that wraps ErrReloaded", r.body, r.err)
					}
					if retried && !strings.Contains(r.err.Error(), "after 1 attempt(s)") {
						t.Errorf("retry sent the overtaken request again: %v", r.err)
					}
					if n := len(moved.Requests()); n != 0 {
						t.Errorf("the new server received %d requests, want none", n)
					}
					return
				}
				if r.err != nil {
					t.Fatalf("the moved request: %v", r.err)
				}
				got := moved.Last(t)
				if got.Path != "/v2/graphql" || got.Host != hostOf(movedURL) {
					t.Errorf("the new server got %s with Host %s, want /v2/graphql with Host %s", got.Path, got.Host, hostOf(movedURL))
				}
			})
		}
	}
}

// hostOf returns the host:port of a URL.
func hostOf(u string) string {
	rest := u[strings.Index(u, "://")+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
