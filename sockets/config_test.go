package sockets_test

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/sockets"
)

// TestProxyFromLookupEnv: with proxy: environment, the proxy variables are
// read through Config.LookupEnv, not the process environment: the request
// for the schema's host goes to the proxy it names, as an absolute-form
// request, and the caller gets the proxy's answer.
func TestProxyFromLookupEnv(t *testing.T) {
	got := make(chan string, 1)
	proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.String()
		io.WriteString(w, "from the proxy")
	})
	const target = "http://products.test:4001/graphql" // not loopback, which is never proxied
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			rt := newTransport(t, engine, target, func(c *sockets.Config) {
				c.Settings.Proxy = "environment"
				c.LookupEnv = func(k string) (string, bool) {
					if k == "HTTP_PROXY" {
						return proxy.URL, true
					}
					return "", false
				}
			})
			req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(`{}`))
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v; want the answer through the proxy that LookupEnv names", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "from the proxy" {
				t.Errorf("answer %q, want the proxy's", body)
			}
			if u := <-got; u != target {
				t.Errorf("the proxy was asked for %q, want %q", u, target)
			}
		})
	}
}

// TestDefaultLogger: without Config.Logger, the Transport's events go to
// slog.Default(): TLS verification turned off is said there, naming the
// schema and the key.
func TestDefaultLogger(t *testing.T) {
	var logs wiretest.LogBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	rt, err := sockets.New(sockets.Config{Name: "products", URL: "https://127.0.0.1:1/graphql",
		Settings: env.Settings{TLS: env.TLSSettings{InsecureSkipVerify: env.Enabled}}})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "products") || !strings.Contains(l, "tls.insecure_skip_verify") {
		t.Errorf("slog.Default() got %q; want the warning that verification is off, naming products and tls.insecure_skip_verify", l)
	}
}

// TestHeaderTimeoutUnderRequestTimeout: with request_timeout set and
// longer than header_timeout, a source schema that never answers is still
// cut at header_timeout, with the header bound's error, on both engines.
func TestHeaderTimeoutUnderRequestTimeout(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			release := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { awaitOrGuard(release) })
			defer close(release)
			rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) {
				c.Settings.HeaderTimeout = 20 * time.Millisecond
				c.Settings.RequestTimeout = hangGuard / 2 // far later: were the header bound dropped, this one would cut it
			})
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			var hte *fault.HeaderTimeoutError
			if !errors.As(err, &hte) || hte.Bound != 20*time.Millisecond {
				t.Fatalf("err = %v, want a *fault.HeaderTimeoutError of 20ms", err)
			}
		})
	}
}

// TestStatsInFlight: Stats tells a connection that carries a request from
// an idle one: 1 open and 0 idle while the server holds the request, 1 and
// 1 once its answer was read.
func TestStatsInFlight(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			arrived, release := make(chan struct{}), make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				awaitOrGuard(release)
			})
			rt := newTransport(t, engine, srv.URL, nil)
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
				resp, err := rt.RoundTrip(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			<-arrived
			if st := rt.Stats(); st.Conns != 1 || st.Idle != 0 {
				t.Errorf("in flight: Stats() = %+v, want 1 connection, 0 idle", st)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if st := rt.Stats(); st.Conns != 1 || st.Idle != 1 {
				t.Errorf("after the answer: Stats() = %+v, want 1 connection, 1 idle", st)
			}
		})
	}
}

// TestAskedUpgrade: a 101 that answers the request's own Upgrade reaches
// the caller on both engines with a body that is the connection: bytes go
// both ways on it, and the server sees it end when the caller closes it.
func TestAskedUpgrade(t *testing.T) {
	type seen struct {
		got    string
		closed bool
	}
	saw := make(chan seen, 2)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(hangGuard))
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		var s seen
		ping := make([]byte, 4)
		if _, err := io.ReadFull(buf, ping); err == nil {
			s.got = string(ping)
			io.WriteString(c, "pong")
			_, err = bufio.NewReader(buf).ReadByte()
			s.closed = err == io.EOF
		}
		saw <- s
	})
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			rt := newTransport(t, engine, srv.URL, nil)
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Connection", "Upgrade")
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v; want the switch the request asked for", err)
			}
			rwc, ok := resp.Body.(io.ReadWriteCloser)
			if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
				resp.Body.Close()
				t.Fatalf("status %d, body %T; want 101 with a writable body", resp.StatusCode, resp.Body)
			}
			if _, err := io.WriteString(rwc, "ping"); err != nil {
				t.Fatal(err)
			}
			pong := make([]byte, 4)
			if _, err := io.ReadFull(rwc, pong); err != nil || string(pong) != "pong" {
				t.Fatalf("read %q, %v on the connection; want pong", pong, err)
			}
			rwc.Close()
			if s := <-saw; s.got != "ping" || !s.closed {
				t.Errorf("the server saw %q, closed %t; want ping, then the caller's close", s.got, s.closed)
			}
		})
	}
}
