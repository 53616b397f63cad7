package sockets_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/sockets"
)

// TestTLS: over https the Transport verifies the server against
// tls.ca_file, presents the client certificate of tls.cert_file and
// tls.key_file, and calls VerifyConnection after the handshake; a
// VerifyConnection error aborts the call before anything is sent. On h1
// (http_version 1.1) and nethttp (which negotiates HTTP/2).
func TestTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	certFile, keyFile := pki.ClientFiles(t, "gateway")
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-Client", r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.TLS = pki.ServerConfig(t, "127.0.0.1")
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		engine, version, wantProto string
	}{
		{env.EngineH1, "1.1", "HTTP/1.1"},
		{env.EngineNetHTTP, "", "HTTP/2.0"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			var verified atomic.Int64
			rt := newTransport(t, tc.engine, srv.URL, func(c *sockets.Config) {
				c.Settings.HTTPVersion = tc.version
				c.Settings.TLS = env.TLSSettings{CAFile: pki.CAFile, CertFile: certFile, KeyFile: keyFile}
				c.VerifyConnection = func(cs tls.ConnectionState) error {
					verified.Add(1)
					return nil
				}
			})
			resp, _ := post(t, rt, srv.URL, `{}`)
			if resp.Header.Get("X-Client") != "gateway" || resp.Header.Get("X-Proto") != tc.wantProto || verified.Load() != 1 {
				t.Errorf("server saw client %q over %s, VerifyConnection called %d times; want gateway, %s, once",
					resp.Header.Get("X-Client"), resp.Header.Get("X-Proto"), verified.Load(), tc.wantProto)
			}
			if st := rt.Stats(); st.Engine != tc.engine {
				t.Errorf("engine %s, want %s", st.Engine, tc.engine)
			}

			before := hits.Load()
			rt2 := newTransport(t, tc.engine, srv.URL, func(c *sockets.Config) {
				c.Settings.HTTPVersion = tc.version
				c.Settings.TLS = env.TLSSettings{CAFile: pki.CAFile, CertFile: certFile, KeyFile: keyFile}
				c.VerifyConnection = func(tls.ConnectionState) error { return errors.New("pinned certificate mismatch") }
			})
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
			if _, err := rt2.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "pinned certificate mismatch") {
				t.Errorf("err = %v, want VerifyConnection's error", err)
			}
			if hits.Load() != before {
				t.Error("a request reached the server through a connection VerifyConnection refused")
			}
		})
	}
}
