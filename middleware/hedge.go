package middleware

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/operation"
)

// HedgeConfig configures Hedge.
type HedgeConfig struct {
	// Delay is how long a query waits for its response headers before it
	// is sent once more. Used when Quantile is zero; zero or negative with
	// no Quantile turns hedging off. Default: 0 (off).
	Delay time.Duration

	// Quantile, in (0, 1), makes the delay that quantile of Latencies,
	// the schema's recent times to response headers; until Latencies holds
	// MinLatencySamples, queries are not hedged. Zero: Delay is used.
	// Default: 0.
	Quantile float64

	// Latencies keeps the samples of a Quantile delay; Hedge records every
	// query's time to headers in it. Share one per source schema (across
	// a reload, too). Nil with a Quantile: Hedge makes its own.
	// Default: nil.
	Latencies *Latencies

	// MaxExtra is how many more times a query may be sent, one more after
	// each Delay without headers. Zero or negative means the default;
	// above MaxHedgeExtra means MaxHedgeExtra. Default: 1.
	MaxExtra int

	// Budget, if set, pays for each hedge: with no room left, no hedge is
	// sent. Default: nil (MaxExtra is the only bound).
	Budget *RetryBudget

	// CountFirst counts each query in Budget as a first try, for a
	// pipeline where no Retry does so. Default: false.
	CountFirst bool

	// OnSent, if set, is called for each hedge that went out, once its
	// attempt ended: on the query's goroutine, or for a hedge still in
	// flight when another attempt won, on the goroutine that drains it. A
	// hedge that a breaker or rate limit further in refused unsent is not
	// reported, and its budget is given back. OnWon, if set, is called
	// when a hedge's response is the one returned, on the query's
	// goroutine. Both get the query's context (the request's, not the
	// hedge's own, which ends with the query). Neither may block.
	// Default: nil.
	OnSent, OnWon func(ctx context.Context)
}

// MaxHedgeExtra is the most HedgeConfig.MaxExtra can be: 16.
const MaxHedgeExtra = defaults.MaxHedgeExtra

// MinLatencySamples is how many samples a Latencies needs before its
// quantile is used as a hedge delay.
const MinLatencySamples = 20

const (
	latencyRing      = 1024                   // samples kept
	latencyEvery     = 64                     // samples between recomputations, at most
	latencyRecompute = 100 * time.Millisecond // time between recomputations, at most
)

// Latencies is a bounded record of a source schema's recent times to
// response headers: a ring of the last 1024 samples, written with atomics,
// whose quantile is recomputed at most every 100 ms or every 64 samples,
// whichever comes first. It is safe for concurrent use.
type Latencies struct {
	n       atomic.Int64              // samples recorded
	ring    [latencyRing]atomic.Int64 // nanoseconds
	cached  atomic.Int64              // the quantile last computed, ns; 0: none
	at      atomic.Int64              // n when cached was computed
	when    atomic.Int64              // when cached was computed, ns since start
	start   time.Time                 // immutable
	mu      sync.Mutex                // held while recomputing; guards scratch
	scratch []int64
}

// NewLatencies returns an empty record.
func NewLatencies() *Latencies { return &Latencies{start: time.Now()} }

// Record adds one sample.
func (l *Latencies) Record(d time.Duration) {
	i := l.n.Add(1) - 1
	l.ring[i%latencyRing].Store(int64(d))
}

// Quantile returns quantile q (in (0, 1); above 1 is the largest sample)
// of the recent samples, or zero while there are fewer than
// MinLatencySamples or for a q that is not above zero. One Latencies
// serves one q: the value is cached for the next calls.
func (l *Latencies) Quantile(q float64) time.Duration {
	n := l.n.Load()
	if n < MinLatencySamples || !(q > 0) {
		return 0 // too few samples, or q is not a quantile (zero, negative, NaN)
	}
	q = min(q, 1)
	now := int64(time.Since(l.start))
	if c := l.cached.Load(); c > 0 && n-l.at.Load() < latencyEvery && now-l.when.Load() < int64(latencyRecompute) {
		return time.Duration(c)
	}
	if !l.mu.TryLock() {
		if c := l.cached.Load(); c > 0 {
			return time.Duration(c) // another goroutine is recomputing
		}
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	size := int(min(n, latencyRing))
	l.scratch = l.scratch[:0]
	for i := range size {
		l.scratch = append(l.scratch, l.ring[i].Load())
	}
	slices.Sort(l.scratch)
	idx := min(int(q*float64(size)), size-1)
	v := max(l.scratch[idx], 1)
	l.cached.Store(v)
	l.at.Store(n)
	l.when.Store(now)
	return time.Duration(v)
}

// Hedge returns a middleware that sends a query (operation.Classify) once more
// when its response headers have not arrived after the delay, up to
// cfg.MaxExtra more times: the first response wins, the other attempts are
// cancelled (their context ends; a response that still arrives is drained
// and closed). An attempt that fails with an error leaves the others
// running; the query fails with the last error when all have failed. The
// body is replayed from the bytes read to classify the request.
// Mutations, subscriptions and requests whose kind cannot be told are sent
// once, untouched. cfg is copied.
func Hedge(cfg HedgeConfig) Middleware {
	if cfg.Quantile <= 0 && cfg.Delay <= 0 {
		return func(next http.RoundTripper) http.RoundTripper { return next }
	}
	cfg.MaxExtra = min(cfg.MaxExtra, MaxHedgeExtra)
	if cfg.MaxExtra <= 0 {
		cfg.MaxExtra = defaults.HedgeMaxExtra
	}
	if cfg.Quantile > 0 && cfg.Latencies == nil {
		cfg.Latencies = NewLatencies()
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &hedger{wrapped: wrap(next), cfg: cfg}
	}
}

// hedger is the RoundTripper of Hedge.
type hedger struct {
	wrapped
	cfg HedgeConfig // immutable, with defaults applied
}

// delay returns the wait before a hedge, zero for none.
func (h *hedger) delay() time.Duration {
	if h.cfg.Quantile > 0 {
		return h.cfg.Latencies.Quantile(h.cfg.Quantile)
	}
	return h.cfg.Delay
}

// observe records an attempt's time to headers.
func (h *hedger) observe(start time.Time, err error) {
	if err == nil && h.cfg.Latencies != nil {
		h.cfg.Latencies.Record(time.Since(start))
	}
}

// hedgeKey marks the context of a hedge's attempt; see IsHedge.
type hedgeKey struct{}

// IsHedge reports whether ctx is, or derives from, the context of a
// hedge: a copy of a query that Hedge sent because no attempt had its
// response headers after the delay. The first attempt's context, and any
// context Hedge did not make, report false. A RoundTripper inside Hedge
// can use it to tell the attempts of one query apart: to count or log
// hedges, or to tell the source schema that a request is a hedge (Hedge
// itself adds no header).
func IsHedge(ctx context.Context) bool {
	v, _ := ctx.Value(hedgeKey{}).(bool)
	return v
}

// hedgeResult is one attempt's end.
type hedgeResult struct {
	resp   *http.Response
	err    error
	hedge  bool
	idx    int // in cancels
	cancel context.CancelFunc
}

func (h *hedger) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := classify(req)
	if err != nil {
		return nil, err
	}
	if c.kind != operation.Query || gqlhttp.AsksUpgrade(c.req) {
		// A protocol upgrade hands its caller a connection: a second one
		// would be a second session with the source schema.
		return h.next.RoundTrip(c.req)
	}
	if h.cfg.CountFirst {
		h.cfg.Budget.First()
	}
	delay := h.delay()
	if delay <= 0 {
		start := time.Now()
		resp, err := h.next.RoundTrip(c.req)
		h.observe(start, err)
		return resp, err
	}
	return h.race(req.Context(), c, delay)
}

// race sends c's first attempt and then, each delay that passes with no
// attempt answered, a hedge, up to MaxExtra as the budget allows. The
// first attempt that succeeds wins (won); when every attempt failed, the
// last one's error goes back.
func (h *hedger) race(ctx context.Context, c classified, delay time.Duration) (*http.Response, error) {
	results := make(chan hedgeResult, 1+h.cfg.MaxExtra)
	cancels := make([]context.CancelFunc, 0, 1+h.cfg.MaxExtra)
	launch := func(r *http.Request, hedge bool) {
		actx, cancel := context.WithCancel(ctx)
		if hedge {
			actx = context.WithValue(actx, hedgeKey{}, true)
		}
		idx := len(cancels)
		cancels = append(cancels, cancel)
		r = r.WithContext(actx)
		go func() {
			start := time.Now()
			resp, err := h.next.RoundTrip(r)
			h.observe(start, err)
			results <- hedgeResult{resp: resp, err: err, hedge: hedge, idx: idx, cancel: cancel}
		}()
	}
	// Every attempt reads the bytes classify read, never the caller's: an
	// attempt that lost may still be writing its body after the winner's
	// response went back to the caller.
	launch(c.again(), false)
	pending := 1
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case res := <-results:
			pending--
			if res.hedge {
				h.settle(ctx, res.err)
			}
			if res.err == nil {
				return h.won(ctx, res, cancels, results, pending), nil
			}
			res.cancel()
			if pending == 0 {
				return nil, res.err
			}
		case <-timer.C:
			if len(cancels) > h.cfg.MaxExtra || ctx.Err() != nil || !h.cfg.Budget.Spend(ctx) {
				continue
			}
			again := c.again()
			again.Header = c.req.Header.Clone() // the attempts run at once
			launch(again, true)
			pending++
			if len(cancels) <= h.cfg.MaxExtra {
				timer.Reset(delay)
			}
		}
	}
}

// won returns the response of res, the first attempt that succeeded: it
// cancels every other attempt, leaves the pending of them to discard, and
// ties res's context to the response's body. ctx is the query's.
func (h *hedger) won(ctx context.Context, res hedgeResult, cancels []context.CancelFunc, results <-chan hedgeResult, pending int) *http.Response {
	for i, cancel := range cancels {
		if i != res.idx {
			cancel()
		}
	}
	if pending > 0 {
		go h.discard(ctx, results, pending)
	}
	if res.hedge && h.cfg.OnWon != nil {
		h.cfg.OnWon(ctx)
	}
	res.resp.Body = &cancelOnClose{ReadCloser: res.resp.Body, cancel: res.cancel}
	return res.resp
}

// settle reports a hedge once its attempt ended: sent (OnSent), unless
// the breaker or the rate limit further in refused it unsent, which gives
// its budget back and reports nothing. ctx is the query's.
func (h *hedger) settle(ctx context.Context, err error) {
	if refusedUnsent(err) {
		h.cfg.Budget.refund()
		return
	}
	if h.cfg.OnSent != nil {
		h.cfg.OnSent(ctx)
	}
}

// discard drains and closes the responses of the attempts that lost, and
// settles their hedges. ctx is the query's.
func (h *hedger) discard(ctx context.Context, results <-chan hedgeResult, n int) {
	for range n {
		res := <-results
		if res.hedge {
			h.settle(ctx, res.err)
		}
		res.cancel()
		if res.resp != nil {
			drain(res.resp)
		}
	}
}

// cancelOnClose is a winning attempt's body: closing it ends the
// attempt's context.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
