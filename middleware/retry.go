package middleware

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/operation"
)

// RetryConfig configures Retry. The zero value retries nothing.
type RetryConfig struct {
	// MaxAttempts is how many times a query is sent in all, the first try
	// included. Zero, one or a negative value sends it once.
	// Default: 0 (retry off).
	MaxAttempts int

	// WaitMin is the wait before the first retry; with the default Backoff
	// it doubles on each further retry, up to WaitMax. Zero or negative
	// means the default. Default: 100ms.
	WaitMin time.Duration

	// WaitMax caps every wait, including one that a Retry-After header asks
	// for: a source schema that asks for longer is tried again after WaitMax
	// (or not at all, if the request's context ends first). Zero or negative
	// means the default. Default: 2s.
	WaitMax time.Duration

	// Statuses are the response status codes that make a query go again.
	// 500 is not among the defaults: GraphQL servers answer with it for
	// errors that a retry only repeats. Nil or empty means the default.
	// Default: 429, 502, 503, 504.
	Statuses []int

	// Backoff computes the wait before each retry from WaitMin, WaitMax, the
	// retry's number (0 for the first) and the response that failed (nil
	// after a transport error). Its result is capped at WaitMax.
	// Default: DefaultBackoff.
	Backoff Backoff

	// Budget, if set, bounds the retries: each query's first try is
	// counted in it, and a retry that it has no room for is not made (the
	// failure is returned as it is). Several Retry middlewares, or a
	// Hedge, may share one budget. Default: nil, no bound but MaxAttempts.
	Budget *RetryBudget

	// Logger receives one Debug record per retry. Give it the source
	// schema's attribute (Logger.With) to tell schemas apart.
	// Default: slog.Default().
	Logger *slog.Logger
}

// The defaults of RetryConfig.
const (
	DefaultRetryWaitMin = defaults.RetryWaitMin // 100ms
	DefaultRetryWaitMax = defaults.RetryWaitMax // 2s
)

// DefaultRetryStatuses returns the default of RetryConfig.Statuses, a new
// slice on every call: 429, 502, 503, 504.
func DefaultRetryStatuses() []int { return defaults.RetryStatuses() }

func (c RetryConfig) waitMin() time.Duration {
	if c.WaitMin <= 0 {
		return DefaultRetryWaitMin
	}
	return c.WaitMin
}

func (c RetryConfig) waitMax() time.Duration {
	if c.WaitMax <= 0 {
		return DefaultRetryWaitMax
	}
	return c.WaitMax
}

// Backoff computes the wait before retry number attempt (0 for the first
// retry) from the bounds min and max and the response that failed (nil
// after a transport error). It is RetryConfig's own type, so that a user
// writes one without importing go-retryablehttp; its signature is that of
// retryablehttp.Backoff, so any of that package's policies converts to it.
type Backoff func(min, max time.Duration, attempt int, resp *http.Response) time.Duration

// DefaultBackoff waits min·2ⁿ, capped at max, and honours a Retry-After
// header (seconds or HTTP-date) on 429 and 503, the statuses that RFC 6585
// and RFC 9110 define it for: go-retryablehttp's DefaultBackoff.
func DefaultBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	return retryablehttp.DefaultBackoff(min, max, attempt, resp)
}

// Retry returns a middleware that sends a query again after a transport
// error or a response with one of cfg.Statuses, up to cfg.MaxAttempts times
// in all. Mutations, subscriptions and requests whose kind
// operation.Classify cannot tell are sent once, untouched. cfg is copied: later changes to it
// have no effect.
//
// Retry runs its own loop over the next RoundTripper and takes only its
// policies from go-retryablehttp (Backoff, DefaultRetryPolicy). A
// retryablehttp.Client would need an http.Client around next, which wraps
// errors in *url.Error, closes next's idle connections whenever it gives up,
// and turns the last retryable response into an error; the loop leaves
// redirects and cookies to next, and follows and stores none itself.
//
// With cfg.Budget, each query's first try is counted in the budget and each
// retry paid from it; a retry it has no room for is not made, and the
// failure goes back as it is. A request that a circuit breaker further in
// refused (fault.ErrCircuitOpen), that a rate limit further in refused
// (fault.ErrRateLimited), or that the sockets path refused at
// max_pending_requests (fault.ErrOverloaded), is not retried.
//
// Between tries, the failed response's body is drained a little and closed.
// When the tries run out on a retryable status, that last response is
// returned as it is, for the caller to read. Transport errors that a retry
// would repeat end the tries at once: context cancellation or deadline, an
// untrusted certificate, an invalid header or URL scheme. A query that ends
// with an error, including the request's context ending during a wait,
// fails with "METHOD URL giving up after N attempt(s): cause", wrapping the
// last cause, as go-retryablehttp's errors do.
func Retry(cfg RetryConfig) Middleware {
	if cfg.MaxAttempts <= 1 {
		return func(next http.RoundTripper) http.RoundTripper { return next }
	}
	cfg.Statuses = slices.Clone(cfg.Statuses)
	if len(cfg.Statuses) == 0 {
		cfg.Statuses = DefaultRetryStatuses()
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &retrier{wrapped: wrap(next), cfg: cfg}
	}
}

// retrier is the RoundTripper of Retry.
type retrier struct {
	wrapped
	cfg RetryConfig // with defaults applied
}

var _ http.RoundTripper = (*retrier)(nil)

// RoundTrip sends req, and a query again while it fails in a retryable way.
func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := classify(req)
	if err != nil {
		return nil, err
	}
	if c.kind != operation.Query {
		return r.next.RoundTrip(c.req)
	}
	ctx := req.Context()
	r.cfg.Budget.First()
	for attempt := 1; ; attempt++ {
		send := c.req
		if attempt > 1 {
			send = c.resend()
		}
		resp, err := r.next.RoundTrip(send)
		if attempt > 1 && refusedUnsent(err) {
			r.cfg.Budget.refund() // the retry never left: it costs nothing
		}
		if !r.retryable(ctx, resp, err) || attempt == r.cfg.MaxAttempts || !r.cfg.Budget.Spend(ctx) {
			if err != nil {
				return nil, giveUp(req, attempt, err)
			}
			return resp, nil
		}
		wait := min(max(r.cfg.Backoff(r.cfg.waitMin(), r.cfg.waitMax(), attempt-1, resp), 0), r.cfg.waitMax())
		r.logRetry(ctx, req, attempt, wait, resp, err)
		if resp != nil {
			drain(resp)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, giveUp(req, attempt, err)
		}
	}
}

// retryable reports whether a query that ended with resp or err may go
// again.
func (r *retrier) retryable(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err == nil {
		return slices.Contains(r.cfg.Statuses, resp.StatusCode)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || refusedUnsent(err) {
		return false // an overtaken or refused request fails the same way each time
	}
	// retryablehttp only finds a certificate error directly under a
	// *url.Error; one wrapped deeper is found here.
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return false
	}
	// DefaultRetryPolicy recognises the errors that a retry repeats (bad
	// scheme, invalid header, untrusted certificate) only inside the
	// *url.Error that http.Client returns, so err is dressed as one.
	retry, _ := retryablehttp.DefaultRetryPolicy(ctx, nil, &url.Error{Op: "RoundTrip", URL: "", Err: err})
	return retry
}

func (r *retrier) logRetry(ctx context.Context, req *http.Request, attempt int, wait time.Duration, resp *http.Response, err error) {
	attrs := []slog.Attr{
		slog.String("method", req.Method),
		slog.String("url", redact.Request(req.URL)),
		slog.Int("attempt", attempt),
		slog.Duration("wait", wait),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	} else {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "retrying source schema request", attrs...)
}

// giveUp is the error of a query whose last attempt failed with cause.
func giveUp(req *http.Request, attempts int, cause error) error {
	return fmt.Errorf("%s %s giving up after %d attempt(s): %w", req.Method, redact.Request(req.URL), attempts, cause)
}

// sleep waits for d or until ctx ends, and then returns the cause of its
// end (context.Cause): a request_timeout's or header_timeout's error
// names its bound, and still matches context.DeadlineExceeded.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
