package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/middleware"
)

// hedgeModes are Hedge as a user builds it, whose queries' first tries
// each get a context of their own, and as the request path builds it on a
// route that lets go of an attempt's request and context once its body
// is closed, where they are pooled.
var hedgeModes = []struct {
	name  string
	hedge func(middleware.HedgeConfig) middleware.Middleware
}{
	{"own", middleware.Hedge},
	{"pooled", middleware.HedgeReusing},
}

// errGone is the cause a caller gives when it cancels its query.
var errGone = errors.New("the gateway's client went away")

// TestHedgeFirstTryContext: a query's first try, within the delay, is sent
// with a context that carries the query's values and deadline, is no
// hedge, and ends with the query's: cancelled with its cause, or past its
// deadline (DeadlineExceeded); the response's Request is the caller's.
// After each query whose context ended, the next queries' first tries get
// a context that has not ended: an ended one is never pooled again.
func TestHedgeFirstTryContext(t *testing.T) {
	type markKey struct{}
	type deadlineKey struct{}
	for _, mode := range hedgeModes {
		t.Run(mode.name, func(t *testing.T) {
			in := make(chan struct{}, 1)
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				ctx := req.Context()
				if middleware.IsHedge(ctx) {
					return nil, errors.New("a hedge went within the delay")
				}
				switch req.Header.Get("X-Case") {
				case "ends":
					in <- struct{}{}
					want, wantOK := ctx.Value(deadlineKey{}).(time.Time)
					if got, ok := ctx.Deadline(); ok != wantOK || !got.Equal(want) {
						return nil, fmt.Errorf("the first try's deadline is %v (%t), want the query's %v (%t)", got, ok, want, wantOK)
					}
					select {
					case <-ctx.Done():
						return nil, fmt.Errorf("first try: %w (%w)", ctx.Err(), context.Cause(ctx))
					case <-time.After(guard):
						return nil, errors.New("the first try's context never ended")
					}
				default:
					if err := ctx.Err(); err != nil {
						return nil, fmt.Errorf("a fresh query's first try began with its context ended: %w", err)
					}
					mark, _ := ctx.Value(markKey{}).(string)
					resp, _ := fakeResponse(req, http.StatusOK, mark)
					return resp, nil
				}
			})
			rt := mode.hedge(middleware.HedgeConfig{Delay: time.Hour})(next)
			fresh := func(round int) {
				t.Helper()
				for i := range 20 {
					mark := fmt.Sprintf("q%d-%d", round, i)
					req := newRequest(t, context.WithValue(context.Background(), markKey{}, mark), "http://products.test/graphql", queryBody, true)
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Fatalf("%s: %v", mark, err)
					}
					if resp.Request != req {
						t.Errorf("%s: the response's Request is not the caller's", mark)
					}
					if got := readBody(t, resp); got != mark {
						t.Errorf("%s: the first try's context carried %q", mark, got)
					}
				}
			}
			fresh(0)

			ctx, cancel := context.WithCancelCause(context.Background())
			req := newRequest(t, ctx, "http://products.test/graphql", queryBody, true)
			req.Header.Set("X-Case", "ends")
			done := make(chan error, 1)
			go func() {
				_, err := rt.RoundTrip(req)
				done <- err
			}()
			await(t, in, "the first try")
			cancel(errGone)
			if err := await(t, done, "the cancelled query's end"); !errors.Is(err, context.Canceled) || !errors.Is(err, errGone) {
				t.Errorf("cancelled query: %v; want its first try's context Canceled, with the caller's cause", err)
			}
			fresh(1)

			deadline := time.Now().Add(-time.Second)
			ctx, cancelDeadline := context.WithDeadline(context.WithValue(context.Background(), deadlineKey{}, deadline), deadline)
			defer cancelDeadline()
			req = newRequest(t, ctx, "http://products.test/graphql", queryBody, true)
			req.Header.Set("X-Case", "ends")
			_, err := rt.RoundTrip(req)
			<-in
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a query past its deadline: %v; want its first try's context DeadlineExceeded", err)
			}
			fresh(2)
		})
	}
}

// TestHedgeFirstTryPanics: a first try whose RoundTrip panics lets the
// panic through to the caller, and no hedge of the query goes after it,
// however long it waits: three delays later (proven on the wire by a
// query of the same delay whose three hedges came), the source schema
// got no copy of it.
func TestHedgeFirstTryPanics(t *testing.T) {
	// The delay must outlast the first try's way to its panic: a hedge
	// due before the panic is rightly sent (under a CPU burner, 2 ms
	// passed before the first try panicked once in five suite runs).
	const delay = 50 * time.Millisecond
	for _, mode := range hedgeModes {
		t.Run(mode.name, func(t *testing.T) {
			w := newHedgeWire(t)
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Header.Get("X-Id") == "panics" && !middleware.IsHedge(req.Context()) {
					panic("boom")
				}
				return w.RoundTrip(req)
			})
			rt := mode.hedge(middleware.HedgeConfig{Delay: delay, MaxExtra: 3})(next)
			func() {
				defer func() {
					if p := recover(); p != "boom" {
						t.Errorf("recovered %v, want the first try's panic", p)
					}
				}()
				req := newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true)
				req.Header.Set("X-Id", "panics")
				rt.RoundTrip(req)
			}()
			elapse(t, w, delay, 3, "clock")
			if n := w.count("panics"); n != 0 {
				t.Errorf("after its first try panicked, the query was hedged %d times, want none", n)
			}
		})
	}
}
