package transport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The SchemaOptions hooks Dial and VerifyConnection on every path,
// the legacy path's shared transport included: what the source schema
// received, and what the caller got.

// errPinned is the error of a VerifyConnection that refuses every
// connection, as a certificate pin that does not match.
var errPinned = errors.New("test pin: certificate refused")

// verifyCounter is a VerifyConnection hook that counts its calls and
// refuses each connection when refuse is set.
type verifyCounter struct {
	refuse bool
	calls  atomic.Int64
}

func (v *verifyCounter) verify(cs tls.ConnectionState) error {
	v.calls.Add(1)
	if len(cs.PeerCertificates) == 0 {
		return errors.New("test pin: no peer certificate")
	}
	if v.refuse {
		return errPinned
	}
	return nil
}

// Variables of the child process runTrusted starts: the PEM files of its
// TLS servers' certificate and key.
const (
	trustedCertEnv = "FUSION_TEST_TRUSTED_CERT"
	trustedKeyEnv  = "FUSION_TEST_TRUSTED_KEY"
)

// runTrusted runs f in a process whose system roots trust the
// certificate of the TLS servers it starts (tlsServer): the legacy path
// verifies with the system's roots and reads no tls.* key, so a test of a
// TLS hook on it needs a certificate the system trusts, and the roots are
// read once per process, from SSL_CERT_FILE when it is set. In the test
// process runTrusted runs the calling test again in a child process with
// SSL_CERT_FILE set to a test CA, and fails if the child fails; in that
// child it runs f.
func runTrusted(t *testing.T, f func(t *testing.T, cert tls.Certificate)) {
	t.Helper()
	if certFile := os.Getenv(trustedCertEnv); certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, os.Getenv(trustedKeyEnv))
		if err != nil {
			t.Fatal(err)
		}
		f(t, cert)
		return
	}
	pki := testpki.New(t, "")
	certFile, keyFile := pki.ServerFiles(t, "127.0.0.1", "localhost")
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+pki.CAFile, trustedCertEnv+"="+certFile, trustedKeyEnv+"="+keyFile)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("the test in a process that trusts the test CA: %v\n%s", err, out)
	}
}

// tlsServer starts a recording TLS source schema with cert, speaking
// HTTP/1.1.
func tlsServer(t *testing.T, cert tls.Certificate, h http.HandlerFunc) *schemaServer {
	t.Helper()
	return newWireServer(t, wiretest.Options{Handler: h, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
}

// pathConfig is config(path, ...) for an https source schema: engine h1
// serves https only with http_version 1.1 (onEngine).
func pathConfig(path env.Path, nameURL ...string) env.Config {
	cfg := config(path, nameURL...)
	if path == pathH1 {
		cfg.Defaults.HTTPVersion = "1.1"
	}
	return cfg
}

// TestVerifyConnectionEveryPath: on every path, the default legacy one
// included, a VerifyConnection that refuses fails the call with its error
// before anything is sent; one that accepts sees the server's certificate
// and lets the call through.
func TestVerifyConnectionEveryPath(t *testing.T) {
	runTrusted(t, func(t *testing.T, cert tls.Certificate) {
		for _, path := range paths {
			for _, refuse := range []bool{true, false} {
				t.Run(string(path)+"/refuse="+yesNo(refuse), func(t *testing.T) {
					srv := tlsServer(t, cert, nil)
					v := &verifyCounter{refuse: refuse}
					inv := newInvoker(t, pathConfig(path, "products", srv.URL()),
						transport.WithSchemaOptions("products", transport.SchemaOptions{VerifyConnection: v.verify}))
					resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
					if refuse {
						if err == nil {
							readAll(t, resp)
							t.Fatalf("the call went through a refused connection: %d", resp.StatusCode)
						}
						if !errors.Is(err, errPinned) {
							t.Errorf("error %v, want VerifyConnection's", err)
						}
						if n := len(srv.Requests()); n != 0 {
							t.Errorf("the source schema got %d requests through a refused connection", n)
						}
					} else {
						if err != nil {
							t.Fatalf("Post: %v", err)
						}
						readAll(t, resp)
						if n := len(srv.Requests()); n != 1 {
							t.Errorf("the source schema got %d requests, want 1", n)
						}
					}
					if v.calls.Load() == 0 {
						t.Error("VerifyConnection was not called")
					}
				})
			}
		}
	})
}

// TestLegacyVerifyConnectionByHost: the legacy path's shared transport
// verifies each TLS connection to a schema's host and port with that
// schema's VerifyConnection, whichever request opens it: a redirect from
// another schema to the pinned host is refused there, unsent, while a
// redirect to another port of the same host goes through; and a reload
// that moves the schema moves the pin with it.
func TestLegacyVerifyConnectionByHost(t *testing.T) {
	runTrusted(t, func(t *testing.T, cert tls.Certificate) {
		pinned := tlsServer(t, cert, nil)
		other := tlsServer(t, cert, nil)
		var target atomic.Pointer[string]
		web := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, *target.Load(), http.StatusTemporaryRedirect)
		})
		v := &verifyCounter{refuse: true}
		cfg := config(env.PathLegacy, "products", pinned.URL(), "web", web.URL())
		inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{VerifyConnection: v.verify}))
		redirect := func(to string) (*http.Response, error) {
			target.Store(&to)
			return inv.Post(context.Background(), "web", []byte(`{"query":"{ ok }"}`))
		}

		if _, err := redirect(pinned.URL()); !errors.Is(err, errPinned) {
			t.Errorf("redirect from web to products' host: %v, want products' VerifyConnection error", err)
		}
		if n := len(pinned.Requests()); n != 0 {
			t.Errorf("the pinned host got %d requests", n)
		}
		resp, err := redirect(other.URL())
		if err != nil {
			t.Fatalf("redirect from web to another port of the same host: %v, want it through", err)
		}
		readAll(t, resp)
		if n := len(other.Requests()); n != 1 {
			t.Errorf("the other host got %d requests, want 1", n)
		}

		// The reload moves products to the other server: the pin follows it.
		cfg = config(env.PathLegacy, "products", other.URL(), "web", web.URL())
		if err := inv.Reload(cfg); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		if resp, err := redirect(pinned.URL()); err != nil {
			t.Errorf("redirect to the old host after the reload: %v, want it through", err)
		} else if readAll(t, resp); len(pinned.Requests()) != 1 {
			t.Errorf("the old host got %d requests, want 1", len(pinned.Requests()))
		}
		// The shared transport has a connection to the other server that
		// no pin verified: products' requests must not take it.
		if _, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`)); !errors.Is(err, errPinned) {
			t.Errorf("products after the reload: %v, want its VerifyConnection's error", err)
		}
		if n := len(other.Requests()); n != 1 {
			t.Errorf("the newly pinned host got %d requests, want the 1 from before the reload", n)
		}
	})
}

// TestCanaryVerifyConnectionBothSides: under a canary, a source schema's
// VerifyConnection holds on both its sides: the sockets side refuses the
// connection, the query is sent again on legacy, which refuses it too;
// the caller gets the pin's error and the source schema nothing.
func TestCanaryVerifyConnectionBothSides(t *testing.T) {
	runTrusted(t, func(t *testing.T, cert tls.Certificate) {
		for _, refuse := range []bool{true, false} {
			t.Run("refuse="+yesNo(refuse), func(t *testing.T) {
				srv := tlsServer(t, cert, nil)
				v := &verifyCounter{refuse: refuse}
				inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL()),
					transport.WithSchemaOptions("products", transport.SchemaOptions{VerifyConnection: v.verify}))
				resp, err := inv.Post(gatewayCtx(), "products", []byte(`{"query":"{ ok }"}`))
				if !refuse {
					if err != nil {
						t.Fatalf("Post: %v", err)
					}
					readAll(t, resp)
					if legacy, sockets := countPaths(srv); legacy != 0 || sockets != 1 {
						t.Errorf("the server saw %d by legacy, %d by sockets; want the sockets side's", legacy, sockets)
					}
					return
				}
				if !errors.Is(err, errPinned) {
					t.Fatalf("Post: %v, want VerifyConnection's error", err)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Errorf("the source schema got %d requests", n)
				}
				if got := canaryState(t, inv).Schemas["products"]; got.Legacy.Requests == 0 || got.Sockets.Requests == 0 {
					t.Errorf("canary state %+v, want both sides tried", got)
				}
				if n := v.calls.Load(); n < 2 {
					t.Errorf("VerifyConnection called %d times, want once per side at least", n)
				}
			})
		}
	})
}

// TestDialEveryPath: on every path a Dial hook opens the source schema's
// connections, over http and (in the trusted child) https: it is asked
// for the URL's host and port, and decides where the connection goes.
func TestDialEveryPath(t *testing.T) {
	check := func(t *testing.T, path env.Path, srv *schemaServer, scheme string) {
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		name := net.JoinHostPort("products.internal", port)
		dr := &wiretest.DialRecorder{To: srv.Listener.Addr().String()}
		inv := newInvoker(t, pathConfig(path, "products", scheme+"://"+name+"/graphql"),
			transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dr.Dial}))
		for range 2 {
			post(t, inv, context.Background(), "products")
		}
		if got := dr.Addrs(); !slices.Equal(got, []string{"tcp " + name}) {
			t.Errorf("the hook dialled %q, want %q once", got, "tcp "+name)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("the source schema got %d requests, want 2", n)
		}
	}
	for _, path := range paths {
		t.Run(string(path)+"/http", func(t *testing.T) { check(t, path, newSchemaServer(t, nil), "http") })
	}
	t.Run("https", func(t *testing.T) {
		runTrusted(t, func(t *testing.T, cert tls.Certificate) {
			for _, path := range paths {
				t.Run(string(path), func(t *testing.T) {
					// The certificate holds localhost, not the name the
					// hook resolves: the TLS server name is the URL's.
					srv := tlsServer(t, cert, nil)
					_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
					dr := &wiretest.DialRecorder{}
					inv := newInvoker(t, pathConfig(path, "products", "https://localhost:"+port+"/graphql"),
						transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dr.Dial}))
					post(t, inv, context.Background(), "products")
					if got := dr.Addrs(); len(got) != 1 || got[0] != "tcp localhost:"+port {
						t.Errorf("the hook dialled %q, want localhost:%s once", got, port)
					}
					if n := len(srv.Requests()); n != 1 {
						t.Errorf("the source schema got %d requests, want 1", n)
					}
				})
			}
		})
	})
}

// proxyEnv is a WithLookupEnv with both proxies set, which apply to every
// host but loopback ones.
func proxyEnv(key string) (string, bool) {
	switch key {
	case "HTTP_PROXY", "HTTPS_PROXY":
		return "http://egress.test:3128", true
	}
	return "", false
}

// TestLegacyHooksRefused: what the legacy path's shared transport cannot
// honour, New and Reload refuse by name (the source schema and the
// setting), and a refused Reload leaves the old configuration in force; the
// sockets path, a pool per schema that dials the proxy with the hook,
// takes the same configuration.
func TestLegacyHooksRefused(t *testing.T) {
	dial := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("unused") }
	verify := func(tls.ConnectionState) error { return nil }
	cases := []struct {
		name    string
		urls    []string // name, url, ...
		lookup  func(string) (string, bool)
		opts    map[string]transport.SchemaOptions
		wantErr []string
	}{
		{"Dial on a proxied URL", []string{"products", "http://products.internal/graphql"}, proxyEnv,
			map[string]transport.SchemaOptions{"products": {Dial: dial}},
			[]string{"source_schemas.products", "SchemaOptions.Dial", "proxy"}},
		{"VerifyConnection on a proxied URL", []string{"products", "https://products.internal/graphql"}, proxyEnv,
			map[string]transport.SchemaOptions{"products": {VerifyConnection: verify}},
			[]string{"source_schemas.products", "SchemaOptions.VerifyConnection", "proxy"}},
		{"Dial on two schemas at one host and port", []string{"products", "http://products.internal/a", "reviews", "http://PRODUCTS.internal:80/b"}, noEnv,
			map[string]transport.SchemaOptions{"products": {Dial: dial}, "reviews": {Dial: dial}},
			[]string{"source_schemas.reviews", "SchemaOptions.Dial", `"products"`}},
	}
	for _, c := range cases {
		var opts []transport.Option
		for name, so := range c.opts {
			opts = append(opts, transport.WithSchemaOptions(name, so))
		}
		t.Run(c.name+"/New", func(t *testing.T) {
			inv, err := transport.New(config(env.PathLegacy, c.urls...), append(opts, transport.WithLookupEnv(c.lookup), transport.WithLogger(quiet))...)
			if err == nil {
				inv.Close()
				t.Fatal("New succeeded")
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v; want it to name %s", err, w)
				}
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("New: %v wraps no cause", err)
			}
		})
		t.Run(c.name+"/sockets takes it", func(t *testing.T) {
			inv, err := transport.New(config(env.PathSockets, c.urls...), append(opts, transport.WithLookupEnv(c.lookup), transport.WithLogger(quiet))...)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			inv.Close()
		})
		t.Run(c.name+"/Reload", func(t *testing.T) {
			// In force first: the schemas at a loopback server, which no
			// proxy applies to, each dialled by its own hook.
			srv := newSchemaServer(t, nil)
			var dialled atomic.Int64
			live := map[string]transport.SchemaOptions{}
			var lopts []transport.Option
			for name, so := range c.opts {
				if so.Dial != nil {
					so.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
						dialled.Add(1)
						var d net.Dialer
						return d.DialContext(ctx, network, addr)
					}
				}
				live[name] = so
				lopts = append(lopts, transport.WithSchemaOptions(name, so))
			}
			urls := []string{c.urls[0], srv.URL()}
			inv := newInvoker(t, config(env.PathLegacy, urls...), append(lopts, transport.WithLookupEnv(c.lookup))...)
			err := inv.Reload(config(env.PathLegacy, c.urls...))
			if err == nil {
				t.Fatal("Reload succeeded")
			}
			for _, w := range append([]string{"reload rejected"}, c.wantErr...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Reload: %v; want it to name %s", err, w)
				}
			}
			post(t, inv, context.Background(), urls[0])
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the old configuration's server got %d requests, want 1", n)
			}
			if live[urls[0]].Dial != nil && dialled.Load() != 1 {
				t.Errorf("the old configuration's Dial hook dialled %d times, want 1", dialled.Load())
			}
		})
	}
}

// TestLegacyTLSProtocols: the legacy path makes its TLS handshakes itself
// (so that a VerifyConnection hook can act by host and port) and offers
// what net/http offers: HTTP/2 to a server that speaks it, and HTTP/1.1
// alone for a websocket upgrade, which net/http sends on an HTTP/1
// connection of its own.
func TestLegacyTLSProtocols(t *testing.T) {
	runTrusted(t, func(t *testing.T, cert tls.Certificate) {
		srv := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, ALPN: []string{"h2", "http/1.1"}})
		inv := newInvoker(t, config(env.PathLegacy, "products", srv.URL()))
		resp, _ := post(t, inv, context.Background(), "products")
		if resp.ProtoMajor != 2 || srv.Last(t).ProtoMajor != 2 {
			t.Errorf("Post went over %s (the server saw HTTP/%d), want HTTP/2", resp.Proto, srv.Last(t).ProtoMajor)
		}
		req, err := http.NewRequest(http.MethodGet, srv.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		resp, err = inv.Do(context.Background(), "products", req)
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		readAll(t, resp)
		if got := srv.Last(t); got.ProtoMajor != 1 || got.Header.Get("Upgrade") != "websocket" {
			t.Errorf("the upgrade request reached the server over HTTP/%d with Upgrade %q, want HTTP/1.1 with websocket", got.ProtoMajor, got.Header.Get("Upgrade"))
		}
	})
}
