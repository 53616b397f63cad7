package sockets_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/sockets"
)

var engines = []string{env.EngineH1, env.EngineNetHTTP}

// server is a loopback source schema that counts the connections it
// accepted and closed.
type server struct {
	*httptest.Server
	opened, closed atomic.Int64
	closedCh       chan struct{} // one send per closed connection
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{closedCh: make(chan struct{}, 1024)}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
			s.closedCh <- struct{}{}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTransport(t *testing.T, engine, url string, edit func(*sockets.Config)) *sockets.Transport {
	t.Helper()
	c := sockets.Config{Name: "products", URL: url, Settings: env.Settings{Engine: engine}, Logger: slog.New(slog.DiscardHandler)}
	if edit != nil {
		edit(&c)
	}
	rt, err := sockets.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func post(t *testing.T, rt http.RoundTripper, url, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// hangGuard bounds a wait that only a broken transport would make long:
// the test then fails instead of hanging.
const hangGuard = 10 * time.Second

// awaitOrGuard waits for ch to close, or hangGuard.
func awaitOrGuard(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(hangGuard):
	}
}

// closeBody is a request body that records its Close.
type closeBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *closeBody) Close() error { b.closed.Store(true); return nil }

func newCloseBody(s string) *closeBody { return &closeBody{Reader: strings.NewReader(s)} }

// TestSendsOnlyWhatIsAsked: the source schema receives the request's own
// headers and nothing the transport made up (no Accept-Encoding, no
// Cookie, no proxy headers); a redirect comes back as it is, followed by
// nobody; the second request reuses the first one's warm connection.
func TestSendsOnlyWhatIsAsked(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			var got []http.Header
			var mu sync.Mutex
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Header.Clone())
				mu.Unlock()
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "s"})
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			})
			rt := newTransport(t, engine, srv.URL+"/graphql", nil)
			for range 2 {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{}`))
				req.Header.Set("X-Asked", "1")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" {
					t.Fatalf("status %d, Location %q: want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("server saw %d requests, want 2 (no redirect followed)", len(got))
			}
			for i, h := range got {
				for name := range h {
					switch name {
					case "X-Asked", "Content-Length", "User-Agent":
					default:
						t.Errorf("request %d carried %s: %q, which nobody asked for", i, name, h[name])
					}
				}
				if h.Get("X-Asked") != "1" {
					t.Errorf("request %d lost X-Asked", i)
				}
			}
			if n := srv.opened.Load(); n != 1 {
				t.Errorf("server accepted %d connections for two sequential requests, want 1 (warm reuse)", n)
			}
			if st := rt.Stats(); st.Engine != engine || st.Conns != 1 || st.Idle != 1 {
				t.Errorf("Stats() = %+v, want engine %s, 1 connection, idle", st, engine)
			}
		})
	}
}

// TestOwnAnswers: callers on many goroutines each get their own answer,
// whole, over the shared pool.
func TestOwnAnswers(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body) // whole, before the answer: net/http's server is not full duplex
				w.Write(b)
			})
			rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) { c.Settings.MaxConnsPerHost = 3 })
			var wg sync.WaitGroup
			errs := make(chan error, 8*40)
			for g := range 8 {
				wg.Go(func() {
					for i := range 40 {
						want := fmt.Sprintf(`{"caller":%d,"call":%d,"pad":%q}`, g, i, strings.Repeat("x", g*97+i))
						req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(want))
						resp, err := rt.RoundTrip(req)
						if err != nil {
							errs <- err
							return
						}
						got, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || string(got) != want {
							errs <- fmt.Errorf("caller %d call %d got %q (%v), want %q", g, i, got, err, want)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if st := rt.Stats(); st.Conns > 3 {
				t.Errorf("%d connections open, max_conns_per_host is 3", st.Conns)
			}
		})
	}
}

// TestWrongTarget: a request for another address is refused unsent, with
// an error naming the schema.
func TestWrongTarget(t *testing.T) {
	var hits atomic.Int64
	srv := newServer(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	other := newServer(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	rt := newTransport(t, env.EngineH1, srv.URL, nil)
	body := newCloseBody(`{}`)
	req, _ := http.NewRequest(http.MethodPost, other.URL, body)
	_, err := rt.RoundTrip(req)
	if !errors.Is(err, fault.ErrWrongTarget) || !strings.Contains(err.Error(), `"products"`) {
		t.Fatalf("err = %v, want fault.ErrWrongTarget naming products", err)
	}
	if !body.closed.Load() {
		t.Error("the refused request's body was not closed")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached a server", n)
	}
}

// TestHeaderTimeout: a source schema that never answers is cut at
// header_timeout, with the bound in the error, on both engines, also
// under a later request_timeout (which is no caller deadline); a caller's
// own deadline wins over the bound.
func TestHeaderTimeout(t *testing.T) {
	for _, engine := range engines {
		for _, requestTimeout := range []time.Duration{0, time.Hour} {
			t.Run(fmt.Sprintf("%s/request_timeout=%v", engine, requestTimeout), func(t *testing.T) {
				headerTimeout(t, engine, requestTimeout)
			})
		}
	}
}

// headerTimeout is one case of TestHeaderTimeout.
func headerTimeout(t *testing.T, engine string, requestTimeout time.Duration) {
	release := make(chan struct{})
	// The server answers at the latest after hangGuard, so that a request
	// the bound does not cut fails the test rather than hang it.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { awaitOrGuard(release) })
	defer close(release)
	rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) {
		c.Settings.HeaderTimeout = 20 * time.Millisecond
		c.Settings.RequestTimeout = requestTimeout
	})
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := rt.RoundTrip(req)
	var hte *fault.HeaderTimeoutError
	if !errors.As(err, &hte) || hte.Bound != 20*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a *fault.HeaderTimeoutError of 20ms", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err = rt.RoundTrip(req); !errors.Is(err, context.Canceled) || errors.As(err, &hte) {
		t.Fatalf("err = %v, want the caller's context.Canceled", err)
	}
}

// TestRequestTimeout: sockets.New takes request_timeout, and on both
// engines it bounds the request whole: a source schema that never answers
// fails the RoundTrip, and one that sends its headers and then stalls
// fails the body's read, each with a *fault.RequestTimeoutError of the
// setting, never the header bound's error.
func TestRequestTimeout(t *testing.T) {
	// bound leaves a loopback server time to send its headers, so that
	// the stalled body's case is cut in the body, under load too.
	const bound = 100 * time.Millisecond
	for _, engine := range engines {
		for _, tc := range []struct {
			name    string
			headers bool // the server sends its headers before it stalls
		}{
			{"no answer", false},
			{"stalled body", true},
		} {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				release := make(chan struct{})
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
					if tc.headers {
						w.WriteHeader(http.StatusOK)
						w.Write([]byte(`{"data":`))
						http.NewResponseController(w).Flush()
					}
					<-release
				})
				defer close(release)
				rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) { c.Settings.RequestTimeout = bound })
				// A caller's deadline far later than the bound: were the
				// bound ignored, the test would fail when it passes
				// rather than hang.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
				resp, err := rt.RoundTrip(req)
				if tc.headers {
					if err != nil {
						t.Fatalf("RoundTrip: %v; want the headers, then a cut body", err)
					}
					defer resp.Body.Close()
					_, err = io.ReadAll(resp.Body)
				} else if err == nil {
					resp.Body.Close()
				}
				var rte *fault.RequestTimeoutError
				var hte *fault.HeaderTimeoutError
				if !errors.As(err, &rte) || rte.Bound != bound || !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &hte) {
					t.Fatalf("err = %v, want a *fault.RequestTimeoutError of %s", err, bound)
				}
				if !strings.Contains(err.Error(), `source schema "products"`) {
					t.Errorf("err = %v, want it to name the source schema", err)
				}
			})
		}
	}
}

// TestNoDecompression: a gzip answer reaches the caller as the server
// sent it; with decompression: [gzip] it is asked for and decoded.
func TestNoDecompression(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, `{"data":{}}`)
	zw.Close()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Asked-Encoding", r.Header.Get("Accept-Encoding"))
		w.Write(zipped.Bytes())
	})
	for _, tc := range []struct {
		codings           []string
		wantBody, wantAsk string
	}{
		{nil, zipped.String(), ""},
		{[]string{"gzip"}, `{"data":{}}`, "gzip"},
	} {
		rt := newTransport(t, env.EngineH1, srv.URL, func(c *sockets.Config) { c.Settings.Decompression = tc.codings })
		resp, body := post(t, rt, srv.URL, `{}`)
		if body != tc.wantBody || resp.Header.Get("X-Asked-Encoding") != tc.wantAsk {
			t.Errorf("decompression %v: body %q, asked %q; want %q, %q", tc.codings, body, resp.Header.Get("X-Asked-Encoding"), tc.wantBody, tc.wantAsk)
		}
	}
}

// TestClose: Close closes the idle connection at once, and a later
// request fails with fault.ErrClosed, unsent.
func TestClose(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			var hits atomic.Int64
			srv := newServer(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
			rt := newTransport(t, engine, srv.URL, nil)
			post(t, rt, srv.URL, `{}`)
			rt.Close()
			select {
			case <-srv.closedCh:
			case <-time.After(10 * time.Second):
				t.Fatal("the idle connection was not closed by Close")
			}
			body := newCloseBody(`{}`)
			req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
			if _, err := rt.RoundTrip(req); !errors.Is(err, fault.ErrClosed) {
				t.Fatalf("after Close: err = %v, want fault.ErrClosed", err)
			}
			if !body.closed.Load() {
				t.Error("after Close: the refused request's body was not closed")
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

// TestUnaskedUpgrade: a 101 to a request that asked for no upgrade never
// reaches the caller, and its connection is closed.
func TestUnaskedUpgrade(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		bufio.NewReader(c).ReadByte() // until the client closes
	})
	for _, engine := range engines {
		rt := newTransport(t, engine, srv.URL, nil)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
		if resp, err := rt.RoundTrip(req); !errors.Is(err, fault.ErrUnaskedUpgrade) {
			if err == nil {
				resp.Body.Close()
			}
			t.Fatalf("%s: err = %v, want fault.ErrUnaskedUpgrade", engine, err)
		}
		select {
		case <-srv.closedCh:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the upgraded connection was not closed", engine)
		}
	}
}

// TestNewErrors: New names what is wrong and opens nothing.
func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    sockets.Config
		want string
	}{
		{"no url", sockets.Config{}, "url"},
		{"relative url", sockets.Config{URL: "/graphql"}, "url"},
		{"request path key", sockets.Config{URL: "http://127.0.0.1:1", Settings: env.Settings{Retry: env.RetrySettings{MaxAttempts: 3}}}, "retry.max_attempts is applied by the request path"},
		{"breaker", sockets.Config{URL: "http://127.0.0.1:1", Settings: env.Settings{CircuitBreaker: env.BreakerSettings{Enabled: env.Enabled}}}, "circuit_breaker.enabled"},
		{"bad engine", sockets.Config{Name: "p", URL: "http://127.0.0.1:1", Settings: env.Settings{Engine: "fast"}}, "engine"},
		{"missing ca", sockets.Config{URL: "https://127.0.0.1:1", Settings: env.Settings{TLS: env.TLSSettings{CAFile: "/nonexistent/ca.pem"}}}, "/nonexistent/ca.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := sockets.New(tc.c)
			if err == nil {
				rt.Close()
				t.Fatalf("New(%+v) succeeded", tc.c)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want it to name %q", err, tc.want)
			}
		})
	}
}

// TestCloseUnderLoad: Close while 8 callers send: each call gets its own
// answer or fault.ErrClosed, never another's bytes or another error; once
// the callers are done every connection the server accepted is closed.
func TestCloseUnderLoad(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Write(b)
			})
			rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) { c.Settings.MaxConnsPerHost = 4 })
			var answered, refused atomic.Int64
			halfway := make(chan struct{})
			closed := make(chan struct{}) // closed once rt.Close has returned
			var once sync.Once
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						afterClose := false
						select {
						case <-closed:
							afterClose = true
						default:
						}
						want := fmt.Sprintf(`{"caller":%d,"call":%d}`, g, i)
						body := newCloseBody(want)
						req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
						resp, err := rt.RoundTrip(req)
						if errors.Is(err, fault.ErrClosed) {
							refused.Add(1)
							if !body.closed.Load() {
								errs <- fmt.Errorf("caller %d call %d: refused with fault.ErrClosed, its body not closed", g, i)
							}
							return
						}
						if afterClose {
							if err == nil {
								resp.Body.Close()
							}
							errs <- fmt.Errorf("caller %d call %d, started after Close returned: %v, want fault.ErrClosed", g, i, err)
							return
						}
						if err != nil {
							errs <- err
							return
						}
						got, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || string(got) != want {
							errs <- fmt.Errorf("caller %d call %d got %q (%v), want %q", g, i, got, err, want)
							return
						}
						if answered.Add(1) == 200 {
							once.Do(func() { close(halfway) })
						}
					}
				})
			}
			select {
			case <-halfway:
			case <-time.After(30 * time.Second):
				t.Fatal("200 calls did not complete")
			}
			rt.Close()
			close(closed)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if refused.Load() != 8 {
				t.Errorf("%d callers ended with fault.ErrClosed, want all 8", refused.Load())
			}
			for srv.closed.Load() < srv.opened.Load() {
				select {
				case <-srv.closedCh:
				case <-time.After(10 * time.Second):
					t.Fatalf("%d of %d connections still open after Close and the last call", srv.opened.Load()-srv.closed.Load(), srv.opened.Load())
				}
			}
		})
	}
}

// netConnWrapper is what a metrics Dial hook returns, with the documented
// way to the socket (NetConn), so engine h1 can check it before reuse.
type netConnWrapper struct{ net.Conn }

func (c netConnWrapper) NetConn() net.Conn { return c.Conn }

// TestDialHook: Config.Dial opens every connection, asked for the schema's
// host and port; with a wrapper that shows its socket, the connection is
// reused on both engines.
func TestDialHook(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			srv := newServer(t, func(http.ResponseWriter, *http.Request) {})
			var mu sync.Mutex
			var dialled []string
			rt := newTransport(t, engine, srv.URL, func(c *sockets.Config) {
				c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					mu.Lock()
					dialled = append(dialled, addr)
					mu.Unlock()
					conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return netConnWrapper{conn}, nil
				}
			})
			for range 3 {
				post(t, rt, srv.URL, `{}`)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(dialled) != 1 || dialled[0] != srv.Listener.Addr().String() {
				t.Errorf("Dial called for %v, want once, for %s", dialled, srv.Listener.Addr())
			}
			if n := srv.opened.Load(); n != 1 {
				t.Errorf("server accepted %d connections for 3 calls, want 1", n)
			}
		})
	}
}
