package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// TestPostFuncCancel: a PostFunc whose context is cancelled while the
// source schema holds its request returns the context's error, without a
// call of the callback, on every path (on h1, the pooled call's context is
// the caller's in every way but its Borrow).
func TestPostFuncCancel(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				// Answers at the latest after 10s, so that a call that
				// ignored its cancellation fails the test, not hangs it.
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				io.WriteString(w, `{"data":{}}`)
			})
			inv := newInvoker(t, config(path, "products", srv.URL()))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-arrived
				cancel()
			}()
			called := false
			err := inv.PostFunc(ctx, "products", []byte(`{"query":"{ a }"}`), func(*http.Response) error { called = true; return nil })
			if !errors.Is(err, context.Canceled) || called {
				t.Errorf("PostFunc = %v (callback called %t), want context.Canceled and no call", err, called)
			}
		})
	}
}

// unsentConn is a connection whose first Write fails before a byte is
// written, as on a socket the peer reset while it was idle; NetConn shows
// its socket, so engine h1 keeps it.
type unsentConn struct {
	net.Conn
	failed bool
}

func (c *unsentConn) Write(p []byte) (int, error) {
	if !c.failed {
		c.failed = true
		return 0, errors.New("write: broken pipe")
	}
	return c.Conn.Write(p)
}

func (c *unsentConn) NetConn() net.Conn { return c.Conn }

// TestPostFuncResendUnsent: on both engines, a PostFunc whose first
// attempt failed before a byte of it was written is sent again on a new
// connection with its whole body (its pooled call can rewind the body),
// and the callback gets the answer to it.
func TestPostFuncResendUnsent(t *testing.T) {
	for _, path := range []env.Path{env.PathSockets, pathH1} {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			var dials atomic.Int64
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				if dials.Add(1) == 1 {
					return &unsentConn{Conn: c}, nil
				}
				return &unsentConn{Conn: c, failed: true}, nil
			}
			inv := newInvoker(t, config(path, "products", srv.URL()), transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dial}))
			const id = "resent-query"
			if err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id)); err != nil {
				t.Fatalf("PostFunc: %v; want the answer of the request sent again", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Body != id {
				t.Errorf("the server got %d requests (%+v), want one, with the whole body", len(reqs), reqs)
			}
			if n := dials.Load(); n != 2 {
				t.Errorf("%d dials, want 2: the failed connection and the new one", n)
			}
		})
	}
}

// TestPostFuncPanicKeepsMemory: when the callback panics, the response it
// was given is left to whoever recovers: its header still reads as the
// answer's after the panic and after later calls, on every path.
func TestPostFuncPanicKeepsMemory(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			var kept *http.Response
			func() {
				defer func() {
					if p := recover(); p != "boom" {
						t.Errorf("recovered %v, want the callback's panic", p)
					}
				}()
				inv.PostFunc(context.Background(), "products", []byte("panicked"), func(resp *http.Response) error {
					kept = resp
					panic("boom")
				})
			}()
			for i := range 5 {
				id := fmt.Sprintf("later-%d", i)
				if err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id)); err != nil {
					t.Fatal(err)
				}
				if got := kept.Header.Get("X-Echo"); got != "panicked" {
					t.Fatalf("after %d later calls, the recovered response's X-Echo is %q, want %q: its memory served another call", i+1, got, "panicked")
				}
			}
		})
	}
}

// TestPostFuncReusesMemory: on the h1 engine, where PostFunc pools the
// memory of its answers, sequential calls are served from memory an
// earlier call gave back: among 20 calls, one's header map is an earlier
// one's. (Under the race detector sync.Pool drops a quarter of what it is
// given, so not every call reuses.) The maps are all kept reachable, so
// that no address is reused by the garbage collector instead.
func TestPostFuncReusesMemory(t *testing.T) {
	srv := echoServer(t)
	inv := newInvoker(t, config(pathH1, "products", srv.URL()))
	var maps []http.Header
	seen := map[uintptr]bool{}
	reused := false
	for i := range 20 {
		id := fmt.Sprintf("q%d", i)
		err := inv.PostFunc(context.Background(), "products", []byte(id), func(resp *http.Response) error {
			p := reflect.ValueOf(resp.Header).Pointer()
			reused = reused || seen[p]
			seen[p] = true
			maps = append(maps, resp.Header)
			return ownEcho(id)(resp)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !reused {
		t.Errorf("20 calls on h1 used %d header maps, none an earlier call's: the memory is not pooled", len(maps))
	}
}

// TestPostFuncShadowAndCanary: PostFunc takes the path a Post would take
// when the invoker chooses one per call: in shadow mode the query is also
// sent through the sockets path (and the callback gets the legacy answer);
// with a canary of rate 1 the call is served by the sockets path. The
// sockets path is told apart by its missing Accept-Encoding (countPaths).
func TestPostFuncShadowAndCanary(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		edit                  func(*env.Config)
		wantLegacy, wantSocks int
	}{
		{"shadow", func(c *env.Config) { c.Shadow = env.ShadowSettings{Rate: 1} }, 1, 1},
		{"canary", func(c *env.Config) { c.Canary = env.CanarySettings{Rate: 1} }, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := echoServer(t)
			cfg := config(env.PathLegacy, "products", srv.URL())
			tc.edit(&cfg)
			inv := newInvoker(t, cfg)
			const id = `{"query":"{ a }"}`
			if err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id)); err != nil {
				t.Fatal(err)
			}
			inv.Close() // waits for the shadow comparison, so its request has arrived
			if legacy, sockets := countPaths(srv); legacy != tc.wantLegacy || sockets != tc.wantSocks {
				t.Errorf("legacy sent %d, sockets %d; want %d and %d", legacy, sockets, tc.wantLegacy, tc.wantSocks)
			}
		})
	}
}

// countedBody is a response body that counts its Close calls.
type countedBody struct {
	io.Reader
	closes atomic.Int64
}

func (b *countedBody) Close() error { b.closes.Add(1); return nil }

// TestPostFuncClosesOnce: the answer's body is closed exactly once, since
// a second Close of an io.Closer is undefined: once by the callback (then
// not again when the callback returns), once by PostFunc when the callback
// did not, and never by a Close after the callback returned. On every
// path, with a SchemaOptions.RoundTripper whose bodies count their Close.
func TestPostFuncClosesOnce(t *testing.T) {
	for _, path := range paths {
		for _, tc := range []struct {
			name             string
			inCallback, late bool
		}{
			{"closed by the callback", true, false},
			{"closed by PostFunc", false, false},
			{"closed after the callback", false, true},
			{"closed by the callback and after it", true, true},
		} {
			t.Run(string(path)+"/"+tc.name, func(t *testing.T) {
				var body *countedBody
				rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					body = &countedBody{Reader: strings.NewReader(`{"data":{}}`)}
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: body, Request: r}, nil
				})
				inv := newInvoker(t, config(path, "products", "http://127.0.0.1:1/graphql"), transport.WithSchemaOptions("products", transport.SchemaOptions{RoundTripper: rt}))
				var kept io.Closer
				err := inv.PostFunc(context.Background(), "products", []byte(`{"query":"{ a }"}`), func(resp *http.Response) error {
					kept = resp.Body
					if tc.inCallback {
						return resp.Body.Close()
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if tc.late {
					kept.Close()
				}
				if n := body.closes.Load(); n != 1 {
					t.Errorf("the body was closed %d times, want once", n)
				}
			})
		}
	}
}
