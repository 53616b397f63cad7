package bound_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/testsupport/race"
)

// The request bound's context (Guard.Begin with a request bound) behaves
// as context.WithTimeoutCause's would, whichever way it ends and whoever
// looks, though it makes no context of its own until one is needed.

type ctxKey struct{}

// passed returns a channel closed once end has passed, from a context of
// its own, so that a test can wait for a bound to pass without asking the
// bound's context (which would arm it).
func passed(t *testing.T, end time.Time) <-chan struct{} {
	ctx, cancel := context.WithDeadline(context.Background(), end)
	t.Cleanup(cancel)
	return ctx.Done()
}

// waitDone waits for ctx to end, failing the test after later.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(later):
		t.Fatal("the context never ended")
	}
}

// wantEnded asserts that ctx has ended with err and cause, and that its
// Done is closed; it asks Err first, as a transport that does not wait on
// the context does.
func wantEnded(t *testing.T, ctx context.Context, err, cause error) {
	t.Helper()
	if got := ctx.Err(); got != err {
		t.Errorf("Err() = %v, want %v", got, err)
	}
	got := context.Cause(ctx)
	if rte, ok := cause.(*fault.RequestTimeoutError); ok {
		if g, ok := errors.AsType[*fault.RequestTimeoutError](got); !ok || g.Bound != rte.Bound {
			t.Errorf("context.Cause = %v, want the request timeout %v", got, rte.Bound)
		}
	} else if got != cause {
		t.Errorf("context.Cause = %v, want %v", got, cause)
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("Done is not closed")
	}
}

// TestRequestContextEnds: each way the request bound's context ends, with
// or without something waiting on it first (armed), as it and a context
// derived from it report it.
func TestRequestContextEnds(t *testing.T) {
	errParent := errors.New("the caller left")
	timeout := &fault.RequestTimeoutError{Bound: short}
	for _, tc := range []struct {
		name       string
		end        func(t *testing.T, g *bound.Guard, cancelParent context.CancelCauseFunc, end time.Time)
		err, cause error
	}{
		{"bound passes", func(t *testing.T, _ *bound.Guard, _ context.CancelCauseFunc, end time.Time) {
			<-passed(t, end)
		}, context.DeadlineExceeded, timeout},
		{"caller cancels", func(_ *testing.T, _ *bound.Guard, cancel context.CancelCauseFunc, _ time.Time) {
			cancel(errParent)
		}, context.Canceled, errParent},
		{"request released", func(t *testing.T, g *bound.Guard, _ context.CancelCauseFunc, _ time.Time) {
			resp, err := g.Finish(&http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(""))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}, context.Canceled, context.Canceled},
	} {
		for _, armed := range []bool{false, true} {
			for _, derived := range []bool{false, true} {
				name := tc.name
				if armed {
					name += "/waited on"
				}
				if derived {
					name += "/derived"
				}
				t.Run(name, func(t *testing.T) {
					parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
					defer cancel(nil)
					g := new(bound.Guard)
					ctx := g.Begin(parent, bound.Target{Schema: "x"}, 0, short)
					end, ok := ctx.Deadline()
					if !ok || end.After(time.Now().Add(short)) {
						t.Fatalf("Deadline() = %v, %v; want the bound's end", end, ok)
					}
					if ctx.Value(ctxKey{}) != "v" {
						t.Error("the parent's value is not found")
					}
					var ran chan struct{}
					look := ctx
					if armed {
						ran = make(chan struct{})
						context.AfterFunc(ctx, func() { close(ran) })
						if derived {
							var stop context.CancelFunc
							look, stop = context.WithCancel(ctx)
							defer stop()
						}
					}
					if err := look.Err(); err != nil {
						t.Fatalf("Err() = %v before it ended", err)
					}
					tc.end(t, g, cancel, end)
					if armed {
						waitDone(t, look)
					}
					if derived && !armed {
						var stop context.CancelFunc
						look, stop = context.WithCancel(ctx)
						defer stop()
					}
					wantEnded(t, look, tc.err, tc.cause)
					if ran != nil {
						select {
						case <-ran:
						case <-time.After(later):
							t.Error("an AfterFunc of the context never ran")
						}
					}
					if look.Value(ctxKey{}) != "v" {
						t.Error("the parent's value is not found after the end")
					}
				})
			}
		}
	}
}

// TestRequestContextConcurrent: goroutines wait on the context, look at it
// and derive from it while the request is released: all of them see it
// end, as cancelled (run under -race).
func TestRequestContextConcurrent(t *testing.T) {
	for range 20 {
		g := new(bound.Guard)
		ctx := g.Begin(context.Background(), bound.Target{Schema: "x"}, 0, long)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				<-start
				switch i % 4 {
				case 0:
					<-ctx.Done()
				case 1:
					d, stop := context.WithCancel(ctx)
					defer stop()
					<-d.Done()
				case 2:
					for ctx.Err() == nil {
						<-ctx.Done()
					}
				default:
					ctx.Value(ctxKey{})
					<-ctx.Done()
				}
				if err := ctx.Err(); err != context.Canceled {
					t.Errorf("Err() = %v, want context.Canceled", err)
				}
			})
		}
		close(start)
		g.Finish(nil, errors.New("failed"))
		wg.Wait()
	}
}

// TestRequestBoundReported: RequestBound recognises the context Begin made
// for a request bound, and no other; CallerDeadline tells a caller's
// deadline (or a middleware's) from the request bound's.
func TestRequestBoundReported(t *testing.T) {
	callerLater, stop := context.WithTimeout(context.Background(), long)
	defer stop()
	for _, tc := range []struct {
		name           string
		parent         context.Context
		request        time.Duration
		derive         time.Duration // a middleware's deadline on top; 0: none
		wantBound      bool
		callerDeadline bool
	}{
		{"no bound", context.Background(), 0, 0, false, false},
		{"request bound alone", context.Background(), long, 0, true, false},
		{"request bound under a later caller deadline", callerLater, short, 0, true, true},
		{"caller deadline before the request bound", callerLater, 2 * long, 0, false, true},
		{"a middleware's earlier deadline", context.Background(), long, short, false, true},
		{"a middleware's later deadline", context.Background(), short, long, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := new(bound.Guard)
			ctx := g.Begin(tc.parent, bound.Target{Schema: "x"}, 0, tc.request)
			defer g.Finish(nil, errors.New("done"))
			if tc.derive > 0 {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(ctx, tc.derive)
				defer stop()
			}
			parent, end, ok := bound.RequestBound(ctx)
			if ok != tc.wantBound {
				t.Fatalf("RequestBound = %v, want %v", ok, tc.wantBound)
			}
			if ok {
				if d, _ := ctx.Deadline(); parent != tc.parent || !end.Equal(d) {
					t.Errorf("RequestBound = %v, %v; want the caller's context and the deadline %v", parent, end, d)
				}
			}
			if got := bound.CallerDeadline(ctx); got != tc.callerDeadline {
				t.Errorf("CallerDeadline = %v, want %v", got, tc.callerDeadline)
			}
		})
	}
}

// TestRequestBoundAllocs: a request bound that nothing waits on and that
// does not pass costs a call no allocation, and leaves its Guard reusable;
// one that was waited on, or that passed, leaves it not reusable.
func TestRequestBoundAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	var g bound.Guard
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	var failed = errors.New("failed")
	allocs := testing.AllocsPerRun(1000, func() {
		g = bound.Guard{}
		ctx := g.Begin(parent, bound.Target{Schema: "x"}, 0, long)
		if ctx.Err() != nil || ctx.Value(ctxKey{}) != "v" || bound.CallerDeadline(ctx) {
			t.Fatal("the bound's context is not the request's")
		}
		g.Finish(nil, failed)
		if !g.Reusable() {
			t.Fatal("an idle request bound left its Guard not reusable")
		}
	})
	if allocs != 0 {
		t.Errorf("an idle request bound costs %v allocations a call, want 0", allocs)
	}
	for _, tc := range []struct {
		name string
		use  func(t *testing.T, ctx context.Context)
	}{
		{"waited on", func(_ *testing.T, ctx context.Context) { ctx.Done() }},
		{"passed", func(t *testing.T, ctx context.Context) {
			d, _ := ctx.Deadline()
			<-passed(t, d)
			ctx.Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g bound.Guard
			tc.use(t, g.Begin(parent, bound.Target{Schema: "x"}, 0, short))
			g.Finish(nil, failed)
			if g.Reusable() {
				t.Error("Reusable = true, want false: a context of the bound's may still run")
			}
		})
	}
}
