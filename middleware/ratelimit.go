package middleware

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/sharekey"
	"golang.org/x/time/rate"
)

// RateLimitConfig configures NewRateLimiter. Read once, by NewRateLimiter.
type RateLimitConfig struct {
	// Schema names the source schema in the limiter's refusals.
	// Default: none.
	Schema string

	// RequestsPerSecond is the token bucket's refill rate. Zero or
	// negative: no limit (NewRateLimiter returns nil).
	RequestsPerSecond float64

	// Burst is the bucket's size. Zero or negative: RequestsPerSecond
	// rounded up, at least 1.
	Burst int

	// Wait is the longest a request waits for its turn; it never waits
	// past its context's deadline either. Zero or negative: a request
	// beyond the limit fails at once.
	Wait time.Duration

	// OnLimited, if set, is called for each request refused, with the
	// request's context. It runs on the request's goroutine and must not
	// block.
	OnLimited func(ctx context.Context)

	// Shared, if set, keeps the limit outside this process, shared with
	// other limiters (other gateway replicas): the limiter asks it for
	// each request's turn instead of taking a token of its own bucket, and
	// acts as OnStoreError says when it cannot tell. Default: none, the
	// limiter's own token bucket.
	Shared SharedLimit

	// OnStoreError is what a limiter with Shared does with a request
	// whose turn Shared could not tell: OnStoreErrorLocal (a token bucket
	// of its own, LocalShare of RequestsPerSecond and Burst),
	// OnStoreErrorAllow (sent, no limit) or OnStoreErrorDeny (refused,
	// unsent). Default ("" or another value): OnStoreErrorLocal.
	OnStoreError string

	// LocalShare is the share of RequestsPerSecond and Burst (rounded up,
	// at least 1) of the OnStoreErrorLocal bucket, above 0 and at most 1.
	// Default (0 or out of range): 1, the whole limit.
	LocalShare float64
}

// SharedLimit is a rate limit kept outside the process, shared by several
// RateLimiters (RateLimitConfig.Shared): a fleet's limit in Redis. It is
// safe for concurrent use.
type SharedLimit interface {
	// Take asks for one turn that comes no later than until (until at
	// now or before: only a turn free now). It returns how long from now
	// the turn is (0: at once) and true; false, having taken nothing,
	// when no turn comes by until; or an error when the limit could not
	// be asked in time. ctx is the request's; Take never waits on it
	// longer than its own bound.
	Take(ctx context.Context, until time.Time) (delay time.Duration, ok bool, err error)
}

// The values of RateLimitConfig.OnStoreError, env's by the same names.
const (
	OnStoreErrorLocal = "local"
	OnStoreErrorAllow = "allow"
	OnStoreErrorDeny  = "deny"
)

// RateLimiter is a token bucket (golang.org/x/time/rate) in front of a
// source schema: each request that passes its Middleware takes a token.
// With RateLimitConfig.Shared it asks a limit shared with other processes
// for each turn instead, and falls back on OnStoreError when that limit
// cannot tell. It keeps its state across the pipelines that share it (a
// reload that keeps the settings keeps the limiter). Safe for concurrent
// use; a nil *RateLimiter limits nothing.
type RateLimiter struct {
	lim       *rate.Limiter // the token bucket; with shared, the OnStoreErrorLocal fallback
	wait      time.Duration
	refusal   error // made once: the refusal allocates nothing
	onLimited func(ctx context.Context)
	waiting   func() // tests: called once a request has its turn and waits for it

	shared       SharedLimit // nil: the bucket alone
	onStoreError string      // with shared: OnStoreErrorLocal, OnStoreErrorAllow or OnStoreErrorDeny
	unchecked    error       // with shared: the refusal of OnStoreErrorDeny, made once
}

// NewRateLimiter returns the limiter cfg describes, or nil if
// cfg.RequestsPerSecond is not positive.
func NewRateLimiter(cfg RateLimitConfig) *RateLimiter {
	if !(cfg.RequestsPerSecond > 0) {
		return nil
	}
	burst := cfg.Burst
	if burst <= 0 {
		burst = max(1, int(cfg.RequestsPerSecond+0.999999))
	}
	rps := strconv.FormatFloat(cfg.RequestsPerSecond, 'f', -1, 64)
	limit := rps + "/s, burst " + strconv.Itoa(burst)
	if cfg.Shared != nil {
		limit += ", shared"
	}
	l := &RateLimiter{lim: rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), burst), wait: max(cfg.Wait, 0), onLimited: cfg.OnLimited}
	if cfg.Shared != nil {
		l.shared, l.onStoreError = cfg.Shared, cfg.OnStoreError
		if l.onStoreError != OnStoreErrorAllow && l.onStoreError != OnStoreErrorDeny {
			l.onStoreError = OnStoreErrorLocal
		}
		share := cfg.LocalShare
		if !(share > 0 && share <= 1) {
			share = 1
		}
		l.lim = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond*share), max(1, int(math.Ceil(float64(burst)*share))))
		l.unchecked = refusal(cfg.Schema, limit+"; its store could not be asked, and on a store error the limit denies")
	}
	if cfg.Wait > 0 {
		limit += "; no turn within the " + cfg.Wait.String() + " wait or the deadline"
	}
	l.refusal = refusal(cfg.Schema, limit)
	return l
}

// refusal is the error of a request the limit refused: it wraps
// fault.ErrRateLimited and names the schema, if any, and the limit.
func refusal(schema, limit string) error {
	if schema != "" {
		return fmt.Errorf("%w for source schema %q (%s): not sent", fault.ErrRateLimited, schema, limit)
	}
	return fmt.Errorf("%w (%s): not sent", fault.ErrRateLimited, limit)
}

// Observed is Middleware with a hook of its own: onLimited, if not nil, is
// called for each request this middleware's limiter refuses, after the
// configured OnLimited. Pipelines that share a limiter (one per path)
// tell their refusals apart with it. A nil l returns next as it is.
func (l *RateLimiter) Observed(onLimited func(ctx context.Context)) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		if l == nil {
			return next
		}
		return &limiterRT{wrapped: wrap(next), l: l, onLimited: onLimited}
	}
}

// Middleware returns the middleware that sends requests through l. A
// request beyond the limit waits its turn, in the order the requests came,
// if that turn comes within the configured wait and before the request's
// deadline; otherwise it fails at once, unsent, with an error that wraps
// fault.ErrRateLimited and names the schema, and gives its place back. It never
// sleeps only to fail. A request whose context ends while it waits fails
// with the context's error, and gives its place back too. A dedupe key
// probe (IsKeyProbe) sends nothing and takes no turn. With a shared
// limit, the turns are the shared limit's, in the order it gives them,
// and a turn a caller leaves while waiting is not given back. A nil l
// returns next as it is.
func (l *RateLimiter) Middleware() Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		if l == nil {
			return next
		}
		return &limiterRT{wrapped: wrap(next), l: l}
	}
}

// limiterRT is the RoundTripper of RateLimiter.Middleware.
type limiterRT struct {
	wrapped
	l         *RateLimiter
	onLimited func(ctx context.Context) // nil: none
}

var _ http.RoundTripper = (*limiterRT)(nil)

// RoundTrip takes a token for req, waiting for it if allowed, then sends
// req. Without a wait it allocates nothing.
func (t *limiterRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if sharekey.IsProbe(req.Context()) {
		return t.next.RoundTrip(req)
	}
	if err := t.l.take(req); err != nil {
		closeBody(req)
		if t.onLimited != nil && (err == t.l.refusal || err == t.l.unchecked) {
			t.onLimited(req.Context())
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// take takes a turn for req, or returns why it cannot.
func (l *RateLimiter) take(req *http.Request) error {
	if l.shared != nil {
		return l.takeShared(req)
	}
	return l.takeLocal(req)
}

// takeShared asks the shared limit for req's turn and waits for it; when
// the limit cannot tell, it does as onStoreError says. A turn that a
// caller leaves while waiting for is not given back: the shared limit has
// no cheap way to take it back, and the caller is gone.
func (l *RateLimiter) takeShared(req *http.Request) error {
	ctx := req.Context()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	now := time.Now()
	until := now
	if l.wait > 0 {
		until = now.Add(l.wait)
		if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
			until = dl
		}
	}
	delay, ok, err := l.shared.Take(ctx, until)
	switch {
	case err != nil:
		return l.storeFailed(req)
	case !ok && ctx.Err() != nil:
		return context.Cause(ctx) // it left before its turn was asked for
	case !ok:
		return l.refuse(ctx)
	case delay <= 0:
		return nil
	}
	if time.Now().Add(delay).After(until) {
		// The answer came back too late for the turn it gave: waiting
		// for it would pass the wait or the deadline.
		return l.refuse(ctx)
	}
	return l.sleep(ctx, delay, nil)
}

// storeFailed decides req's turn when the shared limit could not tell.
func (l *RateLimiter) storeFailed(req *http.Request) error {
	switch l.onStoreError {
	case OnStoreErrorAllow:
		return nil
	case OnStoreErrorDeny:
		if l.onLimited != nil {
			l.onLimited(req.Context())
		}
		return l.unchecked
	}
	return l.takeLocal(req)
}

// takeLocal takes a token of the bucket for req, waiting for it if
// allowed, or returns why it cannot.
func (l *RateLimiter) takeLocal(req *http.Request) error {
	now := time.Now()
	if l.wait == 0 {
		if l.lim.AllowN(now, 1) {
			return nil
		}
		return l.refuse(req.Context())
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	r := l.lim.ReserveN(now, 1)
	if !r.OK() { // cannot happen with a burst of 1 or more
		return l.refuse(req.Context())
	}
	delay := r.DelayFrom(now)
	if delay == 0 {
		return nil
	}
	allowed := l.wait
	if dl, ok := ctx.Deadline(); ok {
		allowed = min(allowed, dl.Sub(now))
	}
	if delay > allowed {
		// The turn comes too late: give the token back for those behind,
		// and fail now rather than after sleeping.
		r.CancelAt(now)
		return l.refuse(req.Context())
	}
	return l.sleep(ctx, delay, r)
}

// sleep waits delay for a turn, or until ctx ends; then it gives r, the
// bucket's reservation if any, back.
func (l *RateLimiter) sleep(ctx context.Context, delay time.Duration, r *rate.Reservation) error {
	if l.waiting != nil {
		l.waiting()
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		if r != nil {
			r.Cancel()
		}
		return context.Cause(ctx)
	}
}

// refuse calls OnLimited with ctx, the refused request's, and returns
// the refusal.
func (l *RateLimiter) refuse(ctx context.Context) error {
	if l.onLimited != nil {
		l.onLimited(ctx)
	}
	return l.refusal
}
