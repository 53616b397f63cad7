package middleware

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/hedging"
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
// hedges replay the body from the bytes read to classify the request.
// Mutations, subscriptions and requests whose kind cannot be told are sent
// once, untouched. cfg is copied.
//
// The first try runs on the caller's goroutine, and a hedge on its own,
// started by a timer only when the delay passes: a query answered within
// the delay costs no goroutine. When a hedge wins, the first try's
// context is cancelled and the caller gets the hedge's response once the
// first try's RoundTrip has returned: a RoundTripper further in that
// ignores its request's context holds the answer back until it returns.
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

func init() {
	hedging.Reuse = func(rt http.RoundTripper) http.RoundTripper {
		h, ok := rt.(*hedger)
		if !ok {
			return rt
		}
		r := *h
		r.reuse = true
		return &r
	}
}

// hedger is the RoundTripper of Hedge.
type hedger struct {
	wrapped
	cfg HedgeConfig // immutable, with defaults applied
	// reuse: what next does lets go of an attempt's request and context
	// once its RoundTrip has returned and its body is closed (set by the
	// request path: hedging.Reuse), so a query's first try is sent with
	// a request and a context pooled in its hedgeCall. Immutable.
	reuse bool
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
	return h.race(req, c, delay)
}

// noWinner is hedgeCall.winner while no attempt has won.
const noWinner = -1

// errLost is the cause of a first try's cancellation when a hedge won.
var errLost = errors.New("middleware: hedge: another attempt of the query won")

// hedgeCall is one query that Hedge may hedge. Its first try runs on the
// query's goroutine; its timer (time.AfterFunc, made once and pooled with
// the call) calls fire after the delay, which starts a hedge on a
// goroutine of its own. A query answered within the delay, the idle case,
// costs no goroutine, timer or channel of its own: the call is pooled in
// hedgeCalls, and, with hedger.reuse, so are the first try's request and
// context. A call that sent a hedge, or whose timer fired, is never
// pooled again: a hedge's goroutine may still hold it.
type hedgeCall struct {
	// Set by the query's goroutine before the timer is armed; read-only
	// until the call ends.
	h      *hedger
	ctx    context.Context // the query's: the request's context
	c      classified
	delay  time.Duration
	caller *backend.Borrow // with reuse, the Borrow of a PostFunc call that lends its memory; else nil
	// fctx is the first try's context: first with reuse, else one of
	// its own (context.WithCancelCause of ctx); fcancel cancels it.
	fctx    context.Context
	fcancel context.CancelCauseFunc
	// first is, with reuse, the first try's context: made once with the
	// call, and pooled with it.
	first  *firstCtx
	req    http.Request   // with reuse: the first try's request, pooled
	borrow backend.Borrow // with a caller's Borrow: the first try's response memory, lent to the caller with the call
	timer  *time.Timer    // made once, with the call: calls fire
	// clean: the query's goroutine stopped the timer before it fired and
	// no hedge went; only then may the call be pooled again. Owned by the
	// query's goroutine, then by whoever ends the call (release).
	clean bool

	mu sync.Mutex
	// ended: the query's goroutine takes no more results, and no hedge
	// is sent; a hedge that ends now settles itself. Guarded by mu.
	ended    bool
	winner   int                  // noWinner, 0 for the first try, i for the i-th hedge. Guarded by mu
	launched int                  // hedges sent. Guarded by mu
	cancels  []context.CancelFunc // the hedges' contexts', in order. Guarded by mu
	// results takes each hedge's end while !ended: the error of one that
	// failed, and the response of the one that won. Made with the first
	// hedge, guarded by mu until then; the hedges send to it holding mu.
	results  chan hedgeResult
	received int // results taken; owned by the query's goroutine
}

// hedgeResult is one hedge's end.
type hedgeResult struct {
	resp   *http.Response
	err    error
	idx    int                // the hedge's number, from 1
	cancel context.CancelFunc // the hedge's context's
}

var hedgeCalls = sync.Pool{New: func() any { return new(hedgeCall) }}

// race sends c's first try on the caller's goroutine and, each delay that
// passes with no attempt answered, a hedge on its own (fire), up to
// MaxExtra as the budget allows. The first attempt that succeeds wins;
// when every attempt failed, the last one's error goes back.
func (h *hedger) race(req *http.Request, c classified, delay time.Duration) (*http.Response, error) {
	k := h.start(req.Context(), c, delay)
	var first *http.Request
	if h.reuse {
		// The copy lives in k: WithContext's own stays on the stack.
		k.req = *c.req.WithContext(k.fctx)
		first = &k.req
	} else {
		first = c.req.WithContext(k.fctx)
	}
	if k.timer == nil {
		// Made idle and armed once k holds it: fire reads k.timer.
		k.timer = time.AfterFunc(math.MaxInt64, k.fire)
	}
	k.timer.Reset(delay)
	start := time.Now()
	sent := false
	defer func() {
		if !sent {
			k.abandon() // the first try panicked
		}
	}()
	resp, err := h.next.RoundTrip(first)
	sent = true
	h.observe(start, err)
	if resp != nil && resp.Request == first {
		resp.Request = req // the copy may serve another query
	}
	k.mu.Lock()
	if k.launched == 0 {
		k.ended = true
		k.mu.Unlock()
		return k.idle(resp, err)
	}
	if err == nil && k.winner == noWinner {
		k.winner = 0
	}
	firstWon := k.winner == 0
	k.mu.Unlock()
	if firstWon {
		return k.firstWon(resp), nil
	}
	return k.hedged(resp, err)
}

// start takes a call for a query with context ctx from the pool and makes
// its first try's context.
func (h *hedger) start(ctx context.Context, c classified, delay time.Duration) *hedgeCall {
	k := hedgeCalls.Get().(*hedgeCall)
	k.h, k.ctx, k.c, k.delay, k.winner = h, ctx, c, delay, noWinner
	if !h.reuse {
		k.fctx, k.fcancel = context.WithCancelCause(ctx)
		return k
	}
	f := k.first
	if f == nil {
		f = new(firstCtx)
		f.cc, f.cancel = context.WithCancelCause(context.Background())
		f.onParent = f.parentDone
		k.first = f
	}
	f.parent = ctx
	if b := backend.BorrowOf(ctx); b != nil {
		// A PostFunc call: the first try's response is read into memory
		// lent to k, which lends it on to the caller with k itself.
		k.caller, f.borrow = b, &k.borrow
	}
	if ctx.Done() != nil {
		f.stop = context.AfterFunc(ctx, f.onParent)
	}
	k.fctx, k.fcancel = f, f.cancel
	return k
}

// idle ends a query whose first try returned before any hedge went: it
// stops the timer and hands the first try's end to the caller. The call
// ends when the response's body is closed (firstBody), or, for a PostFunc
// call that lends its memory, when the caller gives that memory back
// (Return).
func (k *hedgeCall) idle(resp *http.Response, err error) (*http.Response, error) {
	// Stop fails if fire has started: it sees ended and sends nothing,
	// but it may still be about to read k, so k is not pooled again.
	k.clean = k.timer.Stop()
	if k.caller != nil {
		if k.borrow.Spoiled() {
			// The first try went to a transport that may still read the
			// request (a reload moved it): the caller must not reuse its
			// own memory either.
			k.caller.Spoil()
		}
		if err == nil {
			k.caller.Keep(k)
			return resp, nil
		}
		k.borrow.Forget()
	}
	if err != nil {
		k.release()
		return nil, err
	}
	b := &firstBody{ReadCloser: resp.Body}
	b.k.Store(k)
	resp.Body = b
	return resp, nil
}

// firstWon returns the first try's response, which won while hedges were
// out: they are cancelled, and those that end from now on settle
// themselves.
func (k *hedgeCall) firstWon(resp *http.Response) *http.Response {
	k.end(0)
	b := &firstBody{ReadCloser: resp.Body}
	b.k.Store(k)
	resp.Body = b
	return resp
}

// hedged ends a query whose first try lost to a hedge, or failed, while
// hedges were out: it waits for the hedge that won, or for every hedge to
// fail (new ones may go meanwhile, as the delay passes again).
func (k *hedgeCall) hedged(resp *http.Response, err error) (*http.Response, error) {
	k.endFirst(errLost)
	if resp != nil {
		// It lost to a hedge that won, which cancelled it: its memory,
		// if lent, is left to the garbage collector.
		drain(resp)
	}
	k.borrow.Forget()
	last := err
	for {
		k.mu.Lock()
		if k.winner == noWinner && k.received == k.launched {
			k.mu.Unlock()
			k.end(noWinner)
			return nil, last
		}
		k.mu.Unlock()
		res := <-k.results
		k.received++
		k.h.settle(k.ctx, res.err)
		if res.err != nil {
			res.cancel()
			last = res.err
			continue
		}
		k.end(res.idx)
		if k.h.cfg.OnWon != nil {
			k.h.cfg.OnWon(k.ctx)
		}
		res.resp.Body = &cancelOnClose{ReadCloser: res.resp.Body, cancel: res.cancel}
		return res.resp, nil
	}
}

// end ends a hedged query on its goroutine, whose winner is won (0: the
// first try; noWinner: none): no hedge goes from now on, the hedges still
// out but the winner are cancelled (each settles itself when it ends),
// and those that failed before are settled here.
func (k *hedgeCall) end(won int) {
	k.mu.Lock()
	k.ended = true
	for i, cancel := range k.cancels {
		if i+1 != won {
			cancel()
		}
	}
	k.mu.Unlock()
	k.timer.Stop()
	// No hedge sends once ended is set: what is in results was sent
	// before, and is a failure (only the winner sends a response, and it
	// was taken).
	for len(k.results) > 0 {
		res := <-k.results
		k.h.settle(k.ctx, res.err)
		if res.resp != nil {
			drain(res.resp)
		}
	}
}

// fire sends a hedge, unless the query has ended or has a winner, or has
// sent MaxExtra, or its context has ended, or the budget has no room; it
// arms the timer for the next one. It runs on the timer's goroutine.
func (k *hedgeCall) fire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.h
	if k.ended || k.winner != noWinner || k.launched >= h.cfg.MaxExtra || k.ctx.Err() != nil || !h.cfg.Budget.Spend(k.ctx) {
		return
	}
	if k.results == nil {
		k.results = make(chan hedgeResult, h.cfg.MaxExtra)
		if b := backend.BorrowOf(k.ctx); b != nil {
			// The hedges run on after the call: the caller's memory,
			// which the query's context and request live in, must not
			// serve another call.
			b.Spoil()
		}
	}
	// The hedge reads the bytes classify read, never the caller's body,
	// and a header map of its own: it runs at once with the first try,
	// and may still be writing after the query returned.
	r := k.c.resend()
	r.Header = k.c.req.Header.Clone()
	ctx, cancel := context.WithCancel(hedgeCtx{k.ctx})
	k.cancels = append(k.cancels, cancel)
	k.launched++
	go k.hedge(r.WithContext(ctx), k.launched, cancel)
	if k.launched < h.cfg.MaxExtra {
		k.timer.Reset(k.delay)
	}
}

// hedge sends r, the i-th hedge, and hands its end to the query's
// goroutine while it waits: a failure, or a response that wins, which
// cancels the first try and the other hedges. A response that lost, and
// any end once the query has returned, it settles, drains and closes
// itself.
func (k *hedgeCall) hedge(r *http.Request, i int, cancel context.CancelFunc) {
	start := time.Now()
	resp, err := k.h.next.RoundTrip(r)
	k.h.observe(start, err)
	k.mu.Lock()
	if !k.ended && (err != nil || k.winner == noWinner) {
		if err == nil {
			k.winner = i
			k.fcancel(errLost)
			for j, c := range k.cancels {
				if j != i-1 {
					c()
				}
			}
		}
		k.results <- hedgeResult{resp: resp, err: err, idx: i, cancel: cancel}
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	k.h.settle(k.ctx, err)
	cancel()
	if resp != nil {
		drain(resp)
	}
}

// abandon ends a query whose first try panicked, as the panic goes on to
// the caller: no hedge goes from now on, those out are cancelled (each
// settles itself), and the call is left to the garbage collector.
func (k *hedgeCall) abandon() {
	k.mu.Lock()
	k.ended = true
	for _, cancel := range k.cancels {
		cancel()
	}
	k.mu.Unlock()
	k.timer.Stop()
	k.endFirst(nil)
}

// endFirst cancels the first try's context with cause, once it lost or
// failed while hedges were out.
func (k *hedgeCall) endFirst(cause error) {
	k.fcancel(cause)
	if f := k.first; f != nil && f.stop != nil {
		f.stop()
	}
}

// release ends the call once its first try's response is done with (its
// body closed, or, for a PostFunc call, its memory given back), or the
// first try failed with no hedge out: the first try's context lets go of
// the query's, and the call goes back to the pool if nothing else may
// hold it.
func (k *hedgeCall) release() {
	clean := k.clean
	if !k.h.reuse {
		k.fcancel(nil)
	} else if f := k.first; f.stop != nil && !f.stop() || f.cc.Err() != nil {
		// The query's context ended, and cancelled the pooled one.
		clean = false
	}
	if clean {
		k.recycle()
	}
}

// Return is the call's end for a PostFunc call that lent its memory
// (backend.Lent): the caller's callback has returned and the body is
// closed, so the first try's response memory goes back, and the call.
func (k *hedgeCall) Return() {
	k.borrow.Return()
	k.release()
}

// recycle empties k, keeping its timer and its first try's pooled
// context, and puts it back in the pool. Of the context, it writes only
// what is set for each call: a late reader may still read the rest.
func (k *hedgeCall) recycle() {
	t, f := k.timer, k.first
	if f != nil {
		f.parent, f.borrow, f.stop = nil, nil, nil
	}
	*k = hedgeCall{timer: t, first: f}
	hedgeCalls.Put(k)
}

// firstCtx is the context of a query's first try with hedger.reuse: the
// query's, but for its end, which is its own (cc): a hedge that wins
// cancels it, and so does the query's context's end (through an
// AfterFunc, stopped when the call ends). cc has no parent, so it costs
// nothing while it is not cancelled, and is reused by the next call: only
// a call whose cc was cancelled is not pooled again. The h1 engine and
// context.AfterFunc find cc as the context's cancelCtx (Value), so that
// what they register on it costs what it costs on a context of the
// standard library.
//
// Once the call is pooled, a late reader of the context reads only cc,
// which is never written again: net/http's removal of the context it
// derived (Done, Value of the cancelCtx key), which may run after the
// body's Close returned on a call a reload moved to a nethttp engine;
// the h1 engine's Read that a Close from another goroutine ended (Err,
// while cc is not cancelled).
type firstCtx struct {
	parent context.Context         // the query's; set for each call
	borrow *backend.Borrow         // the call's own Borrow when the caller lends its memory, else nil; set for each call
	cc     context.Context         // made with the context; never written again
	cancel context.CancelCauseFunc // cc's
	// onParent is parentDone, made with the context; stop stops its
	// AfterFunc on parent, nil when parent never ends, set for each call.
	onParent func()
	stop     func() bool
	perr     atomic.Pointer[error] // parent's Err, stored before parentDone cancels cc
}

func (f *firstCtx) Deadline() (time.Time, bool) { return f.parent.Deadline() }
func (f *firstCtx) Done() <-chan struct{}       { return f.cc.Done() }

func (f *firstCtx) Err() error {
	err := f.cc.Err()
	if err == nil {
		return nil
	}
	if p := f.perr.Load(); p != nil {
		return *p // DeadlineExceeded when the query's deadline passed
	}
	return err
}

func (f *firstCtx) Value(key any) any {
	if v := f.cc.Value(key); v != nil {
		return v // the cancelCtx key: cc has no value of its own
	}
	if _, ok := key.(backend.BorrowKey); ok && f.borrow != nil {
		return f.borrow
	}
	return f.parent.Value(key)
}

// parentDone is the AfterFunc of the query's context: its end ends the
// first try's.
func (f *firstCtx) parentDone() {
	err := f.parent.Err()
	f.perr.Store(&err)
	f.cancel(context.Cause(f.parent))
}

// hedgeCtx is what a hedge's context derives from: the query's, marked
// (IsHedge), and without the caller's Borrow: a hedge may run on after the
// query returned, so its response is never read into memory lent to the
// caller.
type hedgeCtx struct{ context.Context }

func (c hedgeCtx) Value(key any) any {
	switch key.(type) {
	case hedgeKey:
		return true
	case backend.BorrowKey:
		return nil
	}
	return c.Context.Value(key)
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

// firstBody is the body of a first try's response that won: its first
// Close ends the call (hedgeCall.release).
type firstBody struct {
	io.ReadCloser
	k atomic.Pointer[hedgeCall] // nil once closed
}

func (b *firstBody) Close() error {
	err := b.ReadCloser.Close()
	if k := b.k.Swap(nil); k != nil {
		k.release()
	}
	return err
}

// cancelOnClose is a winning hedge's body: closing it ends the hedge's
// context.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
