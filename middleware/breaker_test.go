package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// transitions records a breaker's changes of state, as "from>to".
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) hook(_ context.Context, from, to middleware.BreakerState) {
	tr.mu.Lock()
	tr.got = append(tr.got, from.String()+">"+to.String())
	tr.mu.Unlock()
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

// statusResponse is an answer of status with no body.
func statusResponse(status int) *http.Response {
	return &http.Response{StatusCode: status, Body: http.NoBody}
}

// heldTransport holds each request until the test answers it: the
// request with header X-Id id gets the status sent on reply(id), or its
// context's error if it ends first, or an error once the guard passed (a
// request that a broken rule let through fails its test, never hangs
// it). sent counts the requests it got.
type heldTransport struct {
	mu      sync.Mutex
	replies map[string]chan int
	sent    atomic.Int64
	arrived chan struct{}
}

func newHeld() *heldTransport {
	return &heldTransport{replies: map[string]chan int{}, arrived: make(chan struct{}, 100)}
}

func (h *heldTransport) reply(id string) chan int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.replies[id]
	if !ok {
		c = make(chan int, 1)
		h.replies[id] = c
	}
	return c
}

func (h *heldTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h.sent.Add(1)
	h.arrived <- struct{}{}
	select {
	case s := <-h.reply(req.Header.Get("X-Id")):
		return statusResponse(s), nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	case <-time.After(guard):
		return nil, fmt.Errorf("request %q held past the guard: never answered", req.Header.Get("X-Id"))
	}
}

// startHeld sends request id through rt on its own goroutine and returns once
// the transport has it; the returned channel gets its error.
func startHeld(t *testing.T, rt http.RoundTripper, h *heldTransport, ctx context.Context, id string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://products.test/graphql", http.NoBody)
		req.Header.Set("X-Id", id)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-h.arrived:
	case err := <-done:
		t.Fatalf("request %s ended before it reached the transport: %v", id, err)
	case <-time.After(guard):
		t.Fatalf("request %s did not reach the transport", id)
	}
	return done
}

// answer answers held request id with status and waits for its end.
func answer(t *testing.T, h *heldTransport, id string, status int, done <-chan error) {
	t.Helper()
	h.reply(id) <- status
	if err := await(t, done, "request "+id+" to end"); err != nil {
		t.Fatalf("request %s: %v", id, err)
	}
}

// roundTrip sends one request through rt.
func roundTrip(rt http.RoundTripper) error {
	req, _ := http.NewRequest(http.MethodPost, "http://products.test/graphql", http.NoBody)
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// mustRefuse sends one request through rt, whose transport is h, and
// fails the test unless the breaker refuses it with ErrCircuitOpen. A
// request that a broken rule lets through fails the test as soon as it
// reaches h, rather than once h's guard passes.
func mustRefuse(t *testing.T, rt http.RoundTripper, h *heldTransport, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- roundTrip(rt) }()
	select {
	case err := <-done:
		if !errors.Is(err, fault.ErrCircuitOpen) {
			t.Fatalf("%s: %v, want ErrCircuitOpen", what, err)
		}
	case <-h.arrived:
		t.Fatalf("%s reached the source schema, want it refused unsent", what)
	case <-time.After(guard):
		t.Fatalf("%s: no answer", what)
	}
}

// TestBreakerHalfOpen: after open_for, exactly half_open_requests (3)
// trial calls go through and the others are refused, unsent; a trial
// whose caller left frees its slot; three successes close the breaker. A
// failed trial reopens it for a fresh open_for.
func TestBreakerHalfOpen(t *testing.T) {
	const openFor = 30 * time.Millisecond
	var tr transitions
	b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 1, FailureRatio: 1, OpenFor: openFor, HalfOpenRequests: 3, OnStateChange: tr.hook})
	h := newHeld()
	rt := b.Middleware()(h)
	open := func(id string) {
		t.Helper()
		answer(t, h, id, http.StatusServiceUnavailable, startHeld(t, rt, h, context.Background(), id))
		if st := b.State(); st != middleware.BreakerOpen {
			t.Fatalf("state %s after a failure, want open", st)
		}
	}
	open("fail1")
	mustRefuse(t, rt, h, "a call to the open breaker")
	time.Sleep(openFor)
	if st := b.State(); st != middleware.BreakerHalfOpen {
		t.Fatalf("state %s after open_for, want half_open", st)
	}
	sent := h.sent.Load()
	ctx, cancel := context.WithCancel(context.Background())
	t1, t2 := startHeld(t, rt, h, context.Background(), "t1"), startHeld(t, rt, h, context.Background(), "t2")
	left := startHeld(t, rt, h, ctx, "left")
	for range 5 {
		mustRefuse(t, rt, h, "a 4th trial")
	}
	if n := h.sent.Load() - sent; n != 3 {
		t.Fatalf("%d trial calls sent, want 3", n)
	}
	cancel() // the caller left: its slot is free again
	if err := await(t, left, "the cancelled trial to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled trial: %v", err)
	}
	t3 := startHeld(t, rt, h, context.Background(), "t3")
	mustRefuse(t, rt, h, "a 4th trial after the exclusion")
	answer(t, h, "t1", http.StatusOK, t1)
	answer(t, h, "t2", http.StatusNotFound, t2) // a 4xx is a success
	if st := b.State(); st != middleware.BreakerHalfOpen {
		t.Fatalf("state %s after 2 of 3 successes, want half_open", st)
	}
	answer(t, h, "t3", http.StatusOK, t3)
	if st := b.State(); st != middleware.BreakerClosed {
		t.Fatalf("state %s after 3 successes, want closed", st)
	}

	open("fail2")
	time.Sleep(openFor)
	answer(t, h, "t4", http.StatusBadGateway, startHeld(t, rt, h, context.Background(), "t4"))
	if st := b.State(); st != middleware.BreakerOpen {
		t.Fatalf("state %s after a failed trial, want open", st)
	}
	mustRefuse(t, rt, h, "a call to the reopened breaker (a fresh open_for)")
	want := []string{"closed>open", "open>half_open", "half_open>closed", "closed>open", "open>half_open", "half_open>open"}
	if got := tr.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

// TestBreakerIgnoresOlderPhase: outcomes of requests admitted in an older
// phase count in none of the later ones. A request admitted closed and
// held while the breaker opens, half-opens and closes again: its 503 does
// not reopen it (min_requests 1). A trial admitted half-open and held
// while another trial's failure reopens it: its 200 does not close it,
// nor does a 503 of such a trial reopen it once more (no transition).
func TestBreakerIgnoresOlderPhase(t *testing.T) {
	const openFor = 20 * time.Millisecond
	var tr transitions
	b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 1, FailureRatio: 1, OpenFor: openFor, HalfOpenRequests: 2, OnStateChange: tr.hook})
	h := newHeld()
	rt := b.Middleware()(h)
	old := startHeld(t, rt, h, context.Background(), "old")
	answer(t, h, "fail", http.StatusServiceUnavailable, startHeld(t, rt, h, context.Background(), "fail"))
	time.Sleep(openFor)
	answer(t, h, "t1", http.StatusOK, startHeld(t, rt, h, context.Background(), "t1"))
	answer(t, h, "t2", http.StatusOK, startHeld(t, rt, h, context.Background(), "t2"))
	if st := b.State(); st != middleware.BreakerClosed {
		t.Fatalf("state %s after two trials' successes, want closed", st)
	}
	answer(t, h, "old", http.StatusServiceUnavailable, old)
	if st := b.State(); st != middleware.BreakerClosed {
		t.Fatalf("state %s after a 503 admitted before the breaker opened, want closed", st)
	}

	answer(t, h, "fail2", http.StatusServiceUnavailable, startHeld(t, rt, h, context.Background(), "fail2"))
	time.Sleep(openFor)
	held := startHeld(t, rt, h, context.Background(), "held")
	answer(t, h, "t3", http.StatusServiceUnavailable, startHeld(t, rt, h, context.Background(), "t3"))
	answer(t, h, "held", http.StatusOK, held)
	if st := b.State(); st != middleware.BreakerOpen {
		t.Errorf("state %s after a reopened breaker's older trial succeeded, want open", st)
	}

	time.Sleep(openFor)
	heldFail := startHeld(t, rt, h, context.Background(), "heldFail")
	answer(t, h, "t4", http.StatusServiceUnavailable, startHeld(t, rt, h, context.Background(), "t4"))
	answer(t, h, "heldFail", http.StatusServiceUnavailable, heldFail)
	want := []string{
		"closed>open", "open>half_open", "half_open>closed", // the first round
		"closed>open", "open>half_open", "half_open>open", // t3's failure
		"open>half_open", "half_open>open", // t4's, and no more: heldFail's is of an older phase
	}
	if got := tr.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

// TestBreakerWindow: an outcome is forgotten a window after it. With a
// 100ms window, min_requests 2: a failure, then another 150ms later,
// leave the breaker closed; a third at once opens it.
func TestBreakerWindow(t *testing.T) {
	b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 2, FailureRatio: 1, Window: 100 * time.Millisecond, OpenFor: time.Hour})
	rt := b.Middleware()(roundTripFunc(func(*http.Request) (*http.Response, error) { return statusResponse(http.StatusServiceUnavailable), nil }))
	roundTrip(rt)
	time.Sleep(150 * time.Millisecond)
	roundTrip(rt)
	if st := b.State(); st != middleware.BreakerClosed {
		t.Fatalf("state %s after two failures 1.5 windows apart, want closed", st)
	}
	roundTrip(rt)
	if st := b.State(); st != middleware.BreakerOpen {
		t.Fatalf("state %s after two failures in one window, want open", st)
	}
}

// TestBreakerPanic: a RoundTripper that panics counts as a failure: a
// half-open breaker's trial reopens it rather than keeping its slot.
func TestBreakerPanic(t *testing.T) {
	const openFor = 20 * time.Millisecond
	b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 1, FailureRatio: 1, OpenFor: openFor})
	rt := b.Middleware()(roundTripFunc(func(*http.Request) (*http.Response, error) { panic("boom") }))
	send := func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go through the breaker")
			}
		}()
		roundTrip(rt)
	}
	send()
	if st := b.State(); st != middleware.BreakerOpen {
		t.Fatalf("state %s after a panic, want open", st)
	}
	time.Sleep(openFor)
	send()
	if st := b.State(); st != middleware.BreakerOpen {
		t.Fatalf("state %s after a trial's panic, want open", st)
	}
}

// TestBreakerConcurrent, under -race: 8 goroutines hammer a breaker whose
// source schema fails every other call (min_requests 2000, so thousands of
// outcomes are counted concurrently first; open_for 1ms, 2 half-open trials,
// so it goes round its states). It opens; every call is either sent or
// refused with ErrCircuitOpen, never both (the transport's count equals
// the calls not refused); the transitions chain (each from is the last
// to) and include closed>open.
func TestBreakerConcurrent(t *testing.T) {
	const workers, calls = 8, 2000
	var tr transitions
	b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 2000, FailureRatio: 0.5, OpenFor: time.Millisecond, HalfOpenRequests: 2, OnStateChange: tr.hook})
	var sent atomic.Int64
	rt := b.Middleware()(roundTripFunc(func(*http.Request) (*http.Response, error) {
		if sent.Add(1)%2 == 1 {
			return statusResponse(http.StatusServiceUnavailable), nil
		}
		return statusResponse(http.StatusOK), nil
	}))
	var passed, refused atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range calls {
				switch err := roundTrip(rt); {
				case err == nil:
					passed.Add(1)
				case errors.Is(err, fault.ErrCircuitOpen):
					refused.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
		})
	}
	wg.Wait()
	if passed.Load()+refused.Load() != workers*calls || sent.Load() != passed.Load() {
		t.Errorf("%d calls sent, %d passed, %d refused of %d: a refused call was sent", sent.Load(), passed.Load(), refused.Load(), workers*calls)
	}
	got := tr.list()
	if len(got) == 0 || got[0] != "closed>open" || refused.Load() == 0 {
		t.Fatalf("transitions %v, %d refused: the breaker never opened", got, refused.Load())
	}
	for i := 1; i < len(got); i++ {
		if prev, cur := got[i-1], got[i]; prev[strings.Index(prev, ">")+1:] != cur[:strings.Index(cur, ">")] {
			t.Fatalf("transition %d (%s) does not follow %s: %v", i, cur, prev, got)
		}
	}
	t.Logf("%d sent, %d refused, %d transitions", sent.Load(), refused.Load(), len(got))
}

// BenchmarkBreakerParallel is BenchmarkBreaker's closed breaker with every
// core sending at once: its outcomes contend for one bucket.
//
//	go test -run '^$' -bench BenchmarkBreakerParallel -count 6 ./middleware/
func BenchmarkBreakerParallel(b *testing.B) {
	next := &okTransport{http.Response{StatusCode: 200, Body: http.NoBody}}
	rt := middleware.NewBreaker(middleware.BreakerConfig{}).Middleware()(next)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodPost, "http://products.test/graphql", http.NoBody)
		for pb.Next() {
			rt.RoundTrip(req)
		}
	})
}

// TestBreakerTimeoutCause: a transport that returns only its context's
// error (context.Canceled) still has its request judged by the cause the
// context ended with: the header or request timeout is a failure, the
// caller's own cancellation is neither.
func TestBreakerTimeoutCause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		open  bool
	}{
		{"header timeout", &fault.HeaderTimeoutError{Bound: time.Millisecond}, true},
		{"request timeout", &fault.RequestTimeoutError{Bound: time.Millisecond}, true},
		{"caller cancelled", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := middleware.NewBreaker(middleware.BreakerConfig{MinRequests: 1, FailureRatio: 1, OpenFor: time.Hour})
			ctx, cancel := context.WithCancelCause(context.Background())
			rt := b.Middleware()(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				cancel(tc.cause) // the bound ends the call while it is in flight
				return nil, req.Context().Err()
			}))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://products.test/graphql", http.NoBody)
			if _, err := rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if got := b.State(); (got == middleware.BreakerOpen) != tc.open {
				t.Errorf("after a call ended by %v: state %s, want open: %t", tc.cause, got, tc.open)
			}
		})
	}
}
