package transport_test

// request_timeout on the wire, on every path and engine, for Post and for
// PostFunc (whose memory is pooled on h1): it cuts a body read in
// progress, closes the connection of a body left unread, bounds the wait
// for a pooled connection, and a call it cut never hands its memory to
// another.

import (
	"context"
	"errors"
	"fmt"
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

// cutBounds are the request_timeouts a test tries in turn when the bound
// must pass after the response headers arrive: on a loaded machine a
// loopback answer's headers may take longer than the first.
var cutBounds = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// bodyCall is a way to call: each hands body (resp.Body) to read, which
// returns the error that ended its reading; got says whether read ran
// (the call got its response headers).
type bodyCall struct {
	name string
	call func(inv *transport.Transport, ctx context.Context, read func(body io.Reader) error) (got bool, err error)
}

var bodyCalls = []bodyCall{
	{"Post", func(inv *transport.Transport, ctx context.Context, read func(io.Reader) error) (bool, error) {
		resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ slow }"}`))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		return true, read(resp.Body)
	}},
	{"PostFunc", func(inv *transport.Transport, ctx context.Context, read func(io.Reader) error) (bool, error) {
		got := false
		err := inv.PostFunc(ctx, "products", []byte(`{"query":"{ slow }"}`), func(resp *http.Response) error {
			got = true
			return read(resp.Body)
		})
		return got, err
	}},
}

// partThenHold answers with the headers and "part:" of a 100-byte body at
// once, then holds the rest until the client goes away (ended is closed
// then) or release is closed.
func partThenHold(ended chan<- struct{}, release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "part:")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(ended)
		case <-release:
		}
	}
}

// checkRequestTimeout asserts that err is the request_timeout d's error,
// naming the source schema.
func checkRequestTimeout(t *testing.T, err error, d time.Duration) {
	t.Helper()
	rte, ok := errors.AsType[*fault.RequestTimeoutError](err)
	if !ok || rte.Bound != d || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the request_timeout %v (a *fault.RequestTimeoutError matching context.DeadlineExceeded)", err, d)
	}
	if _, ok := errors.AsType[*fault.HeaderTimeoutError](err); ok {
		t.Errorf("error %v names the header bound too", err)
	}
	errorNamesSchema(t, err)
}

// TestRequestTimeoutCutsBody: request_timeout cuts a body whose rest the
// server holds back, on every path, for Post and PostFunc, without a
// caller deadline and under a later one: a Read in progress fails with
// the request_timeout error (reading), and so does the first Read of a
// body left unread past the bound, whose connection the bound has closed
// by then (idle: the server sees its request end while the caller reads
// nothing).
func TestRequestTimeoutCutsBody(t *testing.T) {
	for _, path := range paths {
		for _, call := range bodyCalls {
			for _, deadline := range []time.Duration{0, time.Hour} {
				for _, idle := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/deadline=%v/idle=%v", path, call.name, deadline, idle)
					t.Run(name, func(t *testing.T) {
						for i, d := range cutBounds {
							if cutBody(t, path, call, deadline, d, idle, i == len(cutBounds)-1) {
								return
							}
							t.Logf("the headers took longer than request_timeout %v; again with a larger one", d)
						}
					})
				}
			}
		}
	}
}

// cutBody is one attempt of TestRequestTimeoutCutsBody with request_timeout
// d. It returns false, to try again with a larger bound, if the call
// failed before its headers arrived and last is false.
func cutBody(t *testing.T, path env.Path, call bodyCall, deadline, d time.Duration, idle, last bool) bool {
	ended, release := make(chan struct{}), make(chan struct{})
	srv := newSchemaServer(t, partThenHold(ended, release))
	defer close(release)
	inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) { s.RequestTimeout = d }))
	ctx := context.Background()
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	guard := time.NewTimer(engineGuard)
	defer guard.Stop()
	var readErr error
	got, err := call.call(inv, ctx, func(body io.Reader) error {
		part := make([]byte, 5)
		if _, err := io.ReadFull(body, part); err != nil || string(part) != "part:" {
			return fmt.Errorf("read %q, %w; want the part the server sent", part, err)
		}
		if idle {
			// Read nothing more: the bound must end the request on the
			// wire by itself.
			select {
			case <-ended:
			case <-guard.C:
				return errors.New("the server never saw its request end while the body lay unread past request_timeout")
			}
		}
		_, readErr = body.Read(make([]byte, 64))
		return readErr
	})
	if !got {
		if _, ok := errors.AsType[*fault.RequestTimeoutError](err); ok && !last {
			return false
		}
		t.Fatalf("%s: %v, want the headers and the part", call.name, err)
	}
	if readErr == nil {
		t.Fatalf("the read past request_timeout succeeded (call: %v)", err)
	}
	checkRequestTimeout(t, readErr, d)
	if err == nil {
		t.Errorf("%s returned no error after its body failed", call.name)
	}
	select {
	case <-ended:
	case <-guard.C:
		t.Error("the server never saw its request end")
	}
	return true
}

// TestRequestTimeoutBoundsPoolWait: a request that waits for a connection
// at max_conns_per_host fails with its request_timeout when no connection
// frees up in time, unsent, on every path, for Post and PostFunc. The
// connection is held by a request sent before a reload set the bound, so
// that the first request outlives the second's bound.
func TestRequestTimeoutBoundsPoolWait(t *testing.T) {
	const d = 100 * time.Millisecond
	for _, path := range paths {
		for _, call := range bodyCalls {
			t.Run(string(path)+"/"+call.name, func(t *testing.T) {
				arrived, release := make(chan struct{}, 1), make(chan struct{})
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					arrived <- struct{}{}
					select {
					case <-release:
					case <-r.Context().Done():
					}
					io.WriteString(w, `{"data":{"ok":true}}`)
				})
				var once sync.Once
				releaseOnce := func() { once.Do(func() { close(release) }) }
				t.Cleanup(releaseOnce) // before the server closes
				cfg := withSchema(path, srv.URL(), nil)
				cfg.Defaults.MaxConnsPerHost = 1
				inv := newInvoker(t, cfg)
				first := postAsync(inv, context.Background(), "products", `{"query":"{ first }"}`)
				select {
				case <-arrived:
				case <-time.After(engineGuard):
					t.Fatal("the first request never reached the server")
				}
				s := cfg.SourceSchemas["products"]
				s.RequestTimeout = d
				cfg.SourceSchemas["products"] = s
				if err := inv.Reload(cfg); err != nil {
					t.Fatal(err)
				}
				expectRequestTimeout(t, call, inv, d, "the waiting call outlived its request_timeout")
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("the server received %d requests, want 1: the waiting call must fail unsent", n)
				}
				releaseOnce()
				if r := <-first; r.err != nil || r.body != `{"data":{"ok":true}}` {
					t.Errorf("the first call got %q, %v", r.body, r.err)
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("the server received %d requests, want 1: the call that timed out waiting was sent later", n)
				}
			})
		}
	}
}

// TestPostFuncOwnAnswerUnderRequestTimeout: 8 goroutines borrow answers
// under request_timeout, with and without a caller deadline, while one
// call in four has its body cut by the bound: every other call sees its
// own answer, every cut one the request_timeout error, on every path,
// while the memory of the calls is reused between them (h1).
func TestPostFuncOwnAnswerUnderRequestTimeout(t *testing.T) {
	const d = 300 * time.Millisecond
	for _, path := range paths {
		for _, deadline := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadline=%v", path, deadline), func(t *testing.T) {
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					b, err := io.ReadAll(r.Body)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					id := string(b)
					w.Header().Set("X-Echo", id)
					if strings.HasSuffix(id, "-slow") {
						// Part of a body, then nothing until the bound
						// ends the request.
						w.Header().Set("Content-Length", "100")
						io.WriteString(w, "part:")
						w.(http.Flusher).Flush()
						<-r.Context().Done()
						return
					}
					io.WriteString(w, echoBody(id))
				})
				inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) { s.RequestTimeout = d }))
				ctx := context.Background()
				if deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
					defer cancel()
				}
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 12 {
							id := fmt.Sprintf("q%d-%d", g, i)
							if i%4 == 3 {
								id += "-slow"
								err := inv.PostFunc(ctx, "products", []byte(id), func(resp *http.Response) error {
									if got := resp.Header.Get("X-Echo"); got != id {
										return fmt.Errorf("answer of %q: X-Echo %q", id, got)
									}
									_, err := io.ReadAll(resp.Body)
									return err
								})
								if _, ok := errors.AsType[*fault.RequestTimeoutError](err); !ok {
									t.Errorf("call %s: %v, want the request_timeout", id, err)
									return
								}
								continue
							}
							if err := inv.PostFunc(ctx, "products", []byte(id), ownEcho(id)); err != nil {
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
}

// TestRequestTimeoutBoundsRetryWait: a retry's backoff that would outlast
// request_timeout is cut by it, and the caller gets the request_timeout
// error, on every path, for Post and PostFunc; the server sees one
// request.
func TestRequestTimeoutBoundsRetryWait(t *testing.T) {
	const d = 100 * time.Millisecond
	for _, path := range paths {
		for _, call := range bodyCalls {
			t.Run(string(path)+"/"+call.name, func(t *testing.T) {
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
				})
				inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) {
					s.RequestTimeout = d
					s.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Hour, WaitMax: time.Hour, Statuses: []int{http.StatusServiceUnavailable}}
				}))
				expectRequestTimeout(t, call, inv, d, "the retry's backoff outlived request_timeout")
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("the server received %d requests, want 1", n)
				}
			})
		}
	}
}

// expectRequestTimeout makes one call of inv that reads its body whole and
// wants it to fail with request_timeout d within engineGuard; what names
// the wait that failed to end otherwise.
func expectRequestTimeout(t *testing.T, call bodyCall, inv *transport.Transport, d time.Duration, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := call.call(inv, context.Background(), func(body io.Reader) error {
			_, err := io.Copy(io.Discard, body)
			return err
		})
		done <- err
	}()
	select {
	case err := <-done:
		checkRequestTimeout(t, err, d)
	case <-time.After(engineGuard):
		t.Fatal(what)
	}
}
