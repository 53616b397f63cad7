package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/defaults"
)

// BreakerState is the state of a Breaker.
type BreakerState int

// The states of a Breaker.
const (
	// BreakerClosed lets every request through and counts its outcome.
	BreakerClosed BreakerState = iota
	// BreakerHalfOpen lets BreakerConfig.HalfOpenRequests trial requests
	// through, whose outcome closes or reopens the breaker.
	BreakerHalfOpen
	// BreakerOpen refuses every request, unsent, until OpenFor passed.
	BreakerOpen
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerHalfOpen:
		return "half_open"
	case BreakerOpen:
		return "open"
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// BreakerConfig configures NewBreaker. A zero or negative field means its
// default. A field is read once, by NewBreaker.
type BreakerConfig struct {
	// Schema names the source schema in the breaker's refusals.
	// Default: none ("circuit breaker open" alone).
	Schema string

	// FailureRatio is the share of failed requests in Window at which the
	// breaker opens, once MinRequests requests were counted in Window.
	// Values above 1 are treated as 1; zero, negative or NaN means the
	// default. Default: 0.5.
	FailureRatio float64

	// MinRequests is how many requests Window must hold (successes and
	// failures; a request whose caller left counts as neither) before the
	// breaker may open. Default: 20.
	MinRequests int

	// Window is the rolling window of the closed breaker's counts, in ten
	// buckets of Window/10: an outcome is forgotten between 0.9 and 1
	// Window after it. Default: 10s.
	Window time.Duration

	// OpenFor is how long the breaker stays open before it lets trial
	// requests through (half-open). Default: 5s.
	OpenFor time.Duration

	// HalfOpenRequests is how many trial requests a half-open breaker lets
	// through; as many successes close it, one failure reopens it.
	// Default: 1.
	HalfOpenRequests int

	// Statuses are the response statuses that count as failures, beside
	// transport errors and the request's header and request timeouts. A
	// 4xx in this list counts too, but none is by default. Nil means the
	// default; an empty, non-nil list means that no status counts.
	// Default: 500, 502, 503, 504.
	Statuses []int

	// OnStateChange, if set, is called on every change of state, in order,
	// on the goroutine of the request (or State call) that caused it, with
	// the breaker's lock held: it must not block nor call the breaker. ctx
	// is the context of the request that caused the change: the failure
	// that opened the breaker, the trial that closed or reopened it, the
	// request that found its OpenFor over and made it half-open. A change
	// that a State call makes (an open breaker whose OpenFor passed) has
	// no request: ctx is then context.Background(). Default: nil.
	OnStateChange func(ctx context.Context, from, to BreakerState)
}

// The defaults of BreakerConfig.
const (
	DefaultBreakerFailureRatio     = defaults.BreakerFailureRatio     // 0.5
	DefaultBreakerMinRequests      = defaults.BreakerMinRequests      // 20
	DefaultBreakerWindow           = defaults.BreakerWindow           // 10s
	DefaultBreakerOpenFor          = defaults.BreakerOpenFor          // 5s
	DefaultBreakerHalfOpenRequests = defaults.BreakerHalfOpenRequests // 1
)

// DefaultBreakerStatuses returns the default of BreakerConfig.Statuses, a
// new slice on every call: 500, 502, 503, 504.
func DefaultBreakerStatuses() []int { return defaults.BreakerStatuses() }

// Breaker is a circuit breaker of one source schema. Its Middleware may
// wrap several pipelines: they share its state, as a route kept across a
// reload does. It is safe for concurrent use.
//
// Each stay in a state is a phase, replaced whole on every change of
// state. A request keeps the phase that admitted it, and its outcome
// counts in that phase only: an outcome of a request admitted before a
// change of state is ignored. A closed breaker's admission is one atomic
// load (cur), with no clock and no lock; its outcome reads the monotonic
// clock once (time.Since, no wall clock) and adds to the current bucket of
// the phase's rolling window with a compare-and-swap. Only a bucket whose
// epoch is stale takes mu, to turn it; only a failure sums the window.
// An open breaker refuses after a clock read, without a lock; a half-open
// breaker's admissions and outcomes take mu.
type Breaker struct {
	// cur is the current phase, never nil. Loaded without a lock; stored
	// by NewBreaker, then only with mu held, by setLocked.
	cur atomic.Pointer[breakerPhase]

	// mu serializes the changes of state (and the OnStateChange calls,
	// made with it held), a half-open phase's counts, and the turning of
	// a closed phase's stale bucket.
	mu sync.Mutex

	ratio       float64                                          // immutable: FailureRatio, at most 1
	minRequests int64                                            // immutable: MinRequests
	period      time.Duration                                    // immutable: a bucket's span, Window/10 (at least 1ns)
	openFor     time.Duration                                    // immutable: OpenFor
	halfOpen    int                                              // immutable: HalfOpenRequests
	onChange    func(ctx context.Context, from, to BreakerState) // immutable: OnStateChange, called with mu held; may be nil
	statuses    []int                                            // immutable
	refusal     error                                            // immutable: the error of a refused request
}

// breakerBuckets is how many buckets a closed breaker's window holds.
const breakerBuckets = 10

// The layout of breakerBucket.word: the low 20 bits of the bucket's epoch
// (its tag), then 22 bits of failures, then 22 bits of successes. A count
// saturates at breakerCountMax (4,194,303 outcomes in one Window/10).
const (
	breakerCountBits = 22
	breakerCountMax  = 1<<breakerCountBits - 1
	breakerFailShift = breakerCountBits
	breakerTagShift  = 2 * breakerCountBits
	breakerTagMask   = 1<<(64-breakerTagShift) - 1
)

// breakerPhase is one stay of a Breaker in one state.
type breakerPhase struct {
	state BreakerState // immutable
	start time.Time    // immutable: when the phase began, with a monotonic reading

	// buckets is a closed phase's rolling window, lock-free: the outcome
	// at start + d counts in bucket (d/period) % 10, whose epoch is
	// d/period. Unused in the other states.
	buckets [breakerBuckets]breakerBucket

	// A half-open phase's trial requests, guarded by Breaker.mu:
	admitted  int // admitted and not excluded
	successes int // of these, how many succeeded
}

// breakerBucket is one bucket of a closed phase's window.
type breakerBucket struct {
	// epoch is the epoch whose counts word holds: -1 before the first.
	// Atomic; stored only with Breaker.mu held, always before word gets
	// its tag, so that a word whose tag matches an epoch just loaded
	// holds that epoch's counts (unless 5×2^20 epochs went by between the
	// two loads).
	epoch atomic.Int64
	// word packs the epoch's tag and counts (see breakerCountBits).
	// Atomic: counted into by compare-and-swap, lock-free; reset with
	// Breaker.mu held, with epoch.
	word atomic.Uint64
}

// A request's outcome.
type breakerVerdict uint8

const (
	breakerSuccess  breakerVerdict = iota
	breakerFailure                 // counts against the source schema
	breakerExcluded                // counts as neither: the caller left, or the request was not sent
)

// NewBreaker returns a closed breaker configured by cfg (copied).
func NewBreaker(cfg BreakerConfig) *Breaker {
	if !(cfg.FailureRatio > 0) { // zero, negative or NaN
		cfg.FailureRatio = DefaultBreakerFailureRatio
	}
	if cfg.MinRequests <= 0 {
		cfg.MinRequests = DefaultBreakerMinRequests
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultBreakerWindow
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = DefaultBreakerOpenFor
	}
	if cfg.HalfOpenRequests <= 0 {
		cfg.HalfOpenRequests = DefaultBreakerHalfOpenRequests
	}
	b := &Breaker{
		ratio:       min(cfg.FailureRatio, 1),
		minRequests: int64(cfg.MinRequests),
		period:      max(cfg.Window/breakerBuckets, 1),
		openFor:     cfg.OpenFor,
		halfOpen:    cfg.HalfOpenRequests,
		onChange:    cfg.OnStateChange,
		statuses:    slices.Clone(cfg.Statuses),
	}
	if cfg.Statuses == nil {
		b.statuses = DefaultBreakerStatuses()
	}
	if cfg.Schema != "" {
		b.refusal = fmt.Errorf("%w for source schema %q: not sent", fault.ErrCircuitOpen, cfg.Schema)
	} else {
		b.refusal = fmt.Errorf("%w: not sent", fault.ErrCircuitOpen)
	}
	b.cur.Store(newBreakerPhase(BreakerClosed, time.Now()))
	return b
}

func newBreakerPhase(state BreakerState, start time.Time) *breakerPhase {
	p := &breakerPhase{state: state, start: start}
	for i := range p.buckets {
		p.buckets[i].epoch.Store(-1)
	}
	return p
}

// State returns the breaker's state now (an open breaker whose OpenFor
// passed is half-open). A change of state it makes is reported to
// OnStateChange with context.Background(): no request caused it.
func (b *Breaker) State() BreakerState {
	if p := b.cur.Load(); p.state != BreakerOpen || time.Since(p.start) < b.openFor {
		return p.state
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.currentLocked(context.Background()).state
}

// currentLocked returns the current phase, after moving an open one whose
// OpenFor passed to half-open; ctx is that of the request that asks, for
// OnStateChange. b.mu is held.
func (b *Breaker) currentLocked(ctx context.Context) *breakerPhase {
	p := b.cur.Load()
	if p.state == BreakerOpen {
		if now := time.Now(); now.Sub(p.start) >= b.openFor {
			p = b.setLocked(ctx, p, BreakerHalfOpen, now)
		}
	}
	return p
}

// setLocked replaces the phase p with a new one in state to, begun at now,
// and calls OnStateChange with ctx, the context of the request that caused
// the change. b.mu is held.
func (b *Breaker) setLocked(ctx context.Context, p *breakerPhase, to BreakerState, now time.Time) *breakerPhase {
	q := newBreakerPhase(to, now)
	b.cur.Store(q)
	if b.onChange != nil {
		b.onChange(ctx, p.state, to)
	}
	return q
}

// admit reports whether a request may be sent, and the phase that
// admitted it; ctx is the request's. A closed breaker's answer is one
// atomic load.
func (b *Breaker) admit(ctx context.Context) (*breakerPhase, bool) {
	if p := b.cur.Load(); p.state == BreakerClosed {
		return p, true
	}
	return b.admitSlow(ctx)
}

// admitSlow is admit in the open and half-open states.
func (b *Breaker) admitSlow(ctx context.Context) (*breakerPhase, bool) {
	if p := b.cur.Load(); p.state == BreakerOpen && time.Since(p.start) < b.openFor {
		return nil, false // refused without the lock
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch p := b.currentLocked(ctx); p.state {
	case BreakerClosed:
		return p, true
	case BreakerHalfOpen:
		if p.admitted < b.halfOpen {
			p.admitted++
			return p, true
		}
	}
	return nil, false
}

// record counts the outcome of a request that phase p admitted; ctx is
// the request's.
func (b *Breaker) record(ctx context.Context, p *breakerPhase, v breakerVerdict) {
	if p.state != BreakerClosed {
		b.settle(ctx, p, v)
		return
	}
	if v == breakerExcluded {
		return
	}
	elapsed := time.Since(p.start) // the one clock read
	epoch := int64(elapsed / b.period)
	b.count(p, epoch, v == breakerFailure)
	if v == breakerFailure && b.tripped(p, epoch) {
		b.mu.Lock()
		if b.cur.Load() == p {
			b.setLocked(ctx, p, BreakerOpen, p.start.Add(elapsed))
		}
		b.mu.Unlock()
	}
}

// count adds one outcome of epoch to closed phase p's window, lock-free
// unless the epoch's bucket must be turned.
func (b *Breaker) count(p *breakerPhase, epoch int64, failed bool) {
	bk := &p.buckets[epoch%breakerBuckets]
	shift := uint(0)
	if failed {
		shift = breakerFailShift
	}
	tag := uint64(epoch) & breakerTagMask
	for {
		if bk.epoch.Load() != epoch {
			if !b.turn(bk, epoch) {
				return
			}
			continue
		}
		w := bk.word.Load()
		if w>>breakerTagShift != tag {
			// Turned past epoch between the two loads.
			if !b.turn(bk, epoch) {
				return
			}
			continue
		}
		if (w>>shift)&breakerCountMax == breakerCountMax {
			return // saturated
		}
		if bk.word.CompareAndSwap(w, w+1<<shift) {
			return
		}
	}
}

// turn, on count's slow path, makes bk hold epoch's counts, empty, unless
// it holds those of epoch or a later one. It reports whether an outcome
// of epoch may still be counted in bk: false if bk went on to a later
// epoch, whose window no longer holds epoch.
func (b *Breaker) turn(bk *breakerBucket, epoch int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := bk.epoch.Load()
	if cur < epoch {
		bk.epoch.Store(epoch)
		bk.word.Store((uint64(epoch) & breakerTagMask) << breakerTagShift)
	}
	return cur <= epoch
}

// tripped reports whether closed phase p's window at epoch holds enough
// outcomes, failed in a share of at least FailureRatio. It reads the
// buckets without a lock: a bucket being turned is skipped.
func (b *Breaker) tripped(p *breakerPhase, epoch int64) bool {
	var n, failures int64
	for i := range p.buckets {
		bk := &p.buckets[i]
		e := bk.epoch.Load()
		w := bk.word.Load()
		if e < 0 || e <= epoch-breakerBuckets || w>>breakerTagShift != uint64(e)&breakerTagMask {
			continue
		}
		f := int64(w>>breakerFailShift) & breakerCountMax
		n += f + int64(w)&breakerCountMax
		failures += f
	}
	return n >= b.minRequests && float64(failures) >= b.ratio*float64(n)
}

// settle counts the outcome of a trial request of half-open phase p:
// HalfOpenRequests successes close the breaker, a failure reopens it, an
// exclusion frees the request's slot. It ignores the outcome if p is no
// longer current.
func (b *Breaker) settle(ctx context.Context, p *breakerPhase, v breakerVerdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() != p {
		return
	}
	switch v {
	case breakerExcluded:
		p.admitted--
	case breakerSuccess:
		if p.successes++; p.successes >= b.halfOpen {
			b.setLocked(ctx, p, BreakerClosed, time.Now())
		}
	default:
		b.setLocked(ctx, p, BreakerOpen, time.Now())
	}
}

// Middleware returns the middleware that sends requests through b: a
// refused request fails at once, unsent, with an error that wraps
// fault.ErrCircuitOpen and names the schema; every other request's outcome is
// counted. A failure is a transport error, the request's header or
// request timeout (fault.HeaderTimeoutError, fault.RequestTimeoutError),
// or a response with one of the statuses; a request whose context the
// caller ended (cancelled, or its own deadline) counts as neither success
// nor failure, as does one that a reload overtook before it was sent,
// that a rate limit further in refused (fault.ErrRateLimited) or that the
// sockets path's max_pending_requests turned away (ErrOverloaded).
// A RoundTripper below that panics counts as a failure.
func (b *Breaker) Middleware() Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &breakerRT{wrapped: wrap(next), b: b}
	}
}

// breakerRT is the RoundTripper of Breaker.Middleware.
type breakerRT struct {
	wrapped
	b *Breaker
}

// RoundTrip sends req if the breaker lets it through, and counts its
// outcome. It allocates nothing.
func (t *breakerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p, ok := t.b.admit(ctx)
	if !ok {
		closeBody(req)
		return nil, t.b.refusal
	}
	settled := false
	defer func() {
		if !settled { // next panicked: free a half-open slot too
			t.b.record(ctx, p, breakerFailure)
		}
	}()
	resp, err := t.next.RoundTrip(req)
	settled = true
	t.b.record(ctx, p, t.b.judge(ctx, resp, err))
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// judge tells a request's outcome.
func (b *Breaker) judge(ctx context.Context, resp *http.Response, err error) breakerVerdict {
	if err == nil {
		if slices.Contains(b.statuses, resp.StatusCode) {
			return breakerFailure
		}
		return breakerSuccess
	}
	if timedOut(err) {
		return breakerFailure
	}
	if ctx.Err() != nil {
		if timedOut(context.Cause(ctx)) {
			return breakerFailure
		}
		return breakerExcluded // the caller left
	}
	if refusedUnsent(err) {
		return breakerExcluded // not sent: a refusal of ours is not the schema's failure
	}
	return breakerFailure
}

// timedOut reports whether err is the request's header or request timeout.
func timedOut(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*fault.HeaderTimeoutError](err); ok {
		return true
	}
	_, ok := errors.AsType[*fault.RequestTimeoutError](err)
	return ok
}
