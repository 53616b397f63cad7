package transport_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestNoCookies: a Set-Cookie reaches the caller untouched and is never
// sent back, on either path (neither has a cookie jar).
func TestNoCookies(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "user-1", Path: "/"})
				io.WriteString(w, "{}")
			})
			inv := newInvoker(t, config(path, "products", srv.URL()))
			first, _ := post(t, inv, context.Background(), "products")
			if got := first.Header.Get("Set-Cookie"); got != "session=user-1; Path=/" {
				t.Errorf("caller got Set-Cookie %q", got)
			}
			post(t, inv, context.Background(), "products")
			for i, r := range srv.Requests() {
				if c, ok := r.Header["Cookie"]; ok {
					t.Errorf("request %d carried Cookie %q", i, c)
				}
			}
		})
	}
}

// TestRedirects: sockets returns a 302 as it came and the other host sees
// nothing; legacy follows it.
func TestRedirects(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			other := newSchemaServer(t, nil)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL(), http.StatusFound)
			})
			inv := newInvoker(t, config(path, "products", srv.URL()))
			resp, _ := post(t, inv, context.Background(), "products")
			switch path {
			case env.PathSockets, pathH1:
				if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != other.URL() {
					t.Errorf("caller got %d Location %q, want the 302", resp.StatusCode, resp.Header.Get("Location"))
				}
				if n := len(other.Requests()); n != 0 {
					t.Errorf("the redirect target received %d requests", n)
				}
			case env.PathLegacy:
				if resp.StatusCode != http.StatusOK || len(other.Requests()) != 1 {
					t.Errorf("legacy: status %d, target saw %d requests; want the redirect followed", resp.StatusCode, len(other.Requests()))
				}
			}
		})
	}
}

// TestDecompression: the source schema compresses whatever it is asked.
// Sockets adds no Accept-Encoding and hands the gzip body over as sent;
// legacy asks for gzip and decodes it.
func TestDecompression(t *testing.T) {
	const payload = `{"data":{"products":["table","chair"]}}`
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				io.WriteString(zw, payload)
				zw.Close()
			})
			inv := newInvoker(t, config(path, "products", srv.URL()))
			resp, body := post(t, inv, context.Background(), "products")
			ae := srv.Last(t).Header.Get("Accept-Encoding")
			switch path {
			case env.PathSockets, pathH1:
				if ae != "" {
					t.Errorf("sockets sent Accept-Encoding %q", ae)
				}
				if resp.Header.Get("Content-Encoding") != "gzip" || resp.Uncompressed {
					t.Errorf("Content-Encoding %q, Uncompressed %v: want the body as sent", resp.Header.Get("Content-Encoding"), resp.Uncompressed)
				}
				zr, err := gzip.NewReader(strings.NewReader(body))
				if err != nil {
					t.Fatalf("body is not gzip: %v", err)
				}
				if plain, _ := io.ReadAll(zr); string(plain) != payload {
					t.Errorf("decoded body %q", plain)
				}
			case env.PathLegacy:
				if ae != "gzip" || !resp.Uncompressed || body != payload {
					t.Errorf("Accept-Encoding %q, Uncompressed %v, body %q: want gzip decoded", ae, resp.Uncompressed, body)
				}
			}
		})
	}
}

// TestEnvironmentProxy: legacy sends through HTTP_PROXY; sockets never
// does, even when the process environment sets it.
func TestEnvironmentProxy(t *testing.T) {
	proxy := wiretest.NewProxy(t)
	// A name that is not loopback: Go never proxies loopback addresses.
	const schemaURL = "http://products.fusion.invalid/graphql"
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	lookup := func(k string) (string, bool) {
		if strings.EqualFold(k, "HTTP_PROXY") {
			return proxy.URL, true
		}
		return "", false
	}
	legacy := newInvoker(t, config(env.PathLegacy, "products", schemaURL), transport.WithLookupEnv(lookup))
	resp, body := post(t, legacy, context.Background(), "products")
	if resp.StatusCode != 200 || body != `{"data":{"via":"proxy"}}` {
		t.Fatalf("legacy: %d %q, want the proxy's answer", resp.StatusCode, body)
	}
	if got := proxy.Last(t); got.Host != "products.fusion.invalid" {
		t.Errorf("proxy saw Host %q", got.Host)
	}

	sockets := newInvoker(t, config(env.PathSockets, "products", schemaURL), transport.WithLookupEnv(lookup))
	if _, err := sockets.Post(context.Background(), "products", []byte(`{}`)); err == nil {
		t.Error("sockets reached products.fusion.invalid: through a proxy?")
	}
	if n := len(proxy.Requests()); n != 1 {
		t.Errorf("the proxy received %d requests, want only legacy's 1", n)
	}
}

// unresponsiveListener returns the address of a loopback listener whose
// accept queue is full, so that a new connection attempt hangs in SYN_SENT
// until the dialer gives up.
func unresponsiveListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skip("raw socket:", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue; these connections are never accepted.
	for range 4 {
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		if c, err := d.Dial("tcp", addr); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return addr
}

// TestConnectTimeout: a connection that cannot be established fails with a
// timeout error that names the source schema.
func TestConnectTimeout(t *testing.T) {
	addr := unresponsiveListener(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			cfg := config(path, "products", "http://"+addr+"/graphql")
			cfg.Defaults.ConnectTimeout = 100 * time.Millisecond
			inv := newInvoker(t, cfg)
			_, err := inv.Post(context.Background(), "products", []byte(`{}`))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("error %v is not a timeout", err)
			}
			var ue *url.Error
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), `source schema "products"`) {
				t.Errorf("error %q does not name the source schema and URL", err)
			}
		})
	}
}

// TestHeaderTimeout: a request without a deadline fails when its headers
// do not come within header_timeout; a request with a deadline is not
// bounded by it; and a body that streams past the bound is not cut.
func TestHeaderTimeout(t *testing.T) {
	const bound = 50 * time.Millisecond
	for _, path := range paths {
		t.Run(string(path)+"/no headers", func(t *testing.T) {
			release := make(chan struct{})
			srv := newSchemaServer(t, wiretest.HoldHandler(release))
			defer close(release)
			cfg := config(path, "products", srv.URL())
			cfg.Defaults.HeaderTimeout = bound
			inv := newInvoker(t, cfg)
			_, err := inv.Post(context.Background(), "products", []byte(`{}`))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "header_timeout") || !strings.Contains(err.Error(), `source schema "products"`) {
				t.Fatalf("error = %v, want a header timeout naming the source schema", err)
			}
		})
		t.Run(string(path)+"/caller deadline wins", func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				<-time.After(4 * bound) // answers well after the header bound
				io.WriteString(w, "{}")
			})
			cfg := config(path, "products", srv.URL())
			cfg.Defaults.HeaderTimeout = bound
			inv := newInvoker(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, body := post(t, inv, ctx, "products")
			if resp.StatusCode != 200 || body != "{}" {
				t.Errorf("got %d %q", resp.StatusCode, body)
			}
		})
		t.Run(string(path)+"/body not cut", func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
				for i := range 4 {
					io.WriteString(w, "chunk"+strconv.Itoa(i)+"\n")
					w.(http.Flusher).Flush()
					<-time.After(bound) // the stream outlives the header bound
				}
			})
			cfg := config(path, "products", srv.URL())
			cfg.Defaults.HeaderTimeout = bound
			inv := newInvoker(t, cfg)
			resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			n := 0
			for sc.Scan() {
				n++
			}
			if err := sc.Err(); err != nil || n != 4 {
				t.Errorf("read %d chunks, error %v; want 4 and none", n, err)
			}
		})
	}
}
