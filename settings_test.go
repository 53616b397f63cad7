package transport_test

// Each setting of env.Settings, observed where it acts: on the wire, at a
// server that records what only a server sees (the TLS state, the protocol,
// the connection, the frames), or in the process (the log, the dialer).
// Settings the legacy path honours are run on both paths; the others on
// the sockets path, whose transports are built per source schema.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// socketsConfig returns a sockets Config with one source schema, products,
// at url, whose settings edit sets.
func socketsConfig(url string, edit func(*env.SourceSchema)) env.Config {
	return withSchema(env.PathSockets, url, edit)
}

// errorNamesSchema fails the test unless err names source schema products.
func errorNamesSchema(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("call succeeded, want an error")
	}
	if !strings.Contains(err.Error(), `source schema "products"`) {
		t.Errorf("error %q does not name the source schema", err)
	}
}

// TestSettingTLS: the tls.* keys and the VerifyConnection hook, against TLS
// servers that demand a client certificate, name another host, cap the
// version or sign their own certificate.
func TestSettingTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	clientCert, clientKey := pki.ClientFiles(t, "gateway")
	caOnly := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}
	mtls := newWireServer(t, wiretest.Options{TLS: pki.ServerConfig(t, "127.0.0.1")})
	named := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "products.internal")}}})
	capped := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: caOnly.Certificates, MaxVersion: tls.VersionTLS12}})
	plain := newWireServer(t, wiretest.Options{TLS: caOnly})
	selfSigned := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{testpki.SelfSigned(t, "127.0.0.1")}}})
	errPinned := errors.New("server key is not the pinned one")
	var hookSaw atomic.Value

	var (
		okServerSees = func(check func(t *testing.T, got wireRequest)) func(*testing.T, []wireRequest, error) {
			return func(t *testing.T, reqs []wireRequest, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("Post: %v", err)
				}
				if len(reqs) != 1 {
					t.Fatalf("the server received %d requests, want 1", len(reqs))
				}
				check(t, reqs[0])
			}
		}
		fails = func(check func(t *testing.T, err error)) func(*testing.T, []wireRequest, error) {
			return func(t *testing.T, reqs []wireRequest, err error) {
				t.Helper()
				errorNamesSchema(t, err)
				if check != nil {
					check(t, err)
				}
				if len(reqs) != 0 {
					t.Errorf("the server answered %d requests, want none", len(reqs))
				}
			}
		}
		version = func(want uint16) func(*testing.T, wireRequest) {
			return func(t *testing.T, got wireRequest) {
				if got.TLS == nil || got.TLS.Version != want {
					t.Errorf("server saw TLS version %s, want %s", tlsVersionName(got.TLS), tls.VersionName(want))
				}
			}
		}
	)
	cases := []struct {
		name  string
		srv   *wireServer
		tls   env.TLSSettings
		hooks transport.SchemaOptions
		check func(t *testing.T, reqs []wireRequest, err error) // reqs: what the server received in this case
	}{
		{"client certificate demanded, none configured", mtls, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{}, fails(func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), "certificate required") {
				t.Errorf("error %q does not say that a certificate was required", err)
			}
		})},
		{"cert_file and key_file", mtls, env.TLSSettings{CAFile: pki.CAFile, CertFile: clientCert, KeyFile: clientKey}, transport.SchemaOptions{}, okServerSees(func(t *testing.T, got wireRequest) {
			if len(got.TLS.PeerCertificates) == 0 || got.TLS.PeerCertificates[0].Subject.CommonName != "gateway" {
				t.Errorf("server saw client certificates %v, want CN gateway", got.TLS.PeerCertificates)
			}
		})},
		{"server_name verifies and is sent in SNI", named, env.TLSSettings{CAFile: pki.CAFile, ServerName: "products.internal"}, transport.SchemaOptions{}, okServerSees(func(t *testing.T, got wireRequest) {
			if got.TLS.ServerName != "products.internal" {
				t.Errorf("server saw SNI %q, want products.internal", got.TLS.ServerName)
			}
		})},
		{"without server_name the URL's host is verified", named, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{}, fails(func(t *testing.T, err error) {
			var he x509.HostnameError
			if !errors.As(err, &he) {
				t.Errorf("error %v is not an x509.HostnameError", err)
			}
		})},
		{"min_version 1.3 against a server capped at 1.2", capped, env.TLSSettings{CAFile: pki.CAFile, MinVersion: "1.3"}, transport.SchemaOptions{}, fails(nil)},
		{"the capped server answers by default, with 1.2", capped, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{}, okServerSees(version(tls.VersionTLS12))},
		{"max_version 1.2", plain, env.TLSSettings{CAFile: pki.CAFile, MaxVersion: "1.2"}, transport.SchemaOptions{}, okServerSees(version(tls.VersionTLS12))},
		{"default version is 1.3", plain, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{}, okServerSees(version(tls.VersionTLS13))},
		{"default verifies against the system roots", selfSigned, env.TLSSettings{}, transport.SchemaOptions{}, fails(func(t *testing.T, err error) {
			var ve *tls.CertificateVerificationError
			if !errors.As(err, &ve) {
				t.Errorf("error %v is not a *tls.CertificateVerificationError", err)
			}
		})},
		{"insecure_skip_verify", selfSigned, env.TLSSettings{InsecureSkipVerify: env.Enabled}, transport.SchemaOptions{}, okServerSees(func(*testing.T, wireRequest) {})},
		{"VerifyConnection error aborts", plain, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{VerifyConnection: func(tls.ConnectionState) error { return errPinned }}, fails(func(t *testing.T, err error) {
			if !errors.Is(err, errPinned) {
				t.Errorf("error %v does not wrap the hook's error", err)
			}
		})},
		{"VerifyConnection sees the verified chain", plain, env.TLSSettings{CAFile: pki.CAFile}, transport.SchemaOptions{VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.VerifiedChains) > 0 {
				hookSaw.Store(cs.VerifiedChains[0][len(cs.VerifiedChains[0])-1].Subject.CommonName)
			}
			return nil
		}}, okServerSees(func(t *testing.T, _ wireRequest) {
			if got, _ := hookSaw.Load().(string); got != "fusion test CA" {
				t.Errorf("hook saw a chain ending in %q, want the test CA", got)
			}
		})},
	}
	forEngines(t, func(t *testing.T, engine string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := len(c.srv.Requests())
				var logs logBuffer
				inv := newInvoker(t, engineConfig(engine, c.srv.URL(), func(s *env.SourceSchema) { s.TLS = c.tls }),
					transport.WithSchemaOptions("products", c.hooks), infoLog(&logs))
				resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
				if err == nil {
					readAll(t, resp)
				}
				c.check(t, c.srv.Requests()[before:], err)
				warned := strings.Contains(logs.String(), "tls.insecure_skip_verify") && strings.Contains(logs.String(), "level=WARN")
				if want := c.tls.InsecureSkipVerify.On(); warned != want {
					t.Errorf("warning about tls.insecure_skip_verify logged: %v, want %v; log:\n%s", warned, want, logs.String())
				}
				checkRanOn(t, engine, logs.String())
			})
		}
	})
}

func tlsVersionName(cs *tls.ConnectionState) string {
	if cs == nil {
		return "none (cleartext)"
	}
	return tls.VersionName(cs.Version)
}

// TestSettingTLSFiles: a TLS file that cannot be used stops New with an
// error naming the key and the file.
func TestSettingTLSFiles(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cert, key := pki.ClientFiles(t, "gateway")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cases := []struct {
		name string
		tls  env.TLSSettings
		want string
	}{
		{"ca_file missing", env.TLSSettings{CAFile: missing}, "source_schemas.products.tls.ca_file: open " + missing},
		{"ca_file without PEM", env.TLSSettings{CAFile: notPEM}, "source_schemas.products.tls.ca_file: no PEM certificate in " + notPEM},
		{"cert_file missing", env.TLSSettings{CertFile: missing, KeyFile: key}, "source_schemas.products.tls.cert_file: open " + missing},
		{"key_file missing", env.TLSSettings{CertFile: cert, KeyFile: missing}, "source_schemas.products.tls.key_file: open " + missing},
		{"key_file not the certificate's", env.TLSSettings{CertFile: cert, KeyFile: pki.CAFile}, "source_schemas.products.tls.cert_file: " + cert + " with " + pki.CAFile},
	}
	forEngines(t, func(t *testing.T, engine string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				cfg := engineConfig(engine, "https://127.0.0.1:1/graphql", func(s *env.SourceSchema) { s.TLS = c.tls })
				inv, err := transport.New(cfg, transport.WithLogger(quiet))
				if err == nil {
					inv.Close()
					t.Fatal("New succeeded")
				}
				if !strings.HasPrefix(err.Error(), c.want) {
					t.Errorf("New error %q, want it to start with %q", err, c.want)
				}
			})
		}
	})
}

// TestSettingHTTPVersion: http_version and version_policy, observed as the
// protocol each request reached the server with.
func TestSettingHTTPVersion(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cert := []tls.Certificate{pki.Server(t, "127.0.0.1")}
	h2cOnly := newWireServer(t, wiretest.Options{H2COnly: true})
	h2 := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2", "http/1.1"}})
	h1 := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"http/1.1"}})
	noALPN := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{}})
	cases := []struct {
		name            string
		srv             *wireServer
		version, policy string
		wantProto       int    // 0: the call fails
		why             string // the documented rule, for the failure message
	}{
		{"h2c against an h2c-only server", h2cOnly, "h2c", "", 2, ""},
		{"default against an h2c-only server", h2cOnly, "", "", 0, ""},
		{"1.1 against a server offering h2", h2, "1.1", "", 1, ""},
		{"default over TLS", h2, "", "", 2, ""},
		{"2 exact against a server offering h2", h2, "2", "exact", 2, ""},
		{"2 or_lower against an http/1.1 server", h1, "2", "or_lower", 1, ""},
		{"2 exact against an http/1.1 server", h1, "2", "exact", 0, ""},
		{"2 exact against a server without ALPN", noALPN, "2", "exact", 0,
			"version_policy exact fails rather than fall back (env.Settings.VersionPolicy); net/http speaks HTTP/1.1 when the server negotiates no ALPN protocol, even with Transport.Protocols set to HTTP/2 only, so the sockets path must check tls.ConnectionState.NegotiatedProtocol == \"h2\" itself"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.srv.Requests())
			inv := newInvoker(t, socketsConfig(c.srv.URL(), func(s *env.SourceSchema) {
				s.HTTPVersion, s.VersionPolicy = c.version, c.policy
				s.TLS.CAFile = pki.CAFile
			}))
			resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
			if c.wantProto == 0 {
				if err == nil {
					body := readAll(t, resp)
					t.Fatalf("got %s %d %q, want the call to fail. %s", resp.Proto, resp.StatusCode, body, c.why)
				}
				errorNamesSchema(t, err)
				return
			}
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			readAll(t, resp)
			reqs := c.srv.Requests()[before:]
			if len(reqs) != 1 || reqs[0].ProtoMajor != c.wantProto || resp.ProtoMajor != c.wantProto {
				t.Errorf("server saw %d requests %+v, caller got %s; want one of HTTP/%d", len(reqs), reqs, resp.Proto, c.wantProto)
			}
		})
	}
}

// TestSettingHTTP2PingInterval: with http2.ping_interval, an idle HTTP/2
// connection carries PING frames; without it, none.
func TestSettingHTTP2PingInterval(t *testing.T) {
	cases := []struct {
		name      string
		interval  time.Duration
		wantPings bool
	}{
		{"ping_interval 50ms", 50 * time.Millisecond, true},
		{"default off", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, pl := wiretest.NewPingServer(t, false)
			inv := newInvoker(t, socketsConfig(srv.SchemaURL(), func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.PingInterval = c.interval
			}))
			post(t, inv, context.Background(), "products") // the connection is warm and idle now
			if c.wantPings {
				select {
				case <-pl.Pings:
				case <-time.After(10 * time.Second):
					t.Fatal("no PING reached the server from the idle connection")
				}
				return
			}
			select {
			case <-pl.Pings:
				t.Fatal("the client sent a PING although ping_interval is off")
			case <-time.After(300 * time.Millisecond): // six of the other case's intervals
			}
		})
	}
}

// TestSettingHTTP2PingTimeout: a connection whose PINGs go unanswered is
// closed after http2.ping_timeout, and the next request gets a new one.
// The server never sees the PINGs, so it cannot answer them.
func TestSettingHTTP2PingTimeout(t *testing.T) {
	cases := []struct {
		name       string
		timeout    time.Duration
		wantClosed bool
	}{
		{"ping_timeout 100ms", 100 * time.Millisecond, true},
		{"default 15s", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, pl := wiretest.NewPingServer(t, true)
			inv := newInvoker(t, socketsConfig(srv.SchemaURL(), func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.PingInterval = 50 * time.Millisecond
				s.HTTP2.PingTimeout = c.timeout
			}))
			post(t, inv, context.Background(), "products")
			first := srv.Last(t).Remote
			select {
			case <-pl.Pings:
			case <-time.After(10 * time.Second):
				t.Fatal("no PING was sent")
			}
			if !c.wantClosed {
				select {
				case addr := <-srv.Closed():
					t.Fatalf("connection %s closed although ping_timeout is 15s", addr)
				case <-time.After(400 * time.Millisecond): // four of the other case's timeouts
				}
				return
			}
			if got := srv.WaitClosedN(t, 1, 10*time.Second, "a connection whose PINGs go unanswered closes after http2.ping_timeout"); got[0] != first {
				t.Fatalf("connection %s closed, want %s", got[0], first)
			}
			post(t, inv, context.Background(), "products")
			if srv.Last(t).Remote == first {
				t.Errorf("the next request came on the closed connection %s", first)
			}
		})
	}
}

// TestSettingHTTP2MultipleConnections: against an HTTP/2 server that allows
// one stream per connection, Disabled makes concurrent requests wait for
// the stream; Enabled opens more connections.
func TestSettingHTTP2MultipleConnections(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cert := []tls.Certificate{pki.Server(t, "127.0.0.1")}
	slow := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{}}`)
	}
	// A cold start counts the connections that carried requests: net/http
	// itself may dial several at once and close the extra ones unused.
	cases := []struct {
		name   string
		toggle env.Toggle
		warm   bool
		check  func(t *testing.T, used int)
	}{
		{"Disabled, warm connection", env.Disabled, true, wantConns(1)},
		// Requests that start while the first connection is being dialled
		// must wait for it, not dial their own (internal/sockets/pool.go, get).
		{"Disabled, cold start", env.Disabled, false, wantConns(1)},
		{"Enabled, warm connection", env.Enabled, true, wantConnsMoreThan(1)},
		{"default (Enabled), cold start", env.Inherit, false, wantConnsMoreThan(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2"}, MaxStreams: 1, Handler: slow})
			cfg := socketsConfig(srv.URL(), func(s *env.SourceSchema) {
				s.TLS.CAFile = pki.CAFile
				s.HTTP2.MultipleConnections = c.toggle
				s.ForwardHeaders = []string{"X-Slow"}
			})
			inv := newInvoker(t, cfg)
			if c.warm {
				post(t, inv, context.Background(), "products")
			}
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(gatewayCtx("X-Slow", "1"), 5*time.Second)
					defer cancel()
					resp, err := inv.Post(ctx, "products", []byte(`{}`))
					if errors.Is(err, context.DeadlineExceeded) {
						err = fmt.Errorf("%w: not answered in 5s although the server answers each request in 100ms, so it is stuck in the pool or on the HTTP/2 connection (streams reserved beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS?)", err)
					}
					if err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.ProtoMajor != 2 {
							err = fmt.Errorf("answered over %s, want HTTP/2", resp.Proto)
						}
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			used := map[string]bool{}
			for _, r := range srv.Requests() {
				used[r.Remote] = true
			}
			if c.warm && len(srv.Opened()) != len(used) {
				t.Errorf("the server saw %d connections open and %d carry requests", len(srv.Opened()), len(used))
			}
			c.check(t, len(used))
		})
	}
}

// TestSettingHTTP2MultipleConnectionsShareStreams: with
// http2.multiple_connections false and a server that allows many streams,
// concurrent requests share the one connection: three at a cold start
// (they wait for the first dial and must go on as soon as it is up), then
// six on the warm connection. The server holds each answer until all of a
// round are in flight together. It allows 100 streams, what an HTTP/2
// client assumes before the server's SETTINGS arrive, so that SETTINGS
// frame wakes no one: only the pool itself can.
func TestSettingHTTP2MultipleConnectionsShareStreams(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	var inFlight, want atomic.Int32
	var mu sync.Mutex
	together := make(chan struct{})
	srv := newWireServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2"}, MaxStreams: 100, Handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		all := together
		if inFlight.Add(1) == want.Load() {
			close(together)
		}
		mu.Unlock()
		defer inFlight.Add(-1)
		select {
		case <-all:
		case <-time.After(2 * time.Second):
			w.WriteHeader(http.StatusGatewayTimeout) // the round never came together
		case <-r.Context().Done():
		}
	}})
	inv := newInvoker(t, socketsConfig(srv.URL(), func(s *env.SourceSchema) {
		s.TLS.CAFile = pki.CAFile
		s.HTTP2.MultipleConnections = env.Disabled
	}))
	for _, n := range []int{3, 6} {
		mu.Lock()
		want.Store(int32(n))
		together = make(chan struct{})
		mu.Unlock()
		late := 0
		for _, code := range postAtOnce(t, inv, context.Background(), "products", n) {
			if code != http.StatusOK {
				late++
			}
		}
		if late > 0 {
			t.Errorf("round of %d: %d requests were not in flight with the others within 2s: requests that waited for the first connection's dial were not woken when it came up (internal/sockets/pool.go dial: no p.signal() after adding the new connection; the ClientConn's state hook fires only if Available increases)", n, late)
		}
	}
	if got := srv.Opened(); len(got) != 1 {
		t.Errorf("the server saw %d connections, want 1", len(got))
	}
}

func wantConns(n int) func(*testing.T, int) {
	return func(t *testing.T, used int) {
		t.Helper()
		if used != n {
			t.Errorf("requests came on %d connections, want %d: with http2.multiple_connections false, requests wait for a stream of the one HTTP/2 connection (env.HTTP2Settings.MultipleConnections)", used, n)
		}
	}
}

func wantConnsMoreThan(n int) func(*testing.T, int) {
	return func(t *testing.T, used int) {
		t.Helper()
		if used <= n {
			t.Errorf("requests came on %d connections, want more than %d", used, n)
		}
	}
}

// TestSettingDecompression: decompression asks for the listed codings and
// hands the caller the decoded body; by default nothing is asked for.
func TestSettingDecompression(t *testing.T) {
	const payload = `{"data":{"products":["table","chair","lamp"]}}`
	srv := newWireServer(t, wiretest.Options{Handler: wiretest.CompressingHandler(payload)})
	cases := []struct {
		name          string
		codings       []string
		coding        string // what the server would use
		callerAsks    string // Accept-Encoding the caller sets itself (Do)
		wantAsked     string // Accept-Encoding at the server
		wantDecoded   bool
		wantRawCoding string // Content-Encoding the caller gets
	}{
		{"gzip and zstd, gzip answer", []string{"gzip", "zstd"}, "gzip", "", "gzip, zstd", true, ""},
		{"gzip and zstd, zstd answer", []string{"gzip", "zstd"}, "zstd", "", "gzip, zstd", true, ""},
		{"gzip only, server would zstd", []string{"gzip"}, "zstd", "", "gzip", false, ""},
		{"default", nil, "gzip", "", "", false, ""},
		{"off", []string{}, "gzip", "", "", false, ""},
		{"caller's own Accept-Encoding is left alone", []string{"gzip", "zstd"}, "gzip", "gzip", "gzip", false, "gzip"},
	}
	forEngines(t, func(t *testing.T, engine string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				url := srv.Server.URL + "/graphql/" + c.coding
				inv := newInvoker(t, engineConfig(engine, url, func(s *env.SourceSchema) { s.Decompression = c.codings }))
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
				if c.callerAsks != "" {
					req.Header.Set("Accept-Encoding", c.callerAsks)
				}
				resp, err := inv.Do(context.Background(), "products", req)
				if err != nil {
					t.Fatal(err)
				}
				body := readAll(t, resp)
				if got := srv.Last(t).Header.Get("Accept-Encoding"); got != c.wantAsked {
					t.Errorf("server saw Accept-Encoding %q, want %q", got, c.wantAsked)
				}
				if got := resp.Header.Get("Content-Encoding"); got != c.wantRawCoding {
					t.Errorf("caller got Content-Encoding %q, want %q", got, c.wantRawCoding)
				}
				if resp.Uncompressed != c.wantDecoded {
					t.Errorf("Uncompressed = %v, want %v", resp.Uncompressed, c.wantDecoded)
				}
				if c.wantDecoded && resp.ContentLength != -1 {
					t.Errorf("ContentLength = %d of a decoded body, want -1", resp.ContentLength)
				}
				if c.wantRawCoding == "" && body != payload {
					t.Errorf("caller got body %q, want the plain payload", body)
				}
			})
		}
	})
}

// TestSettingUnixSocket: unix_socket dials a Unix socket; the URL still
// gives the Host. The Dial hook replaces the dialer and is called once per
// connection.
func TestSettingUnixSocket(t *testing.T) {
	const schemaURL = "http://products.internal/graphql"
	forEngines(t, func(t *testing.T, engine string) {
		t.Run("unix_socket", func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "products.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Skip("no Unix sockets here:", err)
			}
			srv := newWireServer(t, wiretest.Options{Listener: ln, URL: schemaURL})
			inv := newInvoker(t, engineConfig(engine, schemaURL, func(s *env.SourceSchema) { s.UnixSocket = sock }))
			resp, body := post(t, inv, context.Background(), "products")
			if resp.StatusCode != 200 || body != `{"data":{"ok":true}}` {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if got := srv.Last(t); got.Host != "products.internal" || got.RequestURI != "/graphql" {
				t.Errorf("server saw Host %q, target %q; want products.internal and /graphql", got.Host, got.RequestURI)
			}
		})
		t.Run("Dial hook", func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{URL: schemaURL})
			dr := &wiretest.DialRecorder{To: srv.Listener.Addr().String()}
			inv := newInvoker(t, engineConfig(engine, schemaURL, nil), transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dr.Dial}))
			post(t, inv, context.Background(), "products")
			post(t, inv, context.Background(), "products")
			if got := dr.Addrs(); !slices.Equal(got, []string{"tcp products.internal:80"}) {
				t.Errorf("Dial hook called for %q, want once for tcp products.internal:80", got)
			}
			if got := srv.Last(t).Host; got != "products.internal" {
				t.Errorf("server saw Host %q", got)
			}
		})
	})
}

// TestSettingProxy: the proxy key on the sockets path. The forward proxy
// answers absolute-form requests itself; the Dial hook shows where each
// connection went. Go never uses an environment proxy for loopback, so the
// source schema has a name that is not.
func TestSettingProxy(t *testing.T) {
	const schemaURL = "http://products.fusion.invalid/graphql"
	proxy := wiretest.NewProxy(t)
	proxyAddr := proxy.Listener.Addr().String()
	lookup := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	withProxy := lookup("HTTP_PROXY", proxy.URL)
	cases := []struct {
		name      string
		proxy     string
		lookup    func(string) (string, bool)
		wantProxy bool
	}{
		{"default, HTTP_PROXY set", "", withProxy, false},
		{"off, HTTP_PROXY set", "off", withProxy, false},
		{"environment", "environment", withProxy, true},
		{"environment, lower case http_proxy", "environment", lookup("http_proxy", proxy.URL), true},
		{"environment, host in NO_PROXY", "environment", lookup("HTTP_PROXY", proxy.URL, "NO_PROXY", ".fusion.invalid"), false},
		{"proxy URL", proxy.URL, noEnv, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(proxy.Requests())
			dr := &wiretest.DialRecorder{}
			inv := newInvoker(t, socketsConfig(schemaURL, func(s *env.SourceSchema) { s.Proxy = c.proxy }),
				transport.WithLookupEnv(c.lookup),
				transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dr.Dial}))
			resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
			reached := proxy.Requests()[before:]
			if !c.wantProxy {
				if err == nil {
					readAll(t, resp)
					t.Fatal("the call succeeded: it cannot without the proxy")
				}
				if len(reached) != 0 || !slices.Equal(dr.Addrs(), []string{"tcp products.fusion.invalid:80"}) {
					t.Errorf("proxy saw %d requests, dialer saw %q; want a direct dial only", len(reached), dr.Addrs())
				}
				return
			}
			if err != nil {
				t.Fatalf("Post: %v (dialer saw %q)", err, dr.Addrs())
			}
			if body := readAll(t, resp); body != `{"data":{"via":"proxy"}}` {
				t.Errorf("body %q, want the proxy's answer", body)
			}
			if len(reached) != 1 || reached[0].RequestURI != schemaURL || reached[0].Host != "products.fusion.invalid" {
				t.Errorf("proxy saw %+v, want one absolute-form request for %s", reached, schemaURL)
			}
			if got := dr.Addrs(); !slices.Equal(got, []string{"tcp " + proxyAddr}) {
				t.Errorf("dialer saw %q, want only the proxy %s", got, proxyAddr)
			}
		})
	}
}

// TestSettingProxyLoopback: an explicit proxy URL is used for a loopback
// source schema too (http.ProxyURL has no loopback exception): the source
// schema itself sees nothing.
func TestSettingProxyLoopback(t *testing.T) {
	target := newWireServer(t, wiretest.Options{})
	proxy := wiretest.NewProxy(t)
	inv := newInvoker(t, socketsConfig(target.URL(), func(s *env.SourceSchema) { s.Proxy = proxy.URL }))
	if _, body := post(t, inv, context.Background(), "products"); body != `{"data":{"via":"proxy"}}` {
		t.Errorf("body %q, want the proxy's answer", body)
	}
	if got := proxy.Last(t).RequestURI; got != target.URL() {
		t.Errorf("proxy saw target %q, want %q", got, target.URL())
	}
	if n := len(target.Requests()); n != 0 {
		t.Errorf("the source schema was reached directly %d times", n)
	}
}

// TestSettingMaxIdleConnsPerHost: three requests at once open three
// connections; with max_idle_conns_per_host 1, two of them close as they
// turn idle and the third serves the next request. The legacy path's
// shared transport takes the value from defaults (see Settings).
func TestSettingMaxIdleConnsPerHost(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{Handler: wiretest.BarrierHandler(3)})
			cfg := config(p, "products", srv.URL())
			cfg.ForwardHeaders = []string{"X-Barrier"}
			if p == env.PathLegacy {
				cfg.Defaults.MaxIdleConnsPerHost = 1 // the shared transport reads defaults only
			} else {
				s := cfg.SourceSchemas["products"]
				s.MaxIdleConnsPerHost = 1
				cfg.SourceSchemas["products"] = s
			}
			inv := newInvoker(t, cfg)
			postAtOnce(t, inv, gatewayCtx("X-Barrier", "1"), "products", 3)
			if n := len(srv.Opened()); n != 3 {
				t.Fatalf("the server saw %d connections, want 3", n)
			}
			closed := srv.WaitClosedN(t, 2, 3*time.Second, "max_idle_conns_per_host 1 keeps one idle connection and closes the others as they turn idle (env.Settings.MaxIdleConnsPerHost: per source schema on sockets, per host on legacy, whose shared transport reads defaults)")
			post(t, inv, context.Background(), "products")
			last := srv.Last(t).Remote
			if slices.Contains(closed, last) || !slices.Contains(srv.Opened(), last) || len(srv.Opened()) != 3 {
				t.Errorf("the next request came on %s (closed: %v, opened: %v); want the one kept idle", last, closed, srv.Opened())
			}
		})
	}
}

// TestSettingConnLifetimeJitterOff: with conn_lifetime_jitter off, no
// connection closes before its full conn_lifetime (measured from the end
// of the dial, so the age at close can only be longer). The default
// jitter takes up to a tenth off, so this bound would not hold for it.
// That some jitter is applied is not asserted: its amount is random.
func TestSettingConnLifetimeJitterOff(t *testing.T) {
	const lifetime = 200 * time.Millisecond
	forEngines(t, func(t *testing.T, engine string) {
		srv := newWireServer(t, wiretest.Options{})
		ct := &wiretest.CloseTimer{Ages: make(chan time.Duration, 4)}
		inv := newInvoker(t, engineConfig(engine, srv.URL(), func(s *env.SourceSchema) {
			s.ConnLifetime = lifetime
			s.ConnLifetimeJitter = env.Off
		}), transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: ct.Dial}))
		post(t, inv, context.Background(), "products")
		select {
		case age := <-ct.Ages:
			if age < lifetime {
				t.Errorf("the connection was closed at age %s, before its conn_lifetime %s", age, lifetime)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the connection was not closed at its lifetime")
		}
	})
}

// tcpTimer reads the timer of the client socket with local port port from
// /proc/net/tcp: "02" is the keep-alive timer, "00" none, with the time
// left in clock ticks.
func tcpTimer(t *testing.T, port int) (kind string, left time.Duration, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skip("keep-alive is observed through /proc/net/tcp, which this system lacks:", err)
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != local || fields[3] != "01" { // 01: ESTABLISHED
			continue
		}
		kind, ticks, _ := strings.Cut(fields[5], ":")
		n, _ := strconv.ParseInt(ticks, 16, 64)
		return kind, time.Duration(n) * time.Second / 100, true // USER_HZ is 100 on Linux
	}
	return "", 0, false
}

// TestSettingKeepAlive: keep_alive sets the TCP keep-alive probes of the
// source schema's connections. Probes cannot be seen on loopback without a
// packet capture, so the client socket's kernel timer is read instead.
func TestSettingKeepAlive(t *testing.T) {
	cases := []struct {
		path      env.Path
		name      string
		keepAlive time.Duration
		wantTimer bool
	}{
		{env.PathSockets, "3s", 3 * time.Second, true},
		{env.PathSockets, "off", env.Off, false},
		{pathH1, "3s", 3 * time.Second, true},
		{pathH1, "off", env.Off, false},
		{env.PathLegacy, "defaults 3s", 3 * time.Second, true}, // the shared transport reads defaults
		{env.PathLegacy, "defaults off", env.Off, false},
	}
	for _, c := range cases {
		t.Run(string(c.path)+"/"+c.name, func(t *testing.T) {
			srv := newWireServer(t, wiretest.Options{})
			cfg := config(c.path, "products", srv.URL())
			if c.path == env.PathLegacy {
				cfg.Defaults.KeepAlive = c.keepAlive
			} else {
				s := cfg.SourceSchemas["products"]
				s.KeepAlive = c.keepAlive
				cfg.SourceSchemas["products"] = s
			}
			inv := newInvoker(t, cfg)
			post(t, inv, context.Background(), "products")
			_, portText, _ := net.SplitHostPort(srv.Last(t).Remote)
			port, _ := strconv.Atoi(portText)
			var kind string
			var left time.Duration
			for range 50 { // a retransmission timer may show briefly instead
				var found bool
				if kind, left, found = tcpTimer(t, port); !found {
					t.Fatalf("client socket 127.0.0.1:%d not in /proc/net/tcp", port)
				}
				if kind != "01" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			switch {
			case c.wantTimer && (kind != "02" || left > c.keepAlive):
				t.Errorf("socket timer %s with %s left, want the keep-alive timer (02) within %s", kind, left, c.keepAlive)
			case !c.wantTimer && kind != "00":
				t.Errorf("socket timer %s with %s left, want none (00)", kind, left)
			}
		})
	}
}

// TestSettingTimeouts: request_timeout cuts a body that streams too long,
// unless the caller's deadline is earlier; header_timeout set on the
// schema bounds the wait for headers; tls_handshake_timeout bounds a
// handshake the server never answers.
func TestSettingTimeouts(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p)+"/request_timeout cuts the body", func(t *testing.T) {
			srv := newSchemaServer(t, wiretest.StreamingHandler)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.RequestTimeout = 100 * time.Millisecond
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			err := readBodyErr(inv.Post(context.Background(), "products", []byte(`{}`)))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want a request_timeout matching context.DeadlineExceeded", err)
			}
		})
		t.Run(string(p)+"/an earlier caller deadline wins", func(t *testing.T) {
			srv := newSchemaServer(t, wiretest.StreamingHandler)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.RequestTimeout = 5 * time.Second
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := readBodyErr(inv.Post(ctx, "products", []byte(`{}`)))
			if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want the caller's deadline (context.DeadlineExceeded, not request_timeout)", err)
			}
		})
		t.Run(string(p)+"/header_timeout of the schema", func(t *testing.T) {
			release := make(chan struct{})
			srv := newSchemaServer(t, wiretest.HoldHandler(release))
			defer close(release)
			cfg := config(p, "products", srv.URL())
			s := cfg.SourceSchemas["products"]
			s.HeaderTimeout = 50 * time.Millisecond
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg)
			_, err := inv.Post(context.Background(), "products", []byte(`{}`))
			errorNamesSchema(t, err)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "header_timeout") {
				t.Errorf("error %v, want a header_timeout", err)
			}
		})
	}
	t.Run("sockets/tls_handshake_timeout", func(t *testing.T) {
		forEngines(t, func(t *testing.T, engine string) {
			addr := wiretest.SilentListener(t)
			var logs logBuffer
			inv := newInvoker(t, engineConfig(engine, "https://"+addr+"/graphql", func(s *env.SourceSchema) {
				s.TLSHandshakeTimeout = 100 * time.Millisecond
			}), infoLog(&logs))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := inv.Post(ctx, "products", []byte(`{}`))
			errorNamesSchema(t, err)
			if !strings.Contains(err.Error(), "TLS handshake timeout") || ctx.Err() != nil {
				t.Errorf("error %v, want net/http's TLS handshake timeout", err)
			}
			checkRanOn(t, engine, logs.String())
		})
	})
}

// readBodyErr reads a response body to its end and returns the error that
// ended the call or the read.
func readBodyErr(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// TestSettingRetry: retry.* sends a query again on a listed status, never
// a mutation; by default nothing is retried.
func TestSettingRetry(t *testing.T) {
	const query, mutation = `{"query":"{ ok }"}`, `{"query":"mutation { order }"}`
	retry := env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
	cases := []struct {
		name      string
		retry     env.RetrySettings
		body      string
		wantTries int
		wantCode  int
	}{
		{"query retried", retry, query, 3, 200},
		{"mutation never retried", retry, mutation, 1, 503},
		{"default: one attempt", env.RetrySettings{}, query, 1, 503},
		{"status not listed", env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond, Statuses: []int{502}}, query, 1, 503},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(string(p)+"/"+c.name, func(t *testing.T) {
				var tries atomic.Int32
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					if tries.Add(1) < 3 {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
					io.WriteString(w, `{"data":{"ok":true}}`)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Retry = c.retry }))
				resp, err := inv.Post(context.Background(), "products", []byte(c.body))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if n := len(srv.Requests()); n != c.wantTries || resp.StatusCode != c.wantCode {
					t.Errorf("server saw %d tries, caller got %d; want %d tries and %d", n, resp.StatusCode, c.wantTries, c.wantCode)
				}
			})
		}
	}
}

// TestSettingDedupe: with dedupe, identical queries in flight at once share
// one source schema request; without it, each is sent.
func TestSettingDedupe(t *testing.T) {
	cases := []struct {
		toggle   env.Toggle
		wantSent int
	}{
		{env.Enabled, 1},
		{env.Inherit, 3},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(string(p)+"/"+c.toggle.String(), func(t *testing.T) {
				started := make(chan struct{})
				var arrived atomic.Int32
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					// Hold the answer until every caller has started, and a
					// little longer, so that all of them reach the invoker
					// while the first request is in flight.
					<-started
					time.Sleep(150 * time.Millisecond)
					io.WriteString(w, `{"data":{"shared":true}}`)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = c.toggle }))
				var wg sync.WaitGroup
				bodies := make(chan string, 3)
				for range 3 {
					wg.Go(func() {
						arrived.Add(1)
						resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ shared }"}`))
						if err != nil {
							t.Error(err)
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						bodies <- string(b)
					})
				}
				for arrived.Load() < 3 {
					time.Sleep(time.Millisecond)
				}
				close(started)
				wg.Wait()
				close(bodies)
				for b := range bodies {
					if b != `{"data":{"shared":true}}` {
						t.Errorf("a caller got %q", b)
					}
				}
				if n := len(srv.Requests()); n != c.wantSent {
					t.Errorf("the server received %d requests for 3 identical queries, want %d", n, c.wantSent)
				}
			})
		}
	}
}

// TestSettingHeaderRules: headers.forward, forward_matching, rename, set and
// the HeaderValues hook, on both paths and both calls; hop-by-hop names in
// any rule are never sent, and a header the caller set wins.
func TestSettingHeaderRules(t *testing.T) {
	gw := gatewayCtx(
		"X-Forward-Me", "f", "X-Tenant-Id", "acme", "X-Tenant-Region", "eu", "X-Other", "no",
		"X-User", "u1", "Te", "trailers", "X-Hop", "h", "X-Proxy", "p",
	)
	settings := env.HeaderSettings{
		Forward:         []string{"X-Forward-Me"},
		ForwardMatching: []string{"^X-Tenant-"},
		Rename:          map[string]string{"X-User": "X-Source-User", "Te": "X-Te", "X-Hop": "Keep-Alive", "X-Proxy": "Proxy-Token"},
		Set:             map[string]string{"X-Static": "static", "Upgrade": "websocket", "Proxy-Authorization": "Basic eDp5", "Keep-Alive": "timeout=5", "Trailer": "X-Sum"},
	}
	values := map[string]transport.HeaderValueFunc{ // what code outside the module writes
		"X-Computed": func(_ context.Context, gw *http.Request) (string, bool) {
			if gw == nil {
				return "", false
			}
			return "user=" + gw.Header.Get("X-User"), true
		},
		"Proxy-Authenticate": func(context.Context, *http.Request) (string, bool) { return "Basic", true },
	}
	want := map[string]string{ // "" : must not arrive
		"X-Forward-Me": "f", "X-Tenant-Id": "acme", "X-Tenant-Region": "eu", "X-Other": "",
		"X-Source-User": "u1", "X-User": "", "X-Te": "", "Te": "", "Proxy-Token": "",
		"X-Static": "static", "Upgrade": "", "Proxy-Authorization": "", "Keep-Alive": "", "Trailer": "",
		"X-Computed": "user=u1", "Proxy-Authenticate": "",
	}
	for _, p := range paths {
		for _, call := range []string{"Post", "Do", "Do with caller headers"} {
			t.Run(string(p)+"/"+call, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := config(p, "products", srv.URL())
				s := cfg.SourceSchemas["products"]
				s.Headers = settings
				cfg.SourceSchemas["products"] = s
				inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{HeaderValues: values}))
				w := want
				switch call {
				case "Post":
					post(t, inv, gw, "products")
				default:
					req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(`{}`))
					if call == "Do with caller headers" {
						req.Header.Set("X-Static", "caller")
						req.Header.Set("X-Computed", "caller")
						req.Header.Set("X-Tenant-Id", "caller")
						w = withPairs(want, "X-Static", "caller", "X-Computed", "caller", "X-Tenant-Id", "caller")
					}
					resp, err := inv.Do(gw, "products", req)
					if err != nil {
						t.Fatal(err)
					}
					readAll(t, resp)
					if call == "Do with caller headers" && (req.Header.Get("X-Forward-Me") != "" || len(req.Header) != 3) {
						t.Errorf("Do modified the caller's request headers: %v", req.Header)
					}
				}
				got := srv.Last(t).Header
				for name, v := range w {
					if g := strings.Join(got.Values(name), ", "); g != v {
						t.Errorf("%s: server saw %q, want %q", name, g, v)
					}
				}
			})
		}
	}
}

// withPairs returns a copy of m with the pairs kv set.
func withPairs(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// orderMiddleware appends name to the request's X-Order header on the way
// in and to the response's X-Order-Back on the way out.
func orderMiddleware(name string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return wiretest.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
			r2 := req.Clone(req.Context())
			r2.Header.Add("X-Order", name)
			resp, err := next.RoundTrip(r2)
			if err == nil {
				resp.Header.Add("X-Order-Back", name)
			}
			return resp, err
		})
	}
}

// TestSettingRoundTripperHook: the RoundTripper hook serves a source schema
// that has no server at all, with the header rules and middleware still
// applied, on both paths and both calls.
func TestSettingRoundTripperHook(t *testing.T) {
	const schemaURL = "http://products.fusion.invalid/graphql"
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var mu sync.Mutex
			var seenHeaders []http.Header
			ht := &wiretest.HandlerTransport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seenHeaders = append(seenHeaders, r.Header.Clone())
				mu.Unlock()
				io.WriteString(w, `{"data":{"in":"process"}}`)
			})}
			cfg := config(p, "products", schemaURL)
			cfg.ForwardHeaders = []string{"X-Tenant"}
			s := cfg.SourceSchemas["products"]
			s.Headers.Set = map[string]string{"X-Static": "static"}
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
				RoundTripper: ht,
				Middleware:   []func(http.RoundTripper) http.RoundTripper{orderMiddleware("schema")},
			}))
			if _, body := post(t, inv, gatewayCtx("X-Tenant", "acme"), "products"); body != `{"data":{"in":"process"}}` {
				t.Errorf("Post body %q", body)
			}
			req, _ := http.NewRequest(http.MethodGet, schemaURL+"?query=%7Bok%7D", nil)
			resp, err := inv.Do(gatewayCtx("X-Tenant", "acme"), "products", req)
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, resp); body != `{"data":{"in":"process"}}` {
				t.Errorf("Do body %q", body)
			}
			if n := ht.Calls(); n != 2 {
				t.Errorf("the hook served %d calls, want 2", n)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, h := range seenHeaders {
				if h.Get("X-Tenant") != "acme" || h.Get("X-Static") != "static" || h.Get("X-Order") != "schema" {
					t.Errorf("call %d: handler saw headers %v, want forwarded, set and middleware headers", i, h)
				}
			}
		})
	}
}

// TestSettingMiddlewareOrder: global middleware runs outside the schema's,
// each list in its order, on both paths.
func TestSettingMiddlewareOrder(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv := newInvoker(t, config(p, "products", srv.URL()),
				transport.WithMiddleware(orderMiddleware("global-1"), orderMiddleware("global-2")),
				transport.WithSchemaOptions("products", transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{
					orderMiddleware("schema-1"), orderMiddleware("schema-2"),
				}}))
			resp, _ := post(t, inv, context.Background(), "products")
			if got, want := srv.Last(t).Header.Values("X-Order"), []string{"global-1", "global-2", "schema-1", "schema-2"}; !slices.Equal(got, want) {
				t.Errorf("the request passed %v, want %v", got, want)
			}
			if got, want := resp.Header.Values("X-Order-Back"), []string{"schema-2", "schema-1", "global-2", "global-1"}; !slices.Equal(got, want) {
				t.Errorf("the response passed %v, want %v", got, want)
			}
		})
	}
}

// TestSettingReloadKeepsWarmConnections: three source schemas on three
// servers, warm; a reload that changes one setting of one schema. A
// transport setting gives that schema a new connection and keeps the
// others'; a per-request setting keeps all three. The client's source
// port, as each server sees it, tells which connection a request came on.
func TestSettingReloadKeepsWarmConnections(t *testing.T) {
	cases := []struct {
		path        env.Path
		name        string
		change      func(*env.SourceSchema)
		wantNewConn bool
	}{
		{env.PathSockets, "idle_conn_timeout", func(s *env.SourceSchema) { s.IdleConnTimeout = 30 * time.Second }, true},
		{env.PathSockets, "max_conns_per_host", func(s *env.SourceSchema) { s.MaxConnsPerHost = 8 }, true},
		{env.PathSockets, "max_pending_requests", func(s *env.SourceSchema) { s.MaxPendingRequests = 8 }, true}, // part of the pool key: a new pool
		{env.PathSockets, "request_timeout", func(s *env.SourceSchema) { s.RequestTimeout = 30 * time.Second }, false},
		{env.PathSockets, "decompression", func(s *env.SourceSchema) { s.Decompression = []string{"gzip"} }, false},
		{env.PathSockets, "headers.set", func(s *env.SourceSchema) { s.Headers.Set = map[string]string{"X-New": "1"} }, false},
		{env.PathLegacy, "idle_conn_timeout", func(s *env.SourceSchema) { s.IdleConnTimeout = 30 * time.Second }, false}, // legacy's transport reads defaults only
	}
	names := []string{"products", "reviews", "inventory"}
	for _, c := range cases {
		t.Run(string(c.path)+"/"+c.name, func(t *testing.T) {
			srvs := map[string]*schemaServer{}
			var nameURL []string
			for _, n := range names {
				srvs[n] = newSchemaServer(t, nil)
				nameURL = append(nameURL, n, srvs[n].URL())
			}
			cfg := config(c.path, nameURL...)
			inv := newInvoker(t, cfg)
			warm := map[string]string{}
			for _, n := range names {
				post(t, inv, context.Background(), n)
				warm[n] = srvs[n].Last(t).Remote
			}
			next := config(c.path, nameURL...)
			s := next.SourceSchemas["reviews"]
			c.change(&s)
			next.SourceSchemas["reviews"] = s
			if err := inv.Reload(next); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				post(t, inv, context.Background(), n)
				got := srvs[n].Last(t).Remote
				if moved, want := got != warm[n], n == "reviews" && c.wantNewConn; moved != want {
					t.Errorf("%s: came from %s, before the reload from %s; want a new connection: %v", n, got, warm[n], want)
				}
			}
		})
	}
}

// stepHandler holds each request carrying X-Step: k until k requests of
// step k have arrived (or its context ends), so that step k has k requests
// in flight at once; requests without X-Step are answered at once.
func stepHandler() http.HandlerFunc {
	var mu sync.Mutex
	arrived := map[string]int{}
	all := map[string]chan struct{}{}
	return func(w http.ResponseWriter, r *http.Request) {
		if step := r.Header.Get("X-Step"); step != "" {
			k, _ := strconv.Atoi(step)
			mu.Lock()
			ch := all[step]
			if ch == nil {
				ch = make(chan struct{})
				all[step] = ch
			}
			if arrived[step]++; arrived[step] == k {
				close(ch)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{}}`)
	}
}

// TestConnLifetimeJitterOnTheWire: conn_lifetime_jitter gives each
// sockets connection its own lifetime, so connections opened together are
// replaced at different moments. Eight connections are opened one at a
// time (step k holds k requests at once, so it opens exactly one more),
// with 32 sequential requests between the steps. Without jitter every
// connection lives exactly conn_lifetime from its dial, so they close in
// the order they opened, the sequential requests keeping the expiries far
// enough apart for the server to see that order. With a jitter of 1.5s,
// far more than the whole setup, the order is shuffled: all 8 close in
// opening order about once in 8! = 40,320 runs. The setup (50 to 200ms
// under -race here) ends well inside the shortest lifetime, 500ms, so no
// connection is replaced before all 8 are open.
func TestConnLifetimeJitterOnTheWire(t *testing.T) {
	const conns = 8
	forEngines(t, func(t *testing.T, engine string) {
		srv := newWireServer(t, wiretest.Options{Handler: stepHandler()})
		cfg := engineConfig(engine, srv.URL(), func(s *env.SourceSchema) {
			s.ConnLifetime = 2 * time.Second
			s.ConnLifetimeJitter = 1500 * time.Millisecond // each lifetime in (500ms, 2s]: the setup fits in the shortest
		})
		cfg.ForwardHeaders = []string{"X-Step"}
		inv := newInvoker(t, cfg)
		for k := 1; k <= conns; k++ {
			postAtOnce(t, inv, gatewayCtx("X-Step", strconv.Itoa(k)), "products", k)
			for range 32 { // spaces the dials apart, so that without jitter the expiries are too
				post(t, inv, context.Background(), "products")
			}
			if n := len(srv.Opened()); n != k {
				t.Fatalf("after step %d the server saw %d connections, want %d (one more per step; none may expire yet)", k, n, k)
			}
		}
		opened := srv.Opened()
		closed := srv.WaitClosedN(t, conns, gapGuard, "every connection closes at the end of its lifetime")
		if got, want := slices.Sorted(slices.Values(closed)), slices.Sorted(slices.Values(opened)); !slices.Equal(got, want) {
			t.Fatalf("closed %v, want the %d connections opened %v", closed, conns, opened)
		}
		if slices.Equal(closed, opened) {
			t.Errorf("the %d connections closed in the order they opened (%v): their lifetimes carry no jitter", conns, closed)
		}
	})
}
