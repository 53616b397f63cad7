package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// echoServer answers each Post with its body's id: a header X-Echo and a
// body of the id repeated, of a length that depends on the id, so that
// any byte of one exchange in another shows.
func echoServer(t *testing.T) *schemaServer {
	return newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := string(b)
		w.Header().Set("X-Echo", id)
		io.WriteString(w, echoBody(id))
	})
}

func echoBody(id string) string {
	return strings.Repeat(id+";", 1+len(id)%7*50)
}

// TestPostFuncOwnAnswer: many goroutines, each with its own query, see
// their own answer in the callback, header and body, on every path, while
// the memory of the calls is reused between them.
func TestPostFuncOwnAnswer(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 40 {
						id := fmt.Sprintf("q%d-%d", g, i)
						err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id))
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestPostFuncBodyReleased: a body kept past the callback fails to read
// with ErrBodyReleased, before and after its memory served another call,
// and never yields a byte; read in part, it costs its connection, and the
// next call gets its own answer.
func TestPostFuncBodyReleased(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			var kept io.Reader
			err := inv.PostFunc(context.Background(), "products", []byte("first"), func(resp *http.Response) error {
				kept = resp.Body
				var b [3]byte
				_, err := io.ReadFull(resp.Body, b[:]) // the rest is left unread
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if n, err := kept.Read(buf); n != 0 || !errors.Is(err, fault.ErrBodyReleased) {
				t.Errorf("Read after the callback = %d, %v; want 0, ErrBodyReleased", n, err)
			}
			err = inv.PostFunc(context.Background(), "products", []byte("second"), func(resp *http.Response) error {
				if n, err := kept.Read(buf); n != 0 || !errors.Is(err, fault.ErrBodyReleased) {
					t.Errorf("Read of the first body during the second call = %d (%q), %v; want 0, ErrBodyReleased", n, buf[:n], err)
				}
				body, err := io.ReadAll(resp.Body)
				if err == nil && string(body) != echoBody("second") {
					err = fmt.Errorf("second answer %q", body)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := kept.Read(buf); n != 0 || !errors.Is(err, fault.ErrBodyReleased) {
				t.Errorf("Read after the second call = %d, %v; want 0, ErrBodyReleased", n, err)
			}
		})
	}
}

// TestPostFuncCallbackError: the callback's error comes back wrapped,
// naming the source schema; an error of the request comes back without a
// call of the callback.
func TestPostFuncCallbackError(t *testing.T) {
	errMine := errors.New("my callback failed")
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			err := inv.PostFunc(context.Background(), "products", []byte("x"), func(*http.Response) error { return errMine })
			if !errors.Is(err, errMine) || !strings.Contains(err.Error(), `source schema "products"`) {
				t.Errorf("PostFunc = %v, want errMine wrapped with the schema's name", err)
			}
			called := false
			err = inv.PostFunc(context.Background(), "nowhere", []byte("x"), func(*http.Response) error { called = true; return nil })
			if !errors.Is(err, fault.ErrUnknownSchema) || called {
				t.Errorf("PostFunc to an unknown schema = %v (callback called %t), want ErrUnknownSchema and no call", err, called)
			}
		})
	}
}

// TestPostFuncPanic: a callback that panics with its body unread lets the
// panic through and does not keep the connection: with one connection
// allowed, the next call is served, and gets its own answer.
func TestPostFuncPanic(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			cfg := config(path, "products", srv.URL())
			cfg.Defaults.MaxConnsPerHost = 1
			inv := newInvoker(t, cfg)
			func() {
				defer func() {
					if p := recover(); p != "boom" {
						t.Errorf("recovered %v, want the callback's panic", p)
					}
				}()
				inv.PostFunc(context.Background(), "products", []byte("panics"), func(*http.Response) error { panic("boom") })
			}()
			// A leaked connection would hold the one slot: the call would
			// wait until this generous bound, which only ends a hang.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := inv.PostFunc(ctx, "products", []byte("after"), func(resp *http.Response) error {
				body, err := io.ReadAll(resp.Body)
				if err == nil && !bytes.Equal(body, []byte(echoBody("after"))) {
					err = fmt.Errorf("answer %q", body)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPostFuncThroughPipeline: PostFunc takes the request path's rules as
// Post does: the forwarded gateway header reaches the server, and a
// retried 503 is retried (the pooled memory of the replaced attempt is
// never the answer's).
func TestPostFuncThroughPipeline(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				first := n == 1
				mu.Unlock()
				if first {
					w.Header().Set("X-Echo", "unavailable")
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("X-Echo", r.Header.Get("X-Request-Id"))
				io.WriteString(w, `{"data":{}}`)
			})
			cfg := config(path, "products", srv.URL())
			cfg.ForwardHeaders = []string{"X-Request-Id"}
			cfg.Defaults.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Statuses: []int{http.StatusServiceUnavailable}}
			inv := newInvoker(t, cfg)
			gctx := gatewayCtx("X-Request-Id", "r-42")
			err := inv.PostFunc(gctx, "products", []byte(`{"query":"{a}"}`), func(resp *http.Response) error {
				body, err := io.ReadAll(resp.Body)
				if err == nil && (resp.StatusCode != http.StatusOK || resp.Header.Get("X-Echo") != "r-42" || string(body) != `{"data":{}}`) {
					err = fmt.Errorf("answer %s, X-Echo %q, body %q", resp.Status, resp.Header.Get("X-Echo"), body)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("%d requests reached the server, want 2 (one retry)", n)
			}
		})
	}
}

// TestPostFuncAllocs: on the h1 engine a PostFunc costs one allocation,
// the body the callback sees, against Post's seven: request, header maps
// and response are pooled. The responder is rawhttp's, in process, which
// allocates nothing per request.
func TestPostFuncAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	srv, err := rawhttp.Start(benchAnswer)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := config(pathH1, "products", srv.URL()+"/graphql")
	cfg.ForwardHeaders = []string{"Authorization", "X-Request-Id"}
	inv := newInvoker(t, cfg)
	gctx := gatewayCtx("Authorization", benchAuthorization[0], "X-Request-Id", benchRequestID[0])
	var buf []byte
	read := func(resp *http.Response) error { return rawhttp.ReadBody(resp, nil, &buf, len(benchAnswer)) }
	allocs := testing.AllocsPerRun(2000, func() {
		if err := inv.PostFunc(gctx, "products", benchQuery, read); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("PostFunc allocates %v a call, want at most 1", allocs)
	}
}

// TestPostFuncOwnAnswerUnderReload: while 8 callers borrow answers, the
// configuration is reloaded back and forth between the h1 and nethttp
// engines and between the legacy and sockets paths, so that calls are
// moved from a transport that lends its memory to one that may not; every
// callback still sees its own answer, and every call succeeds.
func TestPostFuncOwnAnswerUnderReload(t *testing.T) {
	srv := echoServer(t)
	configs := []env.Config{config(pathH1, "products", srv.URL()), config(env.PathSockets, "products", srv.URL()), config(env.PathLegacy, "products", srv.URL())}
	inv := newInvoker(t, configs[0])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("q%d-%d", g, i)
				err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id))
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for n := range 60 {
		if err := inv.Reload(configs[(n+1)%len(configs)]); err != nil {
			t.Errorf("reload %d: %v", n, err)
			break
		}
		// Each configuration serves a call before the next reload.
		if err := inv.PostFunc(context.Background(), "products", []byte("between"), func(resp *http.Response) error {
			_, err := io.Copy(io.Discard, resp.Body)
			return err
		}); err != nil {
			t.Errorf("after reload %d: %v", n, err)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// ownEcho is a PostFunc callback that wants the echo server's answer to
// id, and nothing else, in the borrowed response.
func ownEcho(id string) func(*http.Response) error {
	return func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if got := resp.Header.Get("X-Echo"); got != id || string(body) != echoBody(id) {
			return fmt.Errorf("answer of %q: X-Echo %q, body %q", id, got, body)
		}
		return nil
	}
}
