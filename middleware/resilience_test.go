package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// holdServer answers with the status in the X-Status request header
// (200 without one); a request with X-Hold waits until the request ends.
func holdServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Hold") != "" {
			<-r.Context().Done()
			return
		}
		if s := r.Header.Get("X-Status"); s != "" {
			var code int
			fmt.Sscan(s, &code)
			w.WriteHeader(code)
		}
		io.WriteString(w, `{"data":{}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// outcome is how one request to a hold server ends.
type outcome struct {
	name string
	send func(t *testing.T, rt http.RoundTripper, url string)
}

func sendWith(t *testing.T, rt http.RoundTripper, ctx context.Context, url string, h ...string) {
	req := newRequest(t, ctx, url, queryBody, true)
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// cancelledBy sends a held request and ends its context with cause once
// the server has it.
func cancelledBy(cause error) func(t *testing.T, rt http.RoundTripper, url string) {
	return func(t *testing.T, rt http.RoundTripper, url string) {
		ctx, cancel := context.WithCancelCause(context.Background())
		timer := time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
		defer timer.Stop()
		sendWith(t, rt, ctx, url, "X-Hold", "1")
	}
}

// TestBreakerOutcomes: on the wire, what counts as a failure (a listed
// status, a transport error, a header or request timeout), a success (a
// 4xx, a 200) and neither (the caller's own cancellation). A breaker with
// min_requests 1 opens on one failure; with min_requests 2 and ratio 0.5,
// an outcome followed by a failure opens it unless the outcome was
// excluded.
func TestBreakerOutcomes(t *testing.T) {
	srv, _ := holdServer(t)
	refused := httptest.NewServer(nil)
	refusedURL := refused.URL
	refused.Close()
	cases := []struct {
		outcome
		want    string // failure, success, excluded
		refusal error  // the error a refused request gets further in
	}{
		{outcome{"503", func(t *testing.T, rt http.RoundTripper, url string) {
			sendWith(t, rt, context.Background(), url, "X-Status", "503")
		}}, "failure", nil},
		{outcome{"500", func(t *testing.T, rt http.RoundTripper, url string) {
			sendWith(t, rt, context.Background(), url, "X-Status", "500")
		}}, "failure", nil},
		{outcome{"404", func(t *testing.T, rt http.RoundTripper, url string) {
			sendWith(t, rt, context.Background(), url, "X-Status", "404")
		}}, "success", nil},
		{outcome{"429", func(t *testing.T, rt http.RoundTripper, url string) {
			sendWith(t, rt, context.Background(), url, "X-Status", "429")
		}}, "success", nil},
		{outcome{"200", func(t *testing.T, rt http.RoundTripper, url string) { sendWith(t, rt, context.Background(), url) }}, "success", nil},
		{outcome{"connection refused", func(t *testing.T, rt http.RoundTripper, _ string) { sendWith(t, rt, context.Background(), refusedURL) }}, "failure", nil},
		{outcome{"header timeout", cancelledBy(&fault.HeaderTimeoutError{Bound: 20 * time.Millisecond})}, "failure", nil},
		{outcome{"request timeout", cancelledBy(&fault.RequestTimeoutError{Bound: 20 * time.Millisecond})}, "failure", nil},
		{outcome{"caller cancelled", cancelledBy(context.Canceled)}, "excluded", nil},
		// Refusals of the gateway's own, further in: the schema never saw them.
		{outcome{"overloaded", sendRefused}, "excluded", fault.ErrOverloaded},
		{outcome{"rate limited", sendRefused}, "excluded", fault.ErrRateLimited},
		{outcome{"reloaded", sendRefused}, "excluded", fault.ErrReloaded},
		{outcome{"circuit open further in", sendRefused}, "excluded", fault.ErrCircuitOpen},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := http.RoundTripper(http.DefaultTransport)
			if tc.refusal != nil {
				next = refusingTransport{err: tc.refusal, next: next}
			}
			one := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 1, FailureRatio: 1, OpenFor: time.Hour})
			tc.send(t, one.Middleware()(next), srv.URL)
			if got, wantOpen := one.State(), tc.want == "failure"; (got == middleware.BreakerOpen) != wantOpen {
				t.Errorf("after one %s, state %s; want open: %t", tc.name, got, wantOpen)
			}
			two := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 2, FailureRatio: 0.5, OpenFor: time.Hour})
			rt := two.Middleware()(next)
			tc.send(t, rt, srv.URL)
			sendWith(t, rt, context.Background(), srv.URL, "X-Status", "503")
			if got, wantOpen := two.State(), tc.want != "excluded"; (got == middleware.BreakerOpen) != wantOpen {
				t.Errorf("after a %s and a 503 (min_requests 2), state %s; want open: %t", tc.name, got, wantOpen)
			}
		})
	}
}

// sendRefused sends a request that a refusingTransport turns away, unsent, as
// the sockets pool does at max_pending_requests.
func sendRefused(t *testing.T, rt http.RoundTripper, url string) {
	sendWith(t, rt, context.Background(), url, "X-Refuse", "1")
}

// refusingTransport fails a request that carries X-Refuse with err, and
// sends every other one on next.
type refusingTransport struct {
	err  error
	next http.RoundTripper
}

func (r refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Refuse") != "" {
		return nil, fmt.Errorf("source schema \"products\": %w", r.err)
	}
	return r.next.RoundTrip(req)
}

// TestBreakerStatuses: circuit_breaker.statuses decides which answers are
// failures: nil is the default list (5xx but 501), an empty list none, a
// list only its own statuses, a 4xx included. Each case sends five
// answers of one status through a breaker with min_requests 5.
func TestBreakerStatuses(t *testing.T) {
	srv, seen := holdServer(t)
	cases := []struct {
		name     string
		statuses []int
		status   string
		open     bool
	}{
		{"default/500", nil, "500", true},
		{"default/503", nil, "503", true},
		{"default/501", nil, "501", false},
		{"default/429", nil, "429", false},
		{"empty/500", []int{}, "500", false},
		{"empty/503", []int{}, "503", false},
		{"only 429/429", []int{429}, "429", true},
		{"only 429/500", []int{429}, "500", false},
		{"only 503/500", []int{503}, "500", false},
		{"only 503/503", []int{503}, "503", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 5, FailureRatio: 0.5, OpenFor: time.Hour, Statuses: tc.statuses})
			rt := b.Middleware()(http.DefaultTransport)
			before := seen.Load()
			for range 5 {
				sendWith(t, rt, context.Background(), srv.URL, "X-Status", tc.status)
			}
			if n := seen.Load() - before; n != 5 {
				t.Fatalf("the server saw %d requests, want 5", n)
			}
			if got := b.State(); (got == middleware.BreakerOpen) != tc.open {
				t.Errorf("statuses %v after five %s: state %s; want open: %t", tc.statuses, tc.status, got, tc.open)
			}
		})
	}
}

// TestBreakerRefusesUnsent: an open breaker's refusal wraps ErrCircuitOpen,
// names the schema, and sends nothing; Retry does not try it again.
func TestBreakerRefusesUnsent(t *testing.T) {
	srv, seen := holdServer(t)
	b := middleware.NewBreaker(middleware.BreakerConfig{Schema: "products", MinRequests: 1, OpenFor: time.Hour})
	rt := middleware.Chain(http.DefaultTransport, middleware.Retry(middleware.RetryConfig{MaxAttempts: 5, WaitMin: time.Millisecond}), b.Middleware())
	sendWith(t, rt, context.Background(), srv.URL, "X-Status", "500") // 500 is not retried by default
	if n := seen.Load(); n != 1 {
		t.Fatalf("the server saw %d requests, want 1", n)
	}
	_, err := rt.RoundTrip(newRequest(t, context.Background(), srv.URL, queryBody, true))
	if !errors.Is(err, fault.ErrCircuitOpen) || !strings.Contains(err.Error(), `"products"`) || !strings.Contains(err.Error(), "giving up after 1 attempt(s)") {
		t.Errorf("error %v, want ErrCircuitOpen naming products after 1 attempt", err)
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("the server saw %d requests, want 1: the refusal is unsent", n)
	}
}

// okTransport answers every request with one response, allocating nothing.
type okTransport struct{ resp http.Response }

func (o *okTransport) RoundTrip(*http.Request) (*http.Response, error) { return &o.resp, nil }

// TestBreakerAllocs: a closed breaker costs no allocation per request.
func TestBreakerAllocs(t *testing.T) {
	rt := middleware.NewBreaker(middleware.BreakerConfig{}).Middleware()(&okTransport{http.Response{StatusCode: 200, Body: http.NoBody}})
	req := newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true)
	if n := testing.AllocsPerRun(1000, func() { rt.RoundTrip(req) }); n != 0 {
		t.Errorf("%v allocations per request through a closed breaker, want 0", n)
	}
}

// BenchmarkBreaker is the breaker's own cost per request: a closed breaker
// around a RoundTripper that answers at once, against the bare one.
//
//	go test -run '^$' -bench BenchmarkBreaker -count 6 ./middleware/
func BenchmarkBreaker(b *testing.B) {
	next := &okTransport{http.Response{StatusCode: 200, Body: http.NoBody}}
	req, _ := http.NewRequest(http.MethodPost, "http://products.test/graphql", http.NoBody)
	for _, v := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"off", next},
		{"closed", middleware.NewBreaker(middleware.BreakerConfig{}).Middleware()(next)},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.rt.RoundTrip(req)
			}
		})
	}
}

// TestRetryBudget: with ratio 0.5 and no floor, 100 first tries allow
// exactly 50 extra tries, however many goroutines spend at once; First
// and Spend allocate nothing.
func TestRetryBudget(t *testing.T) {
	var refused atomic.Int64
	b := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.5, MinPerSecond: -1, OnExhausted: func(context.Context, bool) { refused.Add(1) }})
	for range 100 {
		b.First()
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if b.Spend(context.Background()) {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if g, r := granted.Load(), refused.Load(); g != 50 || r != 150 {
		t.Errorf("granted %d, refused %d of 200; want 50 and 150", g, r)
	}
	floor := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.2, MinPerSecond: 3})
	n := 0
	for floor.Spend(context.Background()) {
		n++
	}
	if n != 30 {
		t.Errorf("a budget without first tries and a floor of 3 per second granted %d over the window, want 30", n)
	}
	if a := testing.AllocsPerRun(1000, func() { b.First(); b.Spend(context.Background()) }); a != 0 {
		t.Errorf("%v allocations per First and Spend, want 0", a)
	}
}

// budgetClock is a RetryBudget's clock that a test sets by hand: the time
// elapsed since the budget was made.
type budgetClock struct{ d atomic.Int64 }

func (c *budgetClock) now() time.Duration   { return time.Duration(c.d.Load()) }
func (c *budgetClock) set(at time.Duration) { c.d.Store(int64(at)) }

// TestRetryBudgetWindow: what the budget's sliding window holds, on a
// clock the test sets. A first try or an extra one counts while it is
// less than BudgetWindow (10 s) old, in one-second buckets: from 9.5 s
// ago still, from 10 s ago no more. A bucket reused for a later second
// starts empty: a busy second's first tries (and extras) do not linger
// into the second ten later, where they would let a failing schema retry
// more than the ratio of its recent traffic.
func TestRetryBudgetWindow(t *testing.T) {
	type step struct {
		at      time.Duration // since the budget was made
		first   int           // first tries counted
		spend   int           // extra tries asked for
		granted int           // of those, how many the budget gives
	}
	const s = time.Second
	cases := []struct {
		name         string
		ratio        float64
		minPerSecond int
		steps        []step
	}{
		{"first tries 9.5 s ago count", 1, -1, []step{{at: 0, first: 1}, {at: 9500 * time.Millisecond, spend: 2, granted: 1}}},
		{"first tries 10 s ago do not", 1, -1, []step{{at: 0, first: 1}, {at: 10 * s, spend: 1}}},
		{"first tries 10.5 s ago do not", 1, -1, []step{{at: 500 * time.Millisecond, first: 1}, {at: 11 * s, spend: 1}}},
		{"first tries 11.5 s ago do not", 1, -1, []step{{at: 0, first: 1}, {at: 11500 * time.Millisecond, spend: 1}}},
		{"first tries of every second of the window count", 0.5, -1, []step{
			{at: 0, first: 10}, {at: 1 * s, first: 10}, {at: 2 * s, first: 10}, {at: 3 * s, first: 10}, {at: 4 * s, first: 10},
			{at: 5 * s, first: 10}, {at: 6 * s, first: 10}, {at: 7 * s, first: 10}, {at: 8 * s, first: 10}, {at: 9 * s, first: 10},
			{at: 9900 * time.Millisecond, spend: 60, granted: 50},
			// The first second's tries leave: 90 first tries allow 45, and
			// the 50 extras of 9 s ago are all still in.
			{at: 10 * s, spend: 1},
		}},
		{"extras 9.5 s ago count, 10 s ago not", 1, 1, []step{
			{at: 0, spend: 11, granted: 10}, // the floor: 1 a second over the window
			{at: 9500 * time.Millisecond, spend: 1},
			{at: 10 * s, spend: 11, granted: 10},
		}},
		{"a busy second's first tries leave with it", 0.5, -1, []step{
			{at: 0, first: 100},
			{at: 10 * s, first: 2, spend: 5, granted: 1}, // the same bucket, reused
		}},
		{"a busy second's extras leave with it", 0.5, -1, []step{
			{at: 0, first: 100, spend: 50, granted: 50},
			{at: 10 * s, first: 2, spend: 5, granted: 1},
		}},
		{"a bucket reused after a long pause starts empty", 1, -1, []step{
			{at: 3 * s, first: 5},
			{at: 53 * s, first: 1, spend: 3, granted: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var clock budgetClock
			b := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: tc.ratio, MinPerSecond: tc.minPerSecond})
			middleware.SetBudgetClock(b, clock.now)
			for _, st := range tc.steps {
				clock.set(st.at)
				for range st.first {
					b.First()
				}
				granted := 0
				for range st.spend {
					if b.Spend(context.Background()) {
						granted++
					}
				}
				if granted != st.granted {
					t.Errorf("at %s: %d of %d extra tries granted, want %d", st.at, granted, st.spend, st.granted)
				}
			}
		})
	}
}

// TestRetryBudgetDefaults: a ratio that is zero, negative or NaN is 0.2,
// and a MinPerSecond of zero is 10 a second (100 over the window), on a
// clock that stands still.
func TestRetryBudgetDefaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     middleware.RetryBudgetConfig
		first   int
		granted int
	}{
		{"ratio 0 is 0.2", middleware.RetryBudgetConfig{MinPerSecond: -1}, 50, 10},
		{"negative ratio is 0.2", middleware.RetryBudgetConfig{Ratio: -1, MinPerSecond: -1}, 50, 10},
		{"NaN ratio is 0.2", middleware.RetryBudgetConfig{Ratio: math.NaN(), MinPerSecond: -1}, 50, 10},
		{"floor 0 is 10 a second", middleware.RetryBudgetConfig{Ratio: 0.001}, 0, 100},
		{"negative floor is none", middleware.RetryBudgetConfig{Ratio: 0.5, MinPerSecond: -1}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clock budgetClock
			b := middleware.NewRetryBudget(tc.cfg)
			middleware.SetBudgetClock(b, clock.now)
			for range tc.first {
				b.First()
			}
			granted := 0
			for range 1000 {
				if b.Spend(context.Background()) {
					granted++
				}
			}
			if granted != tc.granted {
				t.Errorf("%d first tries: %d extra tries granted, want %d", tc.first, granted, tc.granted)
			}
		})
	}
}

// TestRetryBudgetWarnsOnceASecond: OnExhausted is called for every
// refusal, with warn true for the first of each second only.
func TestRetryBudgetWarnsOnceASecond(t *testing.T) {
	var clock budgetClock
	var warns []bool
	b := middleware.NewRetryBudget(middleware.RetryBudgetConfig{MinPerSecond: -1, OnExhausted: func(_ context.Context, warn bool) { warns = append(warns, warn) }})
	middleware.SetBudgetClock(b, clock.now)
	for _, at := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 1900 * time.Millisecond, 5 * time.Second} {
		clock.set(at)
		if b.Spend(context.Background()) {
			t.Fatalf("at %s: an empty budget without a floor granted a try", at)
		}
	}
	if want := []bool{true, false, false, true, false, true}; fmt.Sprint(warns) != fmt.Sprint(want) {
		t.Errorf("warn on each refusal %v, want %v", warns, want)
	}
}

// TestRetrySpendsBudget: on the wire, a failing schema with max_attempts
// 5 and a budget of ratio 1 without a floor (each first try pays for one
// retry) sees 2 requests for each query, not 5.
func TestRetrySpendsBudget(t *testing.T) {
	srv, seen := holdServer(t)
	budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 1, MinPerSecond: -1})
	rt := middleware.Retry(middleware.RetryConfig{MaxAttempts: 5, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Budget: budget})(http.DefaultTransport)
	sendWith(t, rt, context.Background(), srv.URL, "X-Status", "503")
	if n := seen.Load(); n != 2 {
		t.Errorf("first query: the server saw %d requests, want 2 (1 first try, 1 retry the budget allows)", n)
	}
	sendWith(t, rt, context.Background(), srv.URL, "X-Status", "503")
	if n := seen.Load(); n != 4 {
		t.Errorf("second query: the server saw %d requests in all, want 4", n)
	}
}

// TestHedgeQuantile: with a p90 delay, a query is not hedged until 20
// samples are in (a held first query is sent once); after 20 fast queries
// a held query is hedged and the hedge's answer returned; a held mutation
// is sent once.
func TestHedgeQuantile(t *testing.T) {
	var mu sync.Mutex
	arrivals := map[string]int{}           // by X-Id
	releases := map[string]chan struct{}{} // by X-Id: closed to release its held arrival
	releaseOf := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if releases[id] == nil {
			releases[id] = make(chan struct{})
		}
		return releases[id]
	}
	arrived := make(chan string, 100) // the X-Id of each held arrival
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-Id")
		mu.Lock()
		arrivals[id]++
		n := arrivals[id]
		mu.Unlock()
		if r.Header.Get("X-Slow") != "" && n == 1 {
			arrived <- id
			select {
			case <-releaseOf(id):
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, "%s arrival %d", id, n)
	}))
	defer srv.Close()
	seen := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return arrivals[id]
	}
	// releaseOn releases the held arrival of id once it is in.
	releaseOn := func(id string) {
		go func() {
			for got := range arrived {
				if got == id {
					close(releaseOf(id))
					return
				}
			}
		}()
	}
	defer close(releaseOf("late")) // held until the hedge cancels it
	var sent, won atomic.Int64
	// OnSent fires when a hedge's attempt ends: after the caller's
	// return when the hedge is the held arrival and is cancelled by the
	// winner, so the test waits for it here rather than reading a count.
	sentCh := make(chan struct{}, 10)
	lat := middleware.NewLatencies()
	rt := middleware.Hedge(middleware.HedgeConfig{Quantile: 0.9, Latencies: lat,
		OnSent: func(context.Context) { sent.Add(1); sentCh <- struct{}{} },
		OnWon:  func(context.Context) { won.Add(1) }})(http.DefaultTransport)
	// The fast queries go through a hedge of their own that shares the
	// samples: once 20 are in, one of them may be hedged too, and its
	// hedge reported later, from the goroutine that drains the loser;
	// counted with the late query's, it would make the count flaky.
	fastRT := middleware.Hedge(middleware.HedgeConfig{Quantile: 0.9, Latencies: lat})(http.DefaultTransport)
	send := func(rt http.RoundTripper, body, id string, slow bool) string {
		req := newRequest(t, context.Background(), srv.URL, body, true)
		req.Header.Set("X-Id", id)
		if slow {
			req.Header.Set("X-Slow", "1")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	releaseOn("early")
	if got := send(rt, queryBody, "early", true); got != "early arrival 1" || sent.Load() != 0 || seen("early") != 1 {
		t.Fatalf("a held query before 20 samples: %q, %d hedges, %d arrivals; want its one arrival and no hedge", got, sent.Load(), seen("early"))
	}
	for i := range 20 {
		send(fastRT, queryBody, fmt.Sprint("fast", i), false)
	}
	before := sent.Load()
	// The delay is the 0.9 quantile of fast samples, well under a
	// millisecond: on a loaded machine the hedge may reach the server
	// before the first attempt and be the one held. Either way the caller
	// gets the attempt that was not held (arrival 2), which without a
	// hedge would never come before the release at the test's end.
	got := send(rt, queryBody, "late", true)
	if await(t, arrived, "the late query's held arrival") != "late" {
		t.Error("the held arrival was not the late query's")
	}
	await(t, sentCh, "the late query's hedge to be reported sent")
	if got != "late arrival 2" || sent.Load() != before+1 {
		t.Errorf("a held query after 21 samples: %q, %d hedges sent for it (%d won); want the arrival that was not held, 2, after one hedge", got, sent.Load()-before, won.Load())
	}
	releaseOn("mutation")
	if got := send(rt, mutationBody, "mutation", true); got != "mutation arrival 1" || seen("mutation") != 1 {
		t.Errorf("a held mutation: %q with %d arrivals, want one", got, seen("mutation"))
	}
}

// TestResilienceHostileConfig: out-of-range configurations (NaN, huge,
// negative) build working middleware and never panic.
func TestResilienceHostileConfig(t *testing.T) {
	srv, _ := holdServer(t)
	nan := math.NaN()
	b := middleware.NewBreaker(middleware.BreakerConfig{FailureRatio: nan, MinRequests: math.MaxInt, Window: -1, OpenFor: -1, HalfOpenRequests: math.MaxInt, Statuses: []int{-5}})
	budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: nan, MinPerSecond: math.MaxInt})
	rt := middleware.Chain(http.DefaultTransport,
		middleware.Retry(middleware.RetryConfig{MaxAttempts: 2, WaitMin: time.Millisecond, Budget: budget}),
		middleware.Hedge(middleware.HedgeConfig{Quantile: nan, Delay: -1, MaxExtra: -3, Budget: budget}),
		middleware.Hedge(middleware.HedgeConfig{Quantile: 7, MaxExtra: math.MaxInt, Budget: budget}),
		b.Middleware())
	for range 30 {
		sendWith(t, rt, context.Background(), srv.URL, "X-Status", "503")
	}
	if !budget.Spend(context.Background()) {
		t.Error("a budget with a huge floor refused a retry")
	}
	l := middleware.NewLatencies()
	for range 30 {
		l.Record(time.Millisecond)
	}
	for _, q := range []float64{nan, -1, 0, 0.5, 1, 2, math.Inf(1)} {
		l.Quantile(q)
	}
}

// closeSpy is a response body that reports its Close.
type closeSpy struct {
	io.Reader
	closed chan struct{}
}

func (b *closeSpy) Close() error { close(b.closed); return nil }

// TestHedgeLoserClosed: when the first attempt's response arrives after
// the hedge's won (as the hedge cancels it), it is drained and closed, and
// the first attempt's context was cancelled; with the budget spent, a
// late query is not hedged.
func TestHedgeLoserClosed(t *testing.T) {
	loser := &closeSpy{Reader: strings.NewReader("late"), closed: make(chan struct{})}
	cancelled := make(chan bool, 1)
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		// The first attempt is held until the hedge that overtook it
		// cancels it, and then answers all the same: its response came
		// as the cancellation did.
		if !middleware.IsHedge(req.Context()) {
			select {
			case <-req.Context().Done():
				cancelled <- true
			case <-time.After(guard):
				cancelled <- false
			}
			return &http.Response{StatusCode: 200, Body: loser}, nil
		}
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("hedge"))}, nil
	})
	var won, sentHedges atomic.Int64
	rt := middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, OnWon: func(context.Context) { won.Add(1) }, OnSent: func(context.Context) { sentHedges.Add(1) }})(next)
	resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hedge" {
		t.Fatalf("body %q, want the hedge's", body)
	}
	// The hedge's attempt ended before RoundTrip returned: both are told.
	if won.Load() != 1 || sentHedges.Load() != 1 {
		t.Errorf("OnWon called %d times, OnSent %d, want 1 and 1", won.Load(), sentHedges.Load())
	}
	if !await(t, cancelled, "the losing attempt's end") {
		t.Error("the losing attempt's context was not cancelled")
	}
	select {
	case <-loser.closed:
	case <-time.After(guard):
		t.Fatal("the losing attempt's response was never closed")
	}

	// No budget left: no hedge; the query waits for its one attempt. The
	// budget's refusal (OnExhausted) tells when the hedge was due.
	exhausted := make(chan struct{}, 1)
	budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.01, MinPerSecond: -1, OnExhausted: func(context.Context, bool) { exhausted <- struct{}{} }})
	var sent, calls atomic.Int64
	hold := make(chan struct{})
	next = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			select {
			case <-hold:
			case <-time.After(guard):
				t.Error("the held attempt was never released")
			}
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	rt = middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, Budget: budget, CountFirst: true, OnSent: func(context.Context) { sent.Add(1) }})(next)
	done := make(chan error, 1)
	go func() {
		resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	await(t, exhausted, "the budget's refusal of the hedge")
	close(hold)
	if err := await(t, done, "the query's end"); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 || sent.Load() != 0 {
		t.Errorf("%d attempts, %d hedges with the budget spent; want 1 and 0", n, sent.Load())
	}
}

// TestHedgeRefusedUnsent: a hedge that a breaker or rate limit further in
// refuses unsent is not reported as sent and gives its budget back. The
// budget holds one extra try (two first tries at ratio 0.5, no floor):
// the first query's hedge is refused, so the second query's hedge still
// finds the budget and goes out. The transport holds each first try until
// its hedge came, then fails it, so that the hedger waits for both
// attempts and settles each hedge before it returns.
func TestHedgeRefusedUnsent(t *testing.T) {
	for _, refusal := range []error{fault.ErrRateLimited, fault.ErrCircuitOpen} {
		t.Run(refusal.Error(), func(t *testing.T) {
			budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.5, MinPerSecond: -1})
			budget.First()
			budget.First()
			var sent atomic.Int64
			var mu sync.Mutex
			attempts := map[string]int{}
			hedgeIn := map[string]chan struct{}{"q1": make(chan struct{}), "q2": make(chan struct{})}
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				id := req.Header.Get("X-Id")
				mu.Lock()
				attempts[id]++
				mu.Unlock()
				if !middleware.IsHedge(req.Context()) { // the first try: held until its hedge came
					select {
					case <-hedgeIn[id]:
					case <-time.After(guard):
						t.Errorf("%s: no hedge came", id)
					}
					return nil, errors.New("connection reset by peer")
				}
				close(hedgeIn[id])
				if id == "q1" {
					return nil, fmt.Errorf("source schema %q: %w", "products", refusal)
				}
				resp, _ := fakeResponse(req, 200, "hedge")
				return resp, nil
			})
			rt := middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1, Budget: budget, OnSent: func(context.Context) { sent.Add(1) }})(next)
			for _, id := range []string{"q1", "q2"} {
				req := newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true)
				req.Header.Set("X-Id", id)
				resp, err := rt.RoundTrip(req)
				if id == "q1" {
					if err == nil {
						resp.Body.Close()
						t.Fatal("q1: both attempts failed, yet an answer came")
					}
					if got := sent.Load(); got != 0 {
						t.Errorf("after the refused hedge: %d hedges reported sent, want 0", got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if attempts["q2"] != 2 || sent.Load() != 1 {
				t.Errorf("the second query made %d attempts, %d hedges reported sent; want 2 and 1 (the refused hedge's budget given back)", attempts["q2"], sent.Load())
			}
		})
	}
}

// hedgeWire is a source schema for hedge tests: it counts the requests of
// each X-Id, wakes arrivals on each arrival (a token per arrival, which
// may be left unread: only count tells which), and holds every request
// until the test releases its X-Id (or the request's context ends, or the
// guard passes), then answers 200 "<id> arrival <n>".
type hedgeWire struct {
	t        *testing.T
	arrivals chan string
	mu       sync.Mutex
	seen     map[string]int
	release  map[string]chan struct{}
}

func newHedgeWire(t *testing.T) *hedgeWire {
	return &hedgeWire{t: t, arrivals: make(chan string, 256), seen: map[string]int{}, release: map[string]chan struct{}{}}
}

// releaseOf returns the channel that releases id's requests. w.mu is held.
func (w *hedgeWire) releaseOf(id string) chan struct{} {
	if w.release[id] == nil {
		w.release[id] = make(chan struct{})
	}
	return w.release[id]
}

// free releases the requests of id, those held and those to come.
func (w *hedgeWire) free(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.releaseOf(id))
}

// count is how many requests of id arrived.
func (w *hedgeWire) count(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[id]
}

func (w *hedgeWire) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body)
	req.Body.Close()
	id := req.Header.Get("X-Id")
	w.mu.Lock()
	w.seen[id]++
	n := w.seen[id]
	release := w.releaseOf(id)
	w.mu.Unlock()
	w.arrivals <- id
	select {
	case <-release:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	case <-time.After(guard):
		w.t.Errorf("request %s (arrival %d) held past the guard", id, n)
		return nil, errors.New("held past the guard")
	}
	resp, _ := fakeResponse(req, http.StatusOK, fmt.Sprintf("%s arrival %d", id, n))
	return resp, nil
}

// waitFor waits until n requests of id have arrived.
func (w *hedgeWire) waitFor(id string, n int) {
	w.t.Helper()
	for w.count(id) < n {
		await(w.t, w.arrivals, fmt.Sprintf("arrival %d of %s", n, id))
	}
}

// hedgeCall sends body with X-Id id through rt on its own goroutine; the
// channel gets the response's body, or the error's text.
func hedgeCall(t *testing.T, rt http.RoundTripper, ctx context.Context, id, body string) <-chan string {
	done := make(chan string, 1)
	req := newRequest(t, ctx, "http://products.test/graphql", body, true)
	req.Header.Set("X-Id", id)
	go func() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	return done
}

// elapse returns once at least extra×delay has passed, proven on the
// wire rather than by a sleep: a query sent through a hedge of that delay
// and extra hedges, held at w, has had its last hedge arrive.
func elapse(t *testing.T, w *hedgeWire, delay time.Duration, extra int, id string) {
	t.Helper()
	rt := middleware.Hedge(middleware.HedgeConfig{Delay: delay, MaxExtra: extra})(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := hedgeCall(t, rt, ctx, id, queryBody)
	w.waitFor(id, 1+extra)
	cancel()
	await(t, done, "the clock query's end")
}

// TestHedgeOnlyQueries: a request that is not a query is sent once,
// however long it is held past the hedge delay: a mutation's second copy
// would run it twice. Each request is held until a query sent after it
// through the same hedge had three hedges (3 × 2 ms), so its own hedge,
// due at 2 ms, would have arrived.
func TestHedgeOnlyQueries(t *testing.T) {
	const delay = 2 * time.Millisecond
	for _, tc := range []struct{ name, body string }{
		{"mutation", mutationBody},
		{"subscription", subscriptionBody},
		{"persisted query, kind unknown", persistedBody},
		{"batch with a mutation", `[` + queryBody + `,` + mutationBody + `]`},
		{"case variant running a mutation", caseVariantBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newHedgeWire(t)
			rt := middleware.Hedge(middleware.HedgeConfig{Delay: delay, MaxExtra: 3})(w)
			done := hedgeCall(t, rt, context.Background(), "op", tc.body)
			w.waitFor("op", 1)
			elapse(t, w, delay, 3, "clock")
			if n := w.count("op"); n != 1 {
				t.Errorf("held past 3 hedge delays, the source schema got it %d times, want once", n)
			}
			w.free("op")
			if got := await(t, done, "the caller's answer"); got != "op arrival 1" {
				t.Errorf("the caller got %q, want %q", got, "op arrival 1")
			}
		})
	}
}

// TestHedgeQuantileMinSamples: a quantile delay hedges nothing until
// Latencies holds MinLatencySamples: with 19 samples of 1µs, a query held
// past 3 × 2 ms is sent once; its own time to headers is the 20th sample,
// after which a held query is hedged (its p50 is then 1µs).
func TestHedgeQuantileMinSamples(t *testing.T) {
	lat := middleware.NewLatencies()
	for range middleware.MinLatencySamples - 1 {
		lat.Record(time.Microsecond)
	}
	w := newHedgeWire(t)
	rt := middleware.Hedge(middleware.HedgeConfig{Quantile: 0.5, Latencies: lat, MaxExtra: 1})(w)
	done := hedgeCall(t, rt, context.Background(), "q19", queryBody)
	w.waitFor("q19", 1)
	elapse(t, w, 2*time.Millisecond, 3, "clock")
	if n := w.count("q19"); n != 1 {
		t.Errorf("with %d samples, a held query was sent %d times, want once", middleware.MinLatencySamples-1, n)
	}
	w.free("q19")
	await(t, done, "the first query's answer")

	done = hedgeCall(t, rt, context.Background(), "q20", queryBody)
	w.waitFor("q20", 2) // the hedge
	w.free("q20")
	if got := await(t, done, "the second query's answer"); !strings.HasPrefix(got, "q20 arrival") {
		t.Errorf("the second query got %q", got)
	}
}

// TestLatenciesQuantile: Quantile is zero below MinLatencySamples and for
// a q that is not above zero; from then on it is the sample at q of the
// sorted samples (1 ms to n ms here), above 1 the largest.
func TestLatenciesQuantile(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		samples int
		q       float64
		want    time.Duration
	}{
		{0, 0.5, 0},
		{1, 0.5, 0},
		{middleware.MinLatencySamples - 1, 0.5, 0},
		{middleware.MinLatencySamples - 1, 1, 0},
		{middleware.MinLatencySamples, 0.5, 11 * ms},
		{middleware.MinLatencySamples, 0.9, 19 * ms},
		{middleware.MinLatencySamples, 1, 20 * ms},
		{middleware.MinLatencySamples, 7, 20 * ms},
		{middleware.MinLatencySamples, 0, 0},
		{middleware.MinLatencySamples, -1, 0},
		{middleware.MinLatencySamples, math.NaN(), 0},
		{100, 0.5, 51 * ms},
	} {
		l := middleware.NewLatencies()
		for i := range tc.samples {
			l.Record(time.Duration(i+1) * ms)
		}
		if got := l.Quantile(tc.q); got != tc.want {
			t.Errorf("%d samples, quantile %v: %s, want %s", tc.samples, tc.q, got, tc.want)
		}
	}
}

// TestHedgeBudgetFirstTries: a hedge is paid from first tries. With
// max_attempts 1 Retry is off and counts nothing, so Hedge counts them
// (CountFirst); with more, Retry does and Hedge must not. Either way, at
// ratio 0.5 without a floor, of four queries in a row held until their
// hedge came or the budget refused it, the 2nd and 4th are hedged (2 of
// 4 first tries allow 1 extra, 4 allow 2).
func TestHedgeBudgetFirstTries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxAttempts int
		countFirst  bool
	}{
		{"max_attempts 1, Hedge counts", 1, true},
		{"max_attempts 3, Retry counts", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := make(chan struct{}, 8)
			budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.5, MinPerSecond: -1, OnExhausted: func(context.Context, bool) { refused <- struct{}{} }})
			w := newHedgeWire(t)
			rt := middleware.Chain(w,
				middleware.Retry(middleware.RetryConfig{MaxAttempts: tc.maxAttempts, WaitMin: time.Millisecond, Budget: budget}),
				middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1, Budget: budget, CountFirst: tc.countFirst}))
			var hedged []bool
			for i := range 4 {
				id := fmt.Sprint("q", i+1)
				done := hedgeCall(t, rt, context.Background(), id, queryBody)
				w.waitFor(id, 1)
				// arrivals only wakes the loop: the count tells.
			outcome:
				for {
					if w.count(id) >= 2 {
						hedged = append(hedged, true)
						break
					}
					select {
					case <-refused:
						hedged = append(hedged, false)
						break outcome
					case <-w.arrivals:
					case <-time.After(guard):
						t.Fatalf("%s: neither a hedge nor the budget's refusal came", id)
					}
				}
				w.free(id)
				await(t, done, id+"'s answer")
			}
			if want := []bool{false, true, false, true}; fmt.Sprint(hedged) != fmt.Sprint(want) {
				t.Errorf("queries hedged %v, want %v", hedged, want)
			}
		})
	}
}

// TestHedgeMaxExtra: a query held at the source schema is sent 1 +
// MaxExtra times, one more each delay, and no more however long it is
// held; MaxExtra is capped at MaxHedgeExtra, and zero or negative is 1.
func TestHedgeMaxExtra(t *testing.T) {
	const delay = time.Millisecond
	for _, tc := range []struct{ maxExtra, want int }{
		{-1, 2}, {0, 2}, {1, 2}, {2, 3}, {100, 1 + middleware.MaxHedgeExtra},
	} {
		t.Run(fmt.Sprint("max_extra ", tc.maxExtra), func(t *testing.T) {
			w := newHedgeWire(t)
			rt := middleware.Hedge(middleware.HedgeConfig{Delay: delay, MaxExtra: tc.maxExtra})(w)
			done := hedgeCall(t, rt, context.Background(), "q", queryBody)
			w.waitFor("q", tc.want)
			elapse(t, w, delay, 3, "clock")
			if n := w.count("q"); n != tc.want {
				t.Errorf("held past 3 more delays, the query was sent %d times, want %d", n, tc.want)
			}
			w.free("q")
			await(t, done, "the query's answer")
		})
	}
}

// TestHedgeErrorLeavesOthers: an attempt that fails with an error leaves
// the others running; the caller gets the answer of one that is still
// out. The first attempt fails once its hedge arrived, and the hedge
// answers only once the hedger has taken in that failure (it cancels the
// failed attempt's context then).
func TestHedgeErrorLeavesOthers(t *testing.T) {
	hedgeIn, firstTaken := make(chan struct{}), make(chan struct{})
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if !middleware.IsHedge(req.Context()) {
			context.AfterFunc(req.Context(), func() { close(firstTaken) })
			await(t, hedgeIn, "the hedge")
			return nil, errors.New("connection reset by peer")
		}
		close(hedgeIn)
		await(t, firstTaken, "the first attempt's failure to be taken in")
		resp, _ := fakeResponse(req, http.StatusOK, "hedge")
		return resp, nil
	})
	rt := middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1})(next)
	done := hedgeCall(t, rt, context.Background(), "q", queryBody)
	if got := await(t, done, "the query's answer"); got != "hedge" {
		t.Errorf("the caller got %q, want the hedge's answer", got)
	}
}

// TestIsHedge: of a query held until its second hedge arrived (MaxExtra
// 2), exactly one attempt, the first sent, is no hedge; a context Hedge
// did not make, and a request Hedge sends once (a mutation), report none.
func TestIsHedge(t *testing.T) {
	if middleware.IsHedge(context.Background()) {
		t.Error("IsHedge(context.Background()) is true")
	}
	for _, tc := range []struct {
		name       string
		body       string
		wantHedges int
	}{
		{"query", queryBody, 2},
		{"mutation", mutationBody, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var hedges, firsts int
			all := make(chan struct{})
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				if middleware.IsHedge(req.Context()) {
					hedges++
				} else {
					firsts++
				}
				if hedges+firsts == 1+tc.wantHedges {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all: // every attempt is out: any may answer
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
				resp, _ := fakeResponse(req, http.StatusOK, "{}")
				return resp, nil
			})
			rt := middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 2})(next)
			done := hedgeCall(t, rt, context.Background(), "q", tc.body)
			if got := await(t, done, "the answer"); got != "{}" {
				t.Fatalf("the caller got %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if firsts != 1 || hedges != tc.wantHedges {
				t.Errorf("%d attempts without IsHedge, %d with; want 1 and %d", firsts, hedges, tc.wantHedges)
			}
		})
	}
}
