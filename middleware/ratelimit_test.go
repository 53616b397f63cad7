package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// TestRateLimitFailsAtOnce: without a wait, the burst goes and the next
// request fails unsent, naming the schema.
func TestRateLimitFailsAtOnce(t *testing.T) {
	var sent, limited atomic.Int32
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 0.001, Burst: 3, OnLimited: func(context.Context) { limited.Add(1) }})
	rt := l.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	}))
	for i := range 5 {
		resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
		if i < 3 {
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			resp.Body.Close()
			continue
		}
		if !errors.Is(err, fault.ErrRateLimited) {
			t.Fatalf("request %d: error %v, want ErrRateLimited", i, err)
		}
		want := `rate limit exceeded for source schema "products" (0.001/s, burst 3): not sent`
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
	if sent.Load() != 3 || limited.Load() != 2 {
		t.Errorf("%d sent, %d limited: want 3 and 2", sent.Load(), limited.Load())
	}
}

// TestRateLimitWait: a request whose turn comes within the wait waits for
// it; one whose turn would come after the wait, or after its deadline,
// fails at once and gives its turn back.
func TestRateLimitWait(t *testing.T) {
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	})
	// 20/s: a turn every 50ms; a burst of 1.
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 20, Burst: 1, Wait: time.Hour})
	rt := l.Middleware()(next)
	send := func(ctx context.Context) error {
		resp, err := rt.RoundTrip(newRequest(t, ctx, "http://products.test/graphql", queryBody, true))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The next turn is ~50ms away: a deadline of 1ms cannot wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := send(ctx)
	if !errors.Is(err, fault.ErrRateLimited) || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("error %v, want ErrRateLimited at once", err)
	}
	// Its turn was given back: the next caller gets the turn ~50ms
	// away, not the one after it; it waits, and goes.
	if err := send(context.Background()); err != nil {
		t.Fatalf("waiting caller: %v", err)
	}
}

// TestRateLimitNil: a zero rate builds no limiter, and a nil limiter's
// middleware passes requests on.
func TestRateLimitNil(t *testing.T) {
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{})
	if l != nil {
		t.Fatal("NewRateLimiter with no rate: want nil")
	}
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	})
	if rt := l.Middleware()(next); rt == nil {
		t.Fatal("nil RoundTripper")
	}
}

// TestRateLimitNotRetried: Retry does not send again a request the limiter
// refused, and a breaker does not count it.
func TestRateLimitNotRetried(t *testing.T) {
	var sent atomic.Int32
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 0.001, Burst: 1})
	b := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 1, FailureRatio: 0.5})
	rt := middleware.Chain(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	}), middleware.Retry(fastRetry(3)), b.Middleware(), l.Middleware())
	for i := range 4 {
		resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
		if i == 0 {
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			continue
		}
		if !errors.Is(err, fault.ErrRateLimited) {
			t.Fatalf("request %d: %v, want ErrRateLimited", i, err)
		}
	}
	if sent.Load() != 1 {
		t.Errorf("%d sent, want 1", sent.Load())
	}
	if s := b.State(); s != middleware.BreakerClosed {
		t.Errorf("breaker %v after refusals, want closed", s)
	}
}

// TestRateLimitOrder: callers that wait are served in the order they took
// their turns. Each caller starts once the one before it waits (the hook),
// so the order of the turns is known; the turns are 100ms apart, so that
// a caller woken for its turn reaches the next handler before the next
// caller's turn even when the machine is busy (at 20ms apart, a caller
// descheduled past its successor's turn failed the test once at a load
// of 7).
func TestRateLimitOrder(t *testing.T) {
	const callers = 6
	order := make(chan int, callers+1)
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		var i int
		fmt.Sscan(req.Header.Get("X-Caller"), &i)
		order <- i
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	})
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 10, Burst: 1, Wait: time.Hour})
	waiting := make(chan struct{}, callers)
	middleware.SetWaitingHook(l, func() { waiting <- struct{}{} })
	rt := l.Middleware()(next)
	send := func(i int) error {
		req := newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true)
		req.Header.Set("X-Caller", strconv.Itoa(i))
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(0); err != nil { // the burst: at once
		t.Fatal(err)
	}
	errs := make(chan error, callers)
	for i := 1; i <= callers; i++ {
		go func() { errs <- send(i) }()
		await(t, waiting, fmt.Sprintf("caller %d to wait for its turn", i))
	}
	for range callers {
		if err := await(t, errs, "a waiting caller's end"); err != nil {
			t.Fatal(err)
		}
	}
	close(order)
	want := 0
	for i := range order {
		if i != want {
			t.Fatalf("caller %d served when caller %d was due", i, want)
		}
		want++
	}
}

// TestRateLimitGivesTurnBack: a caller that takes a turn it will not use
// gives it back, so the caller behind it is not pushed a turn later. At
// 10/s with a burst of 1 and a 150 ms wait, the first caller takes the
// burst and the next turn is ~100 ms away; a second caller leaves that
// turn (its deadline comes first, or its context ends while it waits);
// the third caller then gets that turn, within its 150 ms wait. Had the
// turn been burnt, the third one's would be ~200 ms away, past the wait,
// and it would be refused unsent.
func TestRateLimitGivesTurnBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leave   func(t *testing.T, send func(context.Context) error, waiting <-chan struct{}) error
		wantErr error
	}{
		{"deadline before its turn", func(t *testing.T, send func(context.Context) error, _ <-chan struct{}) error {
			// 10ms: the turn is past it even if this caller starts 80ms
			// after the first on a loaded machine.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			return send(ctx)
		}, fault.ErrRateLimited},
		{"context ends while it waits", func(t *testing.T, send func(context.Context) error, waiting <-chan struct{}) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- send(ctx) }()
			await(t, waiting, "the second caller to wait for its turn")
			cancel()
			return await(t, done, "the second caller to leave")
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Int32
			l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 10, Burst: 1, Wait: 150 * time.Millisecond})
			waiting := make(chan struct{}, 4)
			middleware.SetWaitingHook(l, func() { waiting <- struct{}{} })
			rt := l.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				sent.Add(1)
				resp, _ := fakeResponse(req, 200, "{}")
				return resp, nil
			}))
			send := func(ctx context.Context) error {
				resp, err := rt.RoundTrip(newRequest(t, ctx, "http://products.test/graphql", queryBody, true))
				if err == nil {
					resp.Body.Close()
				}
				return err
			}
			if err := send(context.Background()); err != nil {
				t.Fatalf("first caller: %v", err)
			}
			if err := tc.leave(t, send, waiting); !errors.Is(err, tc.wantErr) {
				t.Fatalf("second caller: %v, want %v", err, tc.wantErr)
			}
			if err := send(context.Background()); err != nil {
				t.Fatalf("third caller: %v; want the turn the second gave back", err)
			}
			if n := sent.Load(); n != 2 {
				t.Errorf("the source schema got %d requests, want 2 (the first and third callers')", n)
			}
		})
	}
}

// TestRateLimitBurstAndObserved: without a Burst, the bucket holds
// RequestsPerSecond rounded up, at least 1: that many requests go at
// once and the next one is refused unsent. Each refusal calls OnLimited
// and the hook of the Observed middleware it went through, not the
// other's.
func TestRateLimitBurstAndObserved(t *testing.T) {
	for _, tc := range []struct {
		rps   float64
		burst int
	}{
		{0.001, 1}, {1, 1}, {2.5, 3}, {4, 4},
	} {
		t.Run(fmt.Sprint(tc.rps, "/s"), func(t *testing.T) {
			var limited, mine, other atomic.Int32
			var sent atomic.Int32
			l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: tc.rps, OnLimited: func(context.Context) { limited.Add(1) }})
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				sent.Add(1)
				resp, _ := fakeResponse(req, 200, "{}")
				return resp, nil
			})
			rt := l.Observed(func(context.Context) { mine.Add(1) })(next)
			l.Observed(func(context.Context) { other.Add(1) })(next) // another path sharing the limiter
			var refused int
			for range tc.burst + 1 {
				resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
				if err != nil {
					if !errors.Is(err, fault.ErrRateLimited) {
						t.Fatalf("error %v, want ErrRateLimited", err)
					}
					refused++
					continue
				}
				resp.Body.Close()
			}
			if int(sent.Load()) != tc.burst || refused != 1 {
				t.Errorf("%d sent and %d refused of %d; want the burst of %d, then a refusal", sent.Load(), refused, tc.burst+1, tc.burst)
			}
			if limited.Load() != 1 || mine.Load() != 1 || other.Load() != 0 {
				t.Errorf("OnLimited called %d times, this path's hook %d, the other's %d; want 1, 1, 0", limited.Load(), mine.Load(), other.Load())
			}
		})
	}
}

// fakeShared is a SharedLimit that answers every Take with its fields and
// records the until it was given.
type fakeShared struct {
	delay time.Duration
	ok    bool
	err   error
	until chan time.Time // cap ≥ the calls
}

func (f *fakeShared) Take(_ context.Context, until time.Time) (time.Duration, bool, error) {
	f.until <- until
	return f.delay, f.ok, f.err
}

// TestRateLimitShared: a limiter with a shared limit sends what the
// shared limit gives a turn (at once, or after waiting for it), refuses
// unsent what it gives none, naming the limit as shared; when the shared
// limit cannot tell, the call is decided by OnStoreError: a local bucket
// of LocalShare of the burst, every call sent, or every call refused with
// its own error. Each refusal calls OnLimited.
func TestRateLimitShared(t *testing.T) {
	storeDown := errors.New("redis: connection refused")
	for _, tc := range []struct {
		name      string
		shared    fakeShared
		mode      string
		calls     int
		wantSent  int
		wantErr   string // the refusals' text; "" for none
		wantWaits int
	}{
		{"turn at once", fakeShared{ok: true}, "", 3, 3, "", 0},
		{"turn after a wait", fakeShared{ok: true, delay: 5 * time.Millisecond}, "", 2, 2, "", 2},
		{"no turn", fakeShared{}, "", 2, 0, `rate limit exceeded for source schema "products" (100/s, burst 4, shared; no turn within the 1s wait or the deadline): not sent`, 0},
		{"store error, local half", fakeShared{err: storeDown}, middleware.OnStoreErrorLocal, 4, 2, `rate limit exceeded for source schema "products" (100/s, burst 4, shared; no turn within the 1s wait or the deadline): not sent`, 0},
		{"store error, default local", fakeShared{err: storeDown}, "", 4, 2, `(100/s, burst 4, shared; no turn`, 0},
		{"store error, allow", fakeShared{err: storeDown}, middleware.OnStoreErrorAllow, 5, 5, "", 0},
		{"store error, deny", fakeShared{err: storeDown}, middleware.OnStoreErrorDeny, 3, 0, `rate limit exceeded for source schema "products" (100/s, burst 4, shared; its store could not be asked, and on a store error the limit denies): not sent`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent, limited atomic.Int32
			shared := tc.shared
			shared.until = make(chan time.Time, tc.calls)
			// LocalShare 0.5 of 100/s, burst 4: a bucket of 50/s, burst 2,
			// and a wait it cannot meet (its turns are 20ms apart, the
			// caller's deadline is 1ms away).
			l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 100, Burst: 4, Wait: time.Second,
				Shared: &shared, OnStoreError: tc.mode, LocalShare: 0.5, OnLimited: func(context.Context) { limited.Add(1) }})
			waits := 0
			middleware.SetWaitingHook(l, func() { waits++ })
			rt := l.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				sent.Add(1)
				resp, _ := fakeResponse(req, 200, "{}")
				return resp, nil
			}))
			refused := 0
			for i := range tc.calls {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				if tc.wantWaits > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
				}
				resp, err := rt.RoundTrip(newRequest(t, ctx, "http://products.test/graphql", queryBody, true))
				cancel()
				switch {
				case err == nil:
					resp.Body.Close()
				case errors.Is(err, fault.ErrRateLimited) && tc.wantErr != "" && strings.Contains(err.Error(), tc.wantErr):
					refused++
				default:
					t.Fatalf("call %d: %v, want success or a refusal %q", i, err, tc.wantErr)
				}
			}
			if int(sent.Load()) != tc.wantSent || refused != tc.calls-tc.wantSent || int(limited.Load()) != refused || waits != tc.wantWaits {
				t.Errorf("%d sent, %d refused, %d counted as limited, %d waited; want %d sent, the rest refused and counted, %d waited",
					sent.Load(), refused, limited.Load(), waits, tc.wantSent, tc.wantWaits)
			}
		})
	}
}

// TestRateLimitSharedUntil: the shared limit is asked for a turn by now
// without a wait, by now + wait with one, and by the deadline when that
// comes first; a caller whose context has ended is not asked for.
func TestRateLimitSharedUntil(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		deadline time.Duration // 0: none
		want     time.Duration // until - the call's start, at most
		atLeast  time.Duration
	}{
		{"no wait", 0, 0, 0, 0},
		{"wait", time.Second, 0, time.Second, time.Second - 100*time.Millisecond},
		{"deadline first", time.Hour, 200 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := &fakeShared{ok: true, until: make(chan time.Time, 1)}
			l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 100, Wait: tc.wait, Shared: shared})
			rt := l.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, _ := fakeResponse(req, 200, "{}")
				return resp, nil
			}))
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			resp, err := rt.RoundTrip(newRequest(t, ctx, "http://products.test/graphql", queryBody, true))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// The call took its own time before it asked: until is within
			// that much of start + want.
			took := time.Since(start)
			got := (<-shared.until).Sub(start)
			if got > tc.want+took || got < tc.atLeast {
				t.Errorf("asked for a turn by start + %v, want within [%v, %v + %v]", got, tc.atLeast, tc.want, took)
			}
		})
	}
	shared := &fakeShared{ok: true, until: make(chan time.Time, 1)}
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 100, Shared: shared})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		t.Error("a call whose context had ended was sent")
		return nil, errors.New("sent")
	})).RoundTrip(newRequest(t, ctx, "http://products.test/graphql", queryBody, true))
	if !errors.Is(err, context.Canceled) || len(shared.until) != 0 {
		t.Errorf("a call whose context had ended: %v, asked for a turn %d times; want context.Canceled, never asked", err, len(shared.until))
	}
}

// TestRateLimitDenyNotRetried: a call the shared limit's deny refuses
// (its store could not be asked) is a refusal like any other: Retry does
// not send it again and a breaker does not count it.
func TestRateLimitDenyNotRetried(t *testing.T) {
	shared := &fakeShared{err: errors.New("redis: connection refused"), until: make(chan time.Time, 16)}
	l := middleware.NewRateLimiter(middleware.RateLimitConfig{Schema: "products", RequestsPerSecond: 100, Shared: shared, OnStoreError: middleware.OnStoreErrorDeny})
	b := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 1, FailureRatio: 0.5})
	rt := middleware.Chain(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		t.Error("a denied call was sent")
		return nil, errors.New("sent")
	}), middleware.Retry(fastRetry(3)), b.Middleware(), l.Middleware())
	for i := range 4 {
		_, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
		if !errors.Is(err, fault.ErrRateLimited) {
			t.Fatalf("call %d: %v, want ErrRateLimited", i, err)
		}
	}
	if n := len(shared.until); n != 4 {
		t.Errorf("the shared limit was asked %d times for 4 calls, want 4: a refusal was retried", n)
	}
	if s := b.State(); s != middleware.BreakerClosed {
		t.Errorf("breaker %v after denials, want closed", s)
	}
}
