package sockets

// Each setting of env.Settings that only the sockets path's pool and
// engines implement, observed where it acts: on the wire, at a server that
// records what only a server sees (the TLS state, the protocol, the
// connection, the frames), or in the process (the log, the dialer). The
// settings both paths honour are the root's settings_test.go, the
// cross-path suite.

import (
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

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestSettingTLS: the tls.* keys and the VerifyConnection hook, against TLS
// servers that demand a client certificate, name another host, cap the
// version or sign their own certificate.
func TestSettingTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	clientCert, clientKey := pki.ClientFiles(t, "gateway")
	caOnly := &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}
	mtls := wiretest.NewServer(t, wiretest.Options{TLS: pki.ServerConfig(t, "127.0.0.1")})
	named := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "products.internal")}}})
	capped := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: caOnly.Certificates, MaxVersion: tls.VersionTLS12}})
	plain := wiretest.NewServer(t, wiretest.Options{TLS: caOnly})
	selfSigned := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{testpki.SelfSigned(t, "127.0.0.1")}}})
	errPinned := errors.New("server key is not the pinned one")
	var hookSaw atomic.Value

	var (
		okServerSees = func(check func(t *testing.T, got wiretest.Request)) func(*testing.T, []wiretest.Request, error) {
			return func(t *testing.T, reqs []wiretest.Request, err error) {
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
		fails = func(check func(t *testing.T, err error)) func(*testing.T, []wiretest.Request, error) {
			return func(t *testing.T, reqs []wiretest.Request, err error) {
				t.Helper()
				if err == nil {
					t.Fatal("the call succeeded, want an error")
				}
				if check != nil {
					check(t, err)
				}
				if len(reqs) != 0 {
					t.Errorf("the server answered %d requests, want none", len(reqs))
				}
			}
		}
		version = func(want uint16) func(*testing.T, wiretest.Request) {
			return func(t *testing.T, got wiretest.Request) {
				if got.TLS == nil || got.TLS.Version != want {
					t.Errorf("server saw TLS version %s, want %s", tlsVersionName(got.TLS), tls.VersionName(want))
				}
			}
		}
	)
	cases := []struct {
		name  string
		srv   *wiretest.Server
		tls   env.TLSSettings
		hooks hooks
		check func(t *testing.T, reqs []wiretest.Request, err error) // reqs: what the server received in this case
	}{
		{"client certificate demanded, none configured", mtls, env.TLSSettings{CAFile: pki.CAFile}, hooks{}, fails(func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), "certificate required") {
				t.Errorf("error %q does not say that a certificate was required", err)
			}
		})},
		{"cert_file and key_file", mtls, env.TLSSettings{CAFile: pki.CAFile, CertFile: clientCert, KeyFile: clientKey}, hooks{}, okServerSees(func(t *testing.T, got wiretest.Request) {
			if len(got.TLS.PeerCertificates) == 0 || got.TLS.PeerCertificates[0].Subject.CommonName != "gateway" {
				t.Errorf("server saw client certificates %v, want CN gateway", got.TLS.PeerCertificates)
			}
		})},
		{"server_name verifies and is sent in SNI", named, env.TLSSettings{CAFile: pki.CAFile, ServerName: "products.internal"}, hooks{}, okServerSees(func(t *testing.T, got wiretest.Request) {
			if got.TLS.ServerName != "products.internal" {
				t.Errorf("server saw SNI %q, want products.internal", got.TLS.ServerName)
			}
		})},
		{"without server_name the URL's host is verified", named, env.TLSSettings{CAFile: pki.CAFile}, hooks{}, fails(func(t *testing.T, err error) {
			var he x509.HostnameError
			if !errors.As(err, &he) {
				t.Errorf("error %v is not an x509.HostnameError", err)
			}
		})},
		{"min_version 1.3 against a server capped at 1.2", capped, env.TLSSettings{CAFile: pki.CAFile, MinVersion: "1.3"}, hooks{}, fails(nil)},
		{"the capped server answers by default, with 1.2", capped, env.TLSSettings{CAFile: pki.CAFile}, hooks{}, okServerSees(version(tls.VersionTLS12))},
		{"max_version 1.2", plain, env.TLSSettings{CAFile: pki.CAFile, MaxVersion: "1.2"}, hooks{}, okServerSees(version(tls.VersionTLS12))},
		{"default version is 1.3", plain, env.TLSSettings{CAFile: pki.CAFile}, hooks{}, okServerSees(version(tls.VersionTLS13))},
		{"default verifies against the system roots", selfSigned, env.TLSSettings{}, hooks{}, fails(func(t *testing.T, err error) {
			var ve *tls.CertificateVerificationError
			if !errors.As(err, &ve) {
				t.Errorf("error %v is not a *tls.CertificateVerificationError", err)
			}
		})},
		{"insecure_skip_verify", selfSigned, env.TLSSettings{InsecureSkipVerify: env.Enabled}, hooks{}, okServerSees(func(*testing.T, wiretest.Request) {})},
		{"VerifyConnection error aborts", plain, env.TLSSettings{CAFile: pki.CAFile}, hooks{verify: func(tls.ConnectionState) error { return errPinned }}, fails(func(t *testing.T, err error) {
			if !errors.Is(err, errPinned) {
				t.Errorf("error %v does not wrap the hook's error", err)
			}
		})},
		{"VerifyConnection sees the verified chain", plain, env.TLSSettings{CAFile: pki.CAFile}, hooks{verify: func(cs tls.ConnectionState) error {
			if len(cs.VerifiedChains) > 0 {
				hookSaw.Store(cs.VerifiedChains[0][len(cs.VerifiedChains[0])-1].Subject.CommonName)
			}
			return nil
		}}, okServerSees(func(t *testing.T, _ wiretest.Request) {
			if got, _ := hookSaw.Load().(string); got != "fusion test CA" {
				t.Errorf("hook saw a chain ending in %q, want the test CA", got)
			}
		})},
	}
	forEngines(t, func(t *testing.T, engine string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := len(c.srv.Requests())
				var logs syncBuffer
				h := c.hooks
				h.logs = &logs
				tr := openHooked(t, engineOn(engine, c.srv.SchemaURL(), func(s *env.SourceSchema) { s.TLS = c.tls }), h)
				ranOn(t, engine, tr)
				resp, err := sendResending(tr, gqlRequest(context.Background(), c.srv.SchemaURL(), `{"query":"{ ok }"}`))
				if err == nil {
					readBody(t, resp)
				}
				c.check(t, c.srv.Requests()[before:], err)
				warned := strings.Contains(logs.String(), "tls.insecure_skip_verify") && strings.Contains(logs.String(), "level=WARN")
				if want := c.tls.InsecureSkipVerify.On(); warned != want {
					t.Errorf("warning about tls.insecure_skip_verify logged: %v, want %v; log:\n%s", warned, want, logs.String())
				}
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

// TestSettingTLSFiles: a TLS file that cannot be used stops the schema's
// Key (and so transport.New, which passes the error on as it is) with an
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
				err := keyErr(t, engineOn(engine, "https://127.0.0.1:1/graphql", func(s *env.SourceSchema) { s.TLS = c.tls }))
				if err == nil {
					t.Fatal("Key succeeded")
				}
				if !strings.HasPrefix(err.Error(), c.want) {
					t.Errorf("Key error %q, want it to start with %q", err, c.want)
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
	h2cOnly := wiretest.NewServer(t, wiretest.Options{H2COnly: true})
	h2 := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2", "http/1.1"}})
	h1 := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"http/1.1"}})
	noALPN := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{}})
	cases := []struct {
		name            string
		srv             *wiretest.Server
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
			tr := openHooked(t, netHTTPOn(c.srv.SchemaURL(), func(s *env.SourceSchema) {
				s.HTTPVersion, s.VersionPolicy = c.version, c.policy
				s.TLS.CAFile = pki.CAFile
			}), hooks{})
			resp, err := sendResending(tr, gqlRequest(context.Background(), c.srv.SchemaURL(), `{}`))
			if c.wantProto == 0 {
				if err == nil {
					body := readBody(t, resp)
					t.Fatalf("got %s %d %q, want the call to fail. %s", resp.Proto, resp.StatusCode, body, c.why)
				}
				return
			}
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			readBody(t, resp)
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
			tr := openHooked(t, netHTTPOn(srv.SchemaURL(), func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.PingInterval = c.interval
			}), hooks{})
			mustSendRead(t, tr, context.Background(), srv.SchemaURL()) // the connection is warm and idle now
			if c.wantPings {
				select {
				case <-pl.Pings:
				case <-time.After(testTimeout):
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
			tr := openHooked(t, netHTTPOn(srv.SchemaURL(), func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.PingInterval = 50 * time.Millisecond
				s.HTTP2.PingTimeout = c.timeout
			}), hooks{})
			mustSendRead(t, tr, context.Background(), srv.SchemaURL())
			first := srv.Last(t).Remote
			select {
			case <-pl.Pings:
			case <-time.After(testTimeout):
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
			mustSendRead(t, tr, context.Background(), srv.SchemaURL())
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
			srv := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: cert}, ALPN: []string{"h2"}, MaxStreams: 1, Handler: slow})
			cfg := netHTTPOn(srv.SchemaURL(), func(s *env.SourceSchema) {
				s.TLS.CAFile = pki.CAFile
				s.HTTP2.MultipleConnections = c.toggle
			})
			tr := openHooked(t, cfg, hooks{})
			if c.warm {
				mustSendRead(t, tr, context.Background(), srv.SchemaURL())
			}
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					resp, err := sendResending(tr, gqlRequest(ctx, srv.SchemaURL(), `{}`, "X-Slow", "1"))
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
	srv := wiretest.NewServer(t, wiretest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}}, ALPN: []string{"h2"}, MaxStreams: 100, Handler: func(w http.ResponseWriter, r *http.Request) {
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
	tr := openHooked(t, netHTTPOn(srv.SchemaURL(), func(s *env.SourceSchema) {
		s.TLS.CAFile = pki.CAFile
		s.HTTP2.MultipleConnections = env.Disabled
	}), hooks{})
	for _, n := range []int{3, 6} {
		mu.Lock()
		want.Store(int32(n))
		together = make(chan struct{})
		mu.Unlock()
		late := 0
		for _, code := range sendAtOnce(t, tr, context.Background(), srv.SchemaURL(), n) {
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
	srv := wiretest.NewServer(t, wiretest.Options{Handler: wiretest.CompressingHandler(payload)})
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
				rt := withMiddleware(t, engineOn(engine, url, func(s *env.SourceSchema) { s.Decompression = c.codings }))
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
				if c.callerAsks != "" {
					req.Header.Set("Accept-Encoding", c.callerAsks)
				}
				resp, err := sendResending(rt, req)
				if err != nil {
					t.Fatal(err)
				}
				body := readBody(t, resp)
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
			srv := wiretest.NewServer(t, wiretest.Options{Listener: ln, URL: schemaURL})
			tr := openHooked(t, engineOn(engine, schemaURL, func(s *env.SourceSchema) { s.UnixSocket = sock }), hooks{})
			ranOn(t, engine, tr)
			resp, body := mustSendRead(t, tr, context.Background(), schemaURL)
			if resp.StatusCode != 200 || body != `{"data":{"ok":true}}` {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if got := srv.Last(t); got.Host != "products.internal" || got.RequestURI != "/graphql" {
				t.Errorf("server saw Host %q, target %q; want products.internal and /graphql", got.Host, got.RequestURI)
			}
		})
		t.Run("Dial hook", func(t *testing.T) {
			srv := wiretest.NewServer(t, wiretest.Options{URL: schemaURL})
			dr := &wiretest.DialRecorder{To: srv.Listener.Addr().String()}
			tr := openHooked(t, engineOn(engine, schemaURL, nil), hooks{dial: dr.Dial})
			ranOn(t, engine, tr)
			mustSendRead(t, tr, context.Background(), schemaURL)
			mustSendRead(t, tr, context.Background(), schemaURL)
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
		{"proxy URL", proxy.URL, lookup(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(proxy.Requests())
			dr := &wiretest.DialRecorder{}
			tr := openHooked(t, netHTTPOn(schemaURL, func(s *env.SourceSchema) { s.Proxy = c.proxy }), hooks{lookupEnv: c.lookup, dial: dr.Dial})
			resp, err := sendResending(tr, gqlRequest(context.Background(), schemaURL, `{}`))
			reached := proxy.Requests()[before:]
			if !c.wantProxy {
				if err == nil {
					readBody(t, resp)
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
			if body := readBody(t, resp); body != `{"data":{"via":"proxy"}}` {
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
	target := wiretest.NewServer(t, wiretest.Options{})
	proxy := wiretest.NewProxy(t)
	tr := openHooked(t, netHTTPOn(target.SchemaURL(), func(s *env.SourceSchema) { s.Proxy = proxy.URL }), hooks{})
	if _, body := mustSendRead(t, tr, context.Background(), target.SchemaURL()); body != `{"data":{"via":"proxy"}}` {
		t.Errorf("body %q, want the proxy's answer", body)
	}
	if got := proxy.Last(t).RequestURI; got != target.SchemaURL() {
		t.Errorf("proxy saw target %q, want %q", got, target.SchemaURL())
	}
	if n := len(target.Requests()); n != 0 {
		t.Errorf("the source schema was reached directly %d times", n)
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
		srv := wiretest.NewServer(t, wiretest.Options{})
		ct := &wiretest.CloseTimer{Ages: make(chan time.Duration, 4)}
		tr := openHooked(t, engineOn(engine, srv.SchemaURL(), func(s *env.SourceSchema) {
			s.ConnLifetime = lifetime
			s.ConnLifetimeJitter = env.Off
		}), hooks{dial: ct.Dial})
		ranOn(t, engine, tr)
		mustSendRead(t, tr, context.Background(), srv.SchemaURL())
		select {
		case age := <-ct.Ages:
			if age < lifetime {
				t.Errorf("the connection was closed at age %s, before its conn_lifetime %s", age, lifetime)
			}
		case <-time.After(testTimeout):
			t.Fatal("the connection was not closed at its lifetime")
		}
	})
}

// TestSettingKeepAlive: keep_alive sets the TCP keep-alive probes of the
// source schema's connections, on each engine. Probes cannot be seen on
// loopback without a packet capture, so the client socket's kernel timer
// is read instead. (The legacy path's, from defaults, is the root's.)
func TestSettingKeepAlive(t *testing.T) {
	cases := []struct {
		name      string
		keepAlive time.Duration
		wantTimer bool
	}{
		{"3s", 3 * time.Second, true},
		{"off", env.Off, false},
	}
	forEngines(t, func(t *testing.T, engine string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				srv := wiretest.NewServer(t, wiretest.Options{})
				tr := openHooked(t, engineOn(engine, srv.SchemaURL(), func(s *env.SourceSchema) { s.KeepAlive = c.keepAlive }), hooks{})
				ranOn(t, engine, tr)
				mustSendRead(t, tr, context.Background(), srv.SchemaURL())
				kind, left := wiretest.SocketTimer(t, srv.Last(t).Remote)
				switch {
				case c.wantTimer && (kind != "02" || left > c.keepAlive):
					t.Errorf("socket timer %s with %s left, want the keep-alive timer (02) within %s", kind, left, c.keepAlive)
				case !c.wantTimer && kind != "00":
					t.Errorf("socket timer %s with %s left, want none (00)", kind, left)
				}
			})
		}
	})
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
		srv := wiretest.NewServer(t, wiretest.Options{Handler: stepHandler()})
		cfg := engineOn(engine, srv.SchemaURL(), func(s *env.SourceSchema) {
			s.ConnLifetime = 2 * time.Second
			s.ConnLifetimeJitter = 1500 * time.Millisecond // each lifetime in (500ms, 2s]: the setup fits in the shortest
		})
		tr := openHooked(t, cfg, hooks{})
		ranOn(t, engine, tr)
		for k := 1; k <= conns; k++ {
			sendAtOnce(t, tr, context.Background(), srv.SchemaURL(), k, "X-Step", strconv.Itoa(k))
			for range 32 { // spaces the dials apart, so that without jitter the expiries are too
				mustSendRead(t, tr, context.Background(), srv.SchemaURL())
			}
			if n := len(srv.Opened()); n != k {
				t.Fatalf("after step %d the server saw %d connections, want %d (one more per step; none may expire yet)", k, n, k)
			}
		}
		opened := srv.Opened()
		closed := srv.WaitClosedN(t, conns, testTimeout, "every connection closes at the end of its lifetime")
		if got, want := slices.Sorted(slices.Values(closed)), slices.Sorted(slices.Values(opened)); !slices.Equal(got, want) {
			t.Fatalf("closed %v, want the %d connections opened %v", closed, conns, opened)
		}
		if slices.Equal(closed, opened) {
			t.Errorf("the %d connections closed in the order they opened (%v): their lifetimes carry no jitter", conns, closed)
		}
	})
}

// TestSettingTLSHandshakeTimeout: tls_handshake_timeout bounds a handshake
// the server never answers, on each engine, well before the caller's own
// deadline. (request_timeout and header_timeout, which the request path
// applies on both paths, are the root's TestSettingTimeouts.)
func TestSettingTLSHandshakeTimeout(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		u := "https://" + wiretest.SilentListener(t) + "/graphql"
		tr := openHooked(t, engineOn(engine, u, func(s *env.SourceSchema) {
			s.TLSHandshakeTimeout = 100 * time.Millisecond
		}), hooks{})
		ranOn(t, engine, tr)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, err := sendResending(tr, gqlRequest(ctx, u, `{}`))
		if err == nil || !strings.Contains(err.Error(), "TLS handshake timeout") || ctx.Err() != nil {
			t.Errorf("error %v, want net/http's TLS handshake timeout", err)
		}
	})
}
