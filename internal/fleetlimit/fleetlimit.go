// Package fleetlimit is a source schema's rate limit shared by every
// gateway replica on the same Redis and key prefix (rate_limit.store:
// redis): GCRA kept in one Redis key per schema, on Redis's clock, one
// short script per check (script.go). A *Limit is the
// middleware.SharedLimit of the schema's RateLimiter, which waits for the
// turns it gives and decides the calls it cannot tell
// (rate_limit.on_store_error).
//
// A replica's checks of a schema go one batch at a time: the calls that
// arrive while a check is in flight wait for it to come back, then go
// together, in the order they came, in one round trip, and the script
// hands out their turns in that order. So a replica has at most one check
// of a schema in flight, on one connection whatever the load, serves its
// callers in order, and pays at most one round trip per call (fewer under
// load).
//
// A check that fails, or whose answer has not come by its bound (the
// limit's Timeout, rate_limit.store_timeout, counted from the arrival of
// the batch's first call), is a store error for every call it carried, and
// the limit is "fallen back" until a check succeeds again: the fall back
// and the return are each logged once and observed. The Redis client's
// breaker (internal/redisclient) counts each failed check; once it pauses
// the client, a check fails at once without a round trip until its trial,
// and the trial that succeeds is the limit's return.
package fleetlimit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/redisclient"
)

// Config configures New.
type Config struct {
	Schema            string              // the source schema, in the key and the logs
	Client            *redisclient.Client // the transport's Redis; not closed by the limit
	RequestsPerSecond float64             // positive
	Burst             int                 // at least 1
	Timeout           time.Duration       // the bound of a check, positive
	OnStoreError      string              // what the limiter does on a store error, for the logs
	Log               *slog.Logger        // nil: none
	// Observe, if set, is told each event, with the context of the call
	// it concerns. It must not block.
	Observe func(ctx context.Context, ev Event)
}

// Event is what a Limit reports to Config.Observe.
type Event int

// The events.
const (
	StoreError Event = iota // a call's check failed or timed out
	FellBack                // the limit fell back: its last check succeeded, this one failed
	Returned                // the limit is shared again: a check succeeded after a failure
)

// ErrStore is what Take returns for a call whose check failed: the limit
// could not tell its turn. The cause is in the log and in Health.
var ErrStore = errors.New("the shared rate limit's store could not be asked in time")

// Limit is one source schema's share of a fleet's rate limit. Safe for
// concurrent use.
type Limit struct {
	schema       string              // set in New
	client       *redisclient.Client // set in New
	timeout      time.Duration       // set in New
	onStoreError string              // set in New
	log          *slog.Logger        // set in New, never nil
	observe      func(ctx context.Context, ev Event)
	// evalsha and eval are the first two arguments of the script's
	// command, boxed once: EVALSHA and its hash, or EVAL and its source
	// after a NOSCRIPT (a Redis that lost its scripts).
	evalsha, eval [2]any

	mu     sync.Mutex // guards queue, spare and flying
	queue  []*waiter  // the calls waiting for the next check, in order
	spare  []*waiter  // the last batch's array, for the next queue
	flying bool       // a check is in flight or about to be: its leader takes the queue next

	// The flight's state, owned by the one leader in flight (flying).
	args   []any                                      // the command: evalsha/eval, hash/source, 1, key, T, τ, then each live call's wait
	live   []*waiter                                  // the calls the check asks for
	delays []int64                                    // the check's answer, set by check
	one    [1]int64                                   // delays of a check of one call
	ctx    *flightCtx                                 // the check's context, bounded by its deadline
	run    func(context.Context, redis.Cmdable) error // check, made once: no closure per check

	queued func() // tests: called once a call waits behind a check in flight

	hmu     sync.Mutex // guards the health below
	fallen  bool       // the last check failed
	since   time.Time  // when fallen last changed; zero: never
	lastErr string     // the last failure's text (the client's, password hidden)

	storeErrors atomic.Int64 // calls whose check failed
	fallbacks   atomic.Int64 // times the limit fell back
}

// waiter is one call's check, pooled.
type waiter struct {
	ctx     context.Context // the call's
	until   time.Time       // its turn must come by then
	arrived time.Time
	wake    chan struct{} // cap 1: its answer is set, or (lead) it leads the next check
	lead    bool
	delay   time.Duration
	ok      bool
	err     error
	arg     waitArg // its longest wait, as the check sends it
}

// waitArg is a call's longest wait in µs as a command argument: go-redis
// writes it through MarshalBinary, from the waiter's own buffer, so that
// no call boxes an integer (which allocates from 256 on).
type waitArg struct {
	us  int64
	buf [20]byte
}

// MarshalBinary writes a.us in decimal.
func (a *waitArg) MarshalBinary() ([]byte, error) { return strconv.AppendInt(a.buf[:0], a.us, 10), nil }

var waiters = sync.Pool{New: func() any { return &waiter{wake: make(chan struct{}, 1)} }}

// New returns the limit cfg describes. It does not talk to Redis.
func New(cfg Config) *Limit {
	interval := 1e6 / cfg.RequestsPerSecond // µs between two turns
	l := &Limit{
		schema:       cfg.Schema,
		client:       cfg.Client,
		timeout:      cfg.Timeout,
		onStoreError: cfg.OnStoreError,
		log:          cfg.Log,
		observe:      cfg.Observe,
		evalsha:      [2]any{"evalsha", takeScript.Hash()},
		eval:         [2]any{"eval", takeSource},
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	key := cfg.Client.Prefix() + "rl:" + strconv.Itoa(len(cfg.Schema)) + ":" + cfg.Schema
	l.args = []any{nil, nil, 1, key, strconv.FormatFloat(interval, 'f', 3, 64),
		strconv.FormatFloat(interval*float64(max(cfg.Burst, 1)), 'f', 3, 64)}
	l.run = l.check
	l.ctx = newFlightCtx()
	return l
}

// Take asks for a turn that comes by until; see middleware.SharedLimit.
// It waits for the check ahead of it, if any, then for its own: at most
// the limit's Timeout from its arrival, whatever ctx says.
func (l *Limit) Take(ctx context.Context, until time.Time) (time.Duration, bool, error) {
	w := waiters.Get().(*waiter)
	w.ctx, w.until, w.arrived = ctx, until, time.Now()
	l.mu.Lock()
	l.queue = append(l.queue, w)
	lead := !l.flying
	l.flying = true
	l.mu.Unlock()
	if !lead {
		if l.queued != nil {
			l.queued()
		}
		<-w.wake
		lead = w.lead
	}
	if lead {
		l.fly(w)
	}
	delay, ok, err := w.delay, w.ok, w.err
	*w = waiter{wake: w.wake}
	waiters.Put(w)
	return delay, ok, err
}

// fly runs one check for the calls queued, self among them, answers
// each, and hands the lead to the first call queued meanwhile, if any.
func (l *Limit) fly(self *waiter) {
	l.mu.Lock()
	batch := l.queue
	l.queue, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	l.ask(batch)
	for _, w := range batch {
		if w != self {
			w.wake <- struct{}{}
		}
	}
	clear(batch)
	l.mu.Lock()
	l.spare = batch[:0]
	if len(l.queue) > 0 {
		next := l.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		l.flying = false
	}
	l.mu.Unlock()
}

// ask checks batch in one round trip and sets each call's answer. A call
// that has left is answered no turn and not asked for; one whose bound
// has passed already (the check ahead took its time) is a store error
// without a round trip.
func (l *Limit) ask(batch []*waiter) {
	now := time.Now()
	l.live, l.args = l.live[:0], l.args[:6]
	var first context.Context
	var deadline time.Time
	for _, w := range batch {
		switch {
		case w.ctx.Err() != nil:
			continue
		case !now.Before(w.arrived.Add(l.timeout)):
			l.storeError(w)
			continue
		}
		if first == nil {
			first, deadline = w.ctx, w.arrived.Add(l.timeout)
		}
		l.live = append(l.live, w)
		w.arg.us = max(w.until.Sub(now), 0).Microseconds()
		l.args = append(l.args, &w.arg)
	}
	if len(l.live) == 0 {
		return
	}
	// The check is every live call's: none's cancellation ends it, only
	// its bound.
	l.ctx.arm(deadline)
	err := l.client.DoBounded(l.ctx, l.run)
	l.ctx.disarm()
	delays := l.delays
	if err == nil && len(delays) != len(l.live) {
		err = errors.New("the script answered " + strconv.Itoa(len(delays)) + " turns for " + strconv.Itoa(len(l.live)) + " calls")
	}
	l.delays = nil
	if err != nil {
		l.failed(first, err)
		for _, w := range l.live {
			l.storeError(w)
		}
	} else {
		l.succeeded(first)
		for i, w := range l.live {
			w.delay, w.ok = time.Duration(delays[i])*time.Microsecond, delays[i] >= 0
		}
	}
	clear(l.live)
	clear(l.args[6:])
}

// check is the round trip: the script by its hash, and by its source if
// Redis does not know it. A check of one call reads one integer (nothing
// to allocate for the answer); of several, a list.
func (l *Limit) check(ctx context.Context, r redis.Cmdable) error {
	p, ok := r.(processor)
	if !ok {
		return errors.New("the Redis client cannot run a command it is given")
	}
	l.args[0], l.args[1] = l.evalsha[0], l.evalsha[1]
	err := l.process(ctx, p)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		l.args[0], l.args[1] = l.eval[0], l.eval[1]
		err = l.process(ctx, p)
	}
	return err
}

// processor runs a command it is given: go-redis's *redis.Client, which
// redisclient hands its callers as a redis.Cmdable.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// process sends the command in l.args and sets l.delays from its answer.
func (l *Limit) process(ctx context.Context, p processor) error {
	if len(l.live) == 1 {
		cmd := redis.NewIntCmd(ctx, l.args...)
		if err := p.Process(ctx, cmd); err != nil {
			return err
		}
		l.one[0] = cmd.Val()
		l.delays = l.one[:]
		return nil
	}
	cmd := redis.NewIntSliceCmd(ctx, l.args...)
	if err := p.Process(ctx, cmd); err != nil {
		return err
	}
	l.delays = cmd.Val()
	return nil
}

// storeError answers w's check as failed, and counts it.
func (l *Limit) storeError(w *waiter) {
	w.err = ErrStore
	l.storeErrors.Add(1)
	if l.observe != nil {
		l.observe(w.ctx, StoreError)
	}
}

// failed records a failed check: the fall back, logged and observed, if
// the limit was shared.
func (l *Limit) failed(ctx context.Context, err error) {
	l.hmu.Lock()
	l.lastErr = err.Error()
	was := l.fallen
	if !was {
		l.fallen, l.since = true, time.Now()
	}
	l.hmu.Unlock()
	if was {
		return
	}
	l.fallbacks.Add(1)
	l.log.Warn("rate limit: the shared limit's Redis store failed; each replica now does as on_store_error says until Redis answers again",
		"source_schema", l.schema, "on_store_error", l.onStoreError, "error", err.Error())
	if l.observe != nil {
		l.observe(ctx, FellBack)
	}
}

// succeeded records a check that Redis answered: the return, logged and
// observed, if the limit had fallen back.
func (l *Limit) succeeded(ctx context.Context) {
	l.hmu.Lock()
	was := l.fallen
	var down time.Duration
	if was {
		now := time.Now()
		down = now.Sub(l.since)
		l.fallen, l.since = false, now
	}
	l.hmu.Unlock()
	if !was {
		return
	}
	l.log.Info("rate limit: the shared limit's Redis store answers again; the limit is shared again",
		"source_schema", l.schema, "fallen_back_for", down.String())
	if l.observe != nil {
		l.observe(ctx, Returned)
	}
}

// Health is the limit's state for the status page. It holds no secret.
type Health struct {
	Shared      bool      // false: fallen back, the last check failed
	Since       time.Time // when Shared last changed; zero: never
	LastError   string    // the last failure's text, the URL's password hidden; "" if none yet
	StoreErrors int64     // calls whose check failed
	Fallbacks   int64     // times the limit fell back
}

// Health returns the limit's state.
func (l *Limit) Health() Health {
	l.hmu.Lock()
	defer l.hmu.Unlock()
	return Health{Shared: !l.fallen, Since: l.since, LastError: l.lastErr,
		StoreErrors: l.storeErrors.Load(), Fallbacks: l.fallbacks.Load()}
}
