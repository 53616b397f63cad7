// Package redisclient is the transport's one Redis client (redis.* in the
// configuration), shared by every response cache and every rate limit
// whose store is redis. It is go-redis with the transport's rules around
// it:
//
//   - every round trip is bounded by redis.timeout from its start (the
//     wait for a connection, dial, read and write), and nothing is retried
//     but a round trip on a connection Redis had closed while it sat in
//     the pool, which is sent again at once on another, within the same
//     bound: a slow Redis is a miss, not a slower call, and a restarted
//     one costs no call;
//   - a breaker: after Failures consecutive failures the client stops
//     sending for Pause, failing each call at once with an error wrapping
//     ErrStoreUnavailable, then lets one trial through; the pause and the
//     return are each logged once;
//   - the URL's password never appears in an error, a log line or Health.
//
// New does not dial: Redis being down when the transport starts is a
// series of misses, not a failed start.
package redisclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/redact"
)

// ErrStoreUnavailable is wrapped by the error of every call the breaker
// refuses: Redis failed too often lately and the client is not asking it
// for a while.
var ErrStoreUnavailable = errors.New("redis paused after repeated failures")

// Breaker configures the breaker around a client.
type Breaker struct {
	// Failures is how many consecutive failures (errors and timeouts)
	// open it. Default: 5.
	Failures int
	// Pause is how long it stays open before it lets one trial call
	// through. Default: 5 s.
	Pause time.Duration
	// Now is the clock it measures Pause with. Default: time.Now.
	Now func() time.Time
}

// The defaults of Breaker.
const (
	DefaultFailures = 5
	DefaultPause    = 5 * time.Second
)

// State is the breaker's state.
type State string

// The states of the breaker.
const (
	Closed   State = "closed"    // calls are sent
	Open     State = "open"      // calls fail at once until the pause is over
	HalfOpen State = "half-open" // one trial call is out; the others fail at once
)

// Health is the breaker's state for the status page. It holds no secret.
type Health struct {
	State    State     // closed, open or half-open
	Failures int       // consecutive failures so far (0 after a success)
	Since    time.Time // when State began (zero: never changed)
	// LastError is the text of the last failure, the URL's password
	// hidden; "" if none yet.
	LastError string
}

// Client is the transport's Redis client. Safe for concurrent use. Make
// one with New; Close it when the transport closes.
type Client struct {
	rdb *redis.Client // set in New; go-redis is safe for concurrent use
	tls *tls.Config   // the rediss connection's TLS; nil for redis://. Set in New
	// dials counts the connections dialed (conn.seq): a round trip tells
	// by it the connections it found in the pool from those it dialed.
	dials   atomic.Uint64
	prefix  string        // redis.key_prefix, set in New
	timeout time.Duration // redis.timeout, set in New
	shown   string        // the URL as errors and logs show it (redact.URL), set in New
	// secrets are the texts that must not appear in an error: the
	// password as written in the URL and as decoded. Set in New.
	secrets []string
	log     *slog.Logger // set in New, never nil

	failures int              // set in New: Breaker.Failures
	pause    time.Duration    // set in New: Breaker.Pause
	now      func() time.Time // set in New: Breaker.Now

	mu       sync.Mutex // guards the breaker's state below
	state    State      // guarded by mu
	fails    int        // guarded by mu: consecutive failures
	since    time.Time  // guarded by mu: when state began
	opened   time.Time  // guarded by mu: when it last left Closed
	lastErr  string     // guarded by mu: the last failure's text, redacted
	trialOut bool       // guarded by mu: in HalfOpen, the trial call is out
}

// overridden lists the URL query options of go-redis that the client sets
// from its own settings: a URL that sets one is refused, by name, rather
// than overridden in silence.
var overridden = map[string]string{
	"dial_timeout":            "redis.timeout",
	"read_timeout":            "redis.timeout",
	"write_timeout":           "redis.timeout",
	"pool_timeout":            "redis.timeout",
	"context_timeout_enabled": "redis.timeout",
	"max_retries":             "redis.timeout",
	"min_retry_backoff":       "redis.timeout",
	"max_retry_backoff":       "redis.timeout",
	"pool_size":               "redis.pool_size",
}

// New returns a client for s, with the default breaker. It checks the
// settings and loads the TLS files; it does not dial.
func New(s env.RedisSettings, log *slog.Logger) (*Client, error) {
	return NewWithBreaker(s, log, Breaker{})
}

// NewWithBreaker is New with a breaker of b's settings (zero fields take
// the defaults): for tests, which move the breaker's clock.
func NewWithBreaker(s env.RedisSettings, log *slog.Logger, b Breaker) (*Client, error) {
	if s.URL == "" {
		return nil, errors.New("redis.url: empty; a response cache or a rate limit with store redis needs it")
	}
	shown := redact.URL(s.URL)
	u, err := redact.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("redis.url: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("redis.url %s: scheme %q: want redis or rediss", shown, u.Scheme)
	}
	secrets := urlSecrets(s.URL, u)
	for name := range u.Query() {
		if key, ok := overridden[name]; ok {
			return nil, fmt.Errorf("redis.url %s: option %s: set %s instead", shown, name, key)
		}
	}
	opt, err := redis.ParseURL(s.URL)
	if err != nil {
		return nil, fmt.Errorf("redis.url %s: %w", shown, scrub(err, secrets))
	}
	if opt.Password != "" {
		secrets = append(secrets, opt.Password)
	}
	timeout := s.Timeout
	switch {
	case timeout == 0:
		timeout = env.DefaultRedisTimeout
	case timeout < 0:
		return nil, fmt.Errorf("redis.timeout %v: must be positive", s.Timeout)
	}
	if s.PoolSize < 0 {
		return nil, fmt.Errorf("redis.pool_size %d: must be positive (0: go-redis's default)", s.PoolSize)
	}
	if err := setTLS(opt, u.Scheme, s.TLS); err != nil {
		return nil, err
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = timeout, timeout, timeout, timeout
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1   // a retry would double the bound of a lookup (Do's own, retry, keeps it)
	opt.DialerRetries = 1 // one dial per call: a refused one fails the call at once
	opt.PoolSize = s.PoolSize
	// One round trip less per connection, and no notifications for a
	// feature of managed clusters that the client does not use.
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}

	prefix := s.KeyPrefix
	if prefix == "" {
		prefix = env.DefaultRedisKeyPrefix
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if b.Failures <= 0 {
		b.Failures = DefaultFailures
	}
	if b.Pause <= 0 {
		b.Pause = DefaultPause
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	c := &Client{
		tls:      opt.TLSConfig,
		prefix:   prefix,
		timeout:  timeout,
		shown:    shown,
		secrets:  secrets,
		log:      log,
		failures: b.Failures,
		pause:    b.Pause,
		now:      b.Now,
		state:    Closed,
	}
	opt.Dialer = c.dial
	c.rdb = redis.NewClient(opt)
	return c, nil
}

// urlSecrets returns the password of raw's userinfo, as decoded and as
// written (percent-encoded): either may turn up in a cause's text. u is
// raw parsed.
func urlSecrets(raw string, u *url.URL) []string {
	p, ok := u.User.Password()
	if !ok || p == "" {
		return nil
	}
	secrets := []string{p}
	// The authority as url.Parse cuts it: after "//", up to the path,
	// query or fragment; the userinfo ends at its last '@'.
	_, authority, _ := strings.Cut(raw, "//")
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if _, written, ok := strings.Cut(authority[:at], ":"); ok && written != p && written != "" {
			secrets = append(secrets, written)
		}
	}
	return secrets
}

// setTLS loads the TLS files into opt's TLS configuration, which
// redis.ParseURL made for a rediss URL.
func setTLS(opt *redis.Options, scheme string, s env.RedisTLSSettings) error {
	if s == (env.RedisTLSSettings{}) {
		return nil
	}
	if scheme != "rediss" {
		for _, f := range []struct{ key, value string }{
			{"redis.tls.ca_file", s.CAFile}, {"redis.tls.cert_file", s.CertFile}, {"redis.tls.key_file", s.KeyFile},
		} {
			if f.value != "" {
				return fmt.Errorf("%s is set but redis.url is not rediss://: the connection has no TLS", f.key)
			}
		}
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return fmt.Errorf("redis.tls.ca_file %s: %w", s.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("redis.tls.ca_file %s: no PEM certificate in it", s.CAFile)
		}
		opt.TLSConfig.RootCAs = pool
	}
	switch {
	case s.CertFile != "" && s.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return fmt.Errorf("redis.tls.cert_file %s, redis.tls.key_file %s: %w", s.CertFile, s.KeyFile, err)
		}
		opt.TLSConfig.Certificates = []tls.Certificate{cert}
	case s.CertFile != "":
		return fmt.Errorf("redis.tls.cert_file %s is set without redis.tls.key_file", s.CertFile)
	case s.KeyFile != "":
		return fmt.Errorf("redis.tls.key_file %s is set without redis.tls.cert_file", s.KeyFile)
	}
	return nil
}

// Prefix returns redis.key_prefix: every key the transport writes starts
// with it.
func (c *Client) Prefix() string { return c.prefix }

// Timeout returns redis.timeout, the bound of each round trip.
func (c *Client) Timeout() time.Duration { return c.timeout }

// AddHook adds a go-redis hook around every dial, command and pipeline
// (telemetry, and tests that count round trips).
func (c *Client) AddHook(h redis.Hook) { c.rdb.AddHook(h) }

// Do runs fn, one round trip (a command, a pipeline, a script), with a
// context bounded by redis.timeout from now (round), unless the breaker
// refuses it. Its error names the server (password hidden), wraps fn's,
// and never holds the password. A redis.Nil answer is a success; a
// failure because the caller's own context ended does not count against
// Redis. fn may run more than once (retry): it must set its results
// afresh each time, and what it sends must bear being run twice.
func (c *Client) Do(ctx context.Context, fn func(ctx context.Context, r redis.Cmdable) error) error {
	if err := c.admit(); err != nil {
		return err
	}
	rc := newRound(ctx, time.Now().Add(c.timeout))
	err := c.retry(rc, fn)
	rc.release()
	return c.outcome(err, ctx.Err() != nil)
}

// retry runs fn, and again for as long as it fails on a connection that
// Redis closed while the connection sat in the pool (staleConn): after a
// Redis restart, each connection the pool held fails once, at the first
// write or read, and go-redis drops it. The round trips share ctx's
// deadline, so the bound of the call is unchanged, and they end: each
// takes a connection the call found in the pool, which go-redis then
// drops, or dials one, whose failure ends the call.
//
// Such a round trip had no answer, and what it sent most likely never ran:
// Redis closes its connections as it stops, and a write after that runs
// nothing. Only a Redis that died between running a command and answering
// it would run that command twice; every round trip of the transport
// bears that (a lookup, an entry stored twice, an invalidation counted
// twice, a rate limit's check that takes its turns twice, which only
// refuses sooner).
func (c *Client) retry(ctx context.Context, fn func(ctx context.Context, r redis.Cmdable) error) error {
	dials := c.dials.Load()
	for {
		err := fn(ctx, c.rdb)
		if err == nil || !staleConn(err, dials) {
			return err
		}
	}
}

// DoBounded is Do for a caller whose ctx carries its own bound, a
// deadline, as a rate limit's check does: the client adds no context of
// its own (none to allocate), and each read and write is still bounded by
// redis.timeout. A failure once ctx's deadline has passed counts against
// Redis, as a timeout of Do's does: a Redis too slow for its callers is
// paused for all; a failure because ctx was cancelled does not. A round
// trip on a connection Redis had closed is sent again, as Do's is.
func (c *Client) DoBounded(ctx context.Context, fn func(ctx context.Context, r redis.Cmdable) error) error {
	if err := c.admit(); err != nil {
		return err
	}
	err := c.retry(ctx, fn)
	return c.outcome(err, errors.Is(ctx.Err(), context.Canceled))
}

// outcome records a call's end, err, in the breaker (nothing if the
// caller gave up), and returns err named and scrubbed.
func (c *Client) outcome(err error, gaveUp bool) error {
	if err == nil || errors.Is(err, redis.Nil) {
		c.succeeded()
		return err
	}
	err = scrub(err, c.secrets)
	if gaveUp {
		c.abandoned()
	} else {
		c.failed(err)
	}
	return fmt.Errorf("redis %s: %w", c.shown, err)
}

// admit lets a call through or refuses it, by the breaker's state.
func (c *Client) admit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case Closed:
		return nil
	case Open:
		if c.now().Sub(c.since) >= c.pause {
			c.state, c.since, c.trialOut = HalfOpen, c.now(), true
			return nil
		}
	case HalfOpen:
		if !c.trialOut {
			c.trialOut = true
			return nil
		}
	}
	return fmt.Errorf("redis %s: %w (%d failures; the last: %s)", c.shown, ErrStoreUnavailable, c.fails, c.lastErr)
}

func (c *Client) succeeded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fails = 0
	if c.state == Closed {
		return
	}
	now := c.now()
	c.log.Info("redis answers again: the response caches and rate limits on it are back in use",
		"redis", c.shown, "paused_for", now.Sub(c.opened).String())
	c.state, c.since, c.trialOut = Closed, now, false
}

// abandoned is the end of a call that its caller gave up: no sign either
// way; a trial it was lets the next call be the trial.
func (c *Client) abandoned() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trialOut = false
}

func (c *Client) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fails++
	c.lastErr = err.Error()
	switch c.state {
	case Closed:
		if c.fails < c.failures {
			return
		}
		c.state, c.since = Open, c.now()
		c.opened = c.since
		c.log.Warn("redis keeps failing: paused, it is tried again after the pause; meanwhile the response caches on it miss "+
			"and the rate limits on it do as their on_store_error says",
			"redis", c.shown, "failures", c.fails, "pause", c.pause.String(), "error", c.lastErr)
	case HalfOpen:
		// The trial failed: paused again, logged once already.
		c.state, c.since, c.trialOut = Open, c.now(), false
	}
}

// Health returns the breaker's state.
func (c *Client) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Health{State: c.state, Failures: c.fails, Since: c.since, LastError: c.lastErr}
}

// Close closes the connections.
func (c *Client) Close() error {
	if err := c.rdb.Close(); err != nil {
		return fmt.Errorf("redis %s: close: %w", c.shown, scrub(err, c.secrets))
	}
	return nil
}

// scrub returns err, or an error with its text and each secret in it
// hidden if the text holds one. The replacement does not unwrap to err (its
// text is the secret) but answers errors.Is as err does, so that a timeout
// stays a timeout.
func scrub(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	hidden := text
	for _, s := range secrets {
		hidden = strings.ReplaceAll(hidden, s, "xxxxx")
	}
	if hidden == text {
		return err
	}
	return &scrubbed{text: hidden, cause: err}
}

// scrubbed is an error whose text had a secret in it.
type scrubbed struct {
	text  string // the cause's text, secrets hidden
	cause error  // not returned by Unwrap: only asked through Is
}

func (e *scrubbed) Error() string { return e.text }

func (e *scrubbed) Is(target error) bool { return errors.Is(e.cause, target) }

// Subscribe subscribes to channel (under no breaker: the subscription
// reconnects by itself, go-redis's). The caller closes it.
func (c *Client) Subscribe(ctx context.Context, channel string) *redis.PubSub {
	return c.rdb.Subscribe(ctx, channel)
}
