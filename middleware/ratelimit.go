package middleware

import (
	"context"
	"fmt"
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
}

// RateLimiter is a token bucket (golang.org/x/time/rate) in front of a
// source schema: each request that passes its Middleware takes a token.
// It keeps its state across the pipelines that share it (a reload that
// keeps the settings keeps the limiter). Safe for concurrent use; a nil
// *RateLimiter limits nothing.
type RateLimiter struct {
	lim       *rate.Limiter
	wait      time.Duration
	refusal   error // made once: the refusal allocates nothing
	onLimited func(ctx context.Context)
	waiting   func() // tests: called once a request has its turn and waits for it
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
	if cfg.Wait > 0 {
		limit += "; no turn within the " + cfg.Wait.String() + " wait or the deadline"
	}
	l := &RateLimiter{lim: rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), burst), wait: max(cfg.Wait, 0), onLimited: cfg.OnLimited}
	if cfg.Schema != "" {
		l.refusal = fmt.Errorf("%w for source schema %q (%s): not sent", fault.ErrRateLimited, cfg.Schema, limit)
	} else {
		l.refusal = fmt.Errorf("%w (%s): not sent", fault.ErrRateLimited, limit)
	}
	return l
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
// probe (IsKeyProbe) sends nothing and takes no turn. A nil l returns
// next as it is.
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
		if t.onLimited != nil && err == t.l.refusal {
			t.onLimited(req.Context())
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// take takes a token for req, or returns why it cannot.
func (l *RateLimiter) take(req *http.Request) error {
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
	if l.waiting != nil {
		l.waiting()
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
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
