package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/fusiongo/transport/internal/bound"
)

// ErrCircuitOpen is wrapped by the error of a request that a Breaker
// refused: it was not sent. Retry does not send it again.
var ErrCircuitOpen = bound.ErrCircuitOpen

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
	// 4xx in this list counts too, but none is by default. Nil or empty
	// means the default. Default: 500, 502, 503, 504.
	Statuses []int

	// OnStateChange, if set, is called on every change of state, with the
	// breaker's lock held: it must not block nor call the breaker.
	// Default: nil.
	OnStateChange func(from, to BreakerState)
}

// The defaults of BreakerConfig.
const (
	DefaultBreakerFailureRatio     = 0.5
	DefaultBreakerMinRequests      = 20
	DefaultBreakerWindow           = 10 * time.Second
	DefaultBreakerOpenFor          = 5 * time.Second
	DefaultBreakerHalfOpenRequests = 1
)

// DefaultBreakerStatuses returns the default of BreakerConfig.Statuses.
func DefaultBreakerStatuses() []int {
	return []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
}

// Breaker is a circuit breaker of one source schema (sony/gobreaker's
// CircuitBreaker with a rolling window). Its Middleware may wrap several
// pipelines: they share its state, as a route kept across a reload does.
// It is safe for concurrent use.
type Breaker struct {
	cb       *gobreaker.CircuitBreaker[*http.Response] // safe for concurrent use
	statuses []int                                     // immutable
	refusal  error                                     // immutable: the error of a refused request
}

// The verdicts a request's closure gives gobreaker: nil is a success.
var (
	errBreakerFailure  = errors.New("failure")
	errBreakerExcluded = errors.New("excluded")
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
	b := &Breaker{statuses: slices.Clone(cfg.Statuses)}
	if len(b.statuses) == 0 {
		b.statuses = DefaultBreakerStatuses()
	}
	if cfg.Schema != "" {
		b.refusal = fmt.Errorf("%w for source schema %q: not sent", ErrCircuitOpen, cfg.Schema)
	} else {
		b.refusal = fmt.Errorf("%w: not sent", ErrCircuitOpen)
	}
	ratio, minRequests := min(cfg.FailureRatio, 1), uint32(min(cfg.MinRequests, 1<<31))
	st := gobreaker.Settings{
		Name:         cfg.Schema,
		MaxRequests:  uint32(min(cfg.HalfOpenRequests, 1<<31)),
		Interval:     cfg.Window,
		BucketPeriod: max(cfg.Window/10, time.Millisecond),
		Timeout:      cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			// Requests counts those in flight and the excluded ones: the
			// ratio is of the outcomes known.
			n := c.TotalSuccesses + c.TotalFailures
			return n >= minRequests && float64(c.TotalFailures) >= ratio*float64(n)
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == errBreakerExcluded },
	}
	if f := cfg.OnStateChange; f != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) { f(breakerState(from), breakerState(to)) }
	}
	b.cb = gobreaker.NewCircuitBreaker[*http.Response](st)
	return b
}

func breakerState(s gobreaker.State) BreakerState {
	switch s {
	case gobreaker.StateOpen:
		return BreakerOpen
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// State returns the breaker's state now (an open breaker whose OpenFor
// passed is half-open).
func (b *Breaker) State() BreakerState { return breakerState(b.cb.State()) }

// Middleware returns the middleware that sends requests through b: a
// refused request fails at once, unsent, with an error that wraps
// ErrCircuitOpen and names the schema; every other request's outcome is
// counted. A failure is a transport error, the request's header or
// request timeout (bound.HeaderTimeoutError, bound.RequestTimeoutError),
// or a response with one of the statuses; a request whose context the
// caller ended (cancelled, or its own deadline) counts as neither success
// nor failure, as does one that a reload overtook before it was sent.
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

// RoundTrip sends req if the breaker lets it through. The closure gives
// gobreaker a verdict (nil, errBreakerFailure, errBreakerExcluded) and
// keeps the request's own error aside: no allocation per request.
func (t *breakerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	resp, verdict := t.b.cb.Execute(func() (*http.Response, error) {
		var resp *http.Response
		resp, err = t.next.RoundTrip(req)
		return resp, t.b.judge(req.Context(), resp, err)
	})
	switch {
	case verdict == gobreaker.ErrOpenState || verdict == gobreaker.ErrTooManyRequests:
		closeBody(req)
		return nil, t.b.refusal
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// judge tells a request's outcome.
func (b *Breaker) judge(ctx context.Context, resp *http.Response, err error) error {
	if err == nil {
		if slices.Contains(b.statuses, resp.StatusCode) {
			return errBreakerFailure
		}
		return nil
	}
	if timedOut(err) {
		return errBreakerFailure
	}
	if ctx.Err() != nil {
		if timedOut(context.Cause(ctx)) {
			return errBreakerFailure
		}
		return errBreakerExcluded // the caller left
	}
	if errors.Is(err, bound.ErrReloaded) || errors.Is(err, ErrCircuitOpen) {
		return errBreakerExcluded // not sent
	}
	return errBreakerFailure
}

// timedOut reports whether err is the request's header or request timeout.
func timedOut(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*bound.HeaderTimeoutError](err); ok {
		return true
	}
	_, ok := errors.AsType[*bound.RequestTimeoutError](err)
	return ok
}
