package transport

import (
	"context"
	"time"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/fleetlimit"
)

// WithQueueHook calls hook on each event of a sockets pool's wait queue,
// for every source schema of the invoker (backend.Schema.OnQueue): under
// the pool's lock, with the request's context. hook must not block or
// call into the invoker.
func WithQueueHook(hook func(ctx context.Context, event backend.QueueEvent)) Option {
	return func(o *options) { o.queueHook = hook }
}

// WithDedupeJoinedHook calls hook each time a caller has joined a call of
// a source schema with dedupe on, with the number of callers now waiting
// on it (the first caller included), so that a test can hold the source
// schema until every caller it sent is in.
func WithDedupeJoinedHook(hook func(waiters int)) Option {
	return func(o *options) { o.dedupeJoined = hook }
}

// WithCacheClock makes now the clock of every response cache (entries'
// dates and ages), so that a test ages an entry without waiting.
func WithCacheClock(now func() time.Time) Option {
	return func(o *options) { o.cacheClock = now }
}

// WithCacheEventHook calls hook with every response cache event: the
// schema, the event's kind (hit, miss, stale, refreshed, stored, ...) and
// its reason, so that a test waits for a background refresh or a store
// without polling.
func WithCacheEventHook(hook func(schema, kind, reason string)) Option {
	return func(o *options) { o.cacheHook = hook }
}

// WithRedisPause makes d the pause of the Redis client's breaker (5 s by
// default), so that a test sees the client try Redis again soon.
func WithRedisPause(d time.Duration) Option {
	return func(o *options) { o.redisPause = d }
}

// The events of a shared rate limit, as WithRateLimitEventHook reports
// them.
const (
	LimitStoreError = "store_error"
	LimitFellBack   = "fell_back"
	LimitReturned   = "returned"
)

// WithRateLimitEventHook calls hook with every event of a shared rate
// limit (rate_limit.store: redis): the schema and LimitStoreError,
// LimitFellBack or LimitReturned, so that a test waits for a fall back or
// a return without polling. hook must not block.
func WithRateLimitEventHook(hook func(schema, event string)) Option {
	return func(o *options) {
		o.limitHook = func(schema string, ev fleetlimit.Event) {
			hook(schema, map[fleetlimit.Event]string{fleetlimit.StoreError: LimitStoreError, fleetlimit.FellBack: LimitFellBack, fleetlimit.Returned: LimitReturned}[ev])
		}
	}
}

// RolloutPath returns the path the runtime rollout gives a Post of body to
// source schema name with ctx, as Post chooses it, without sending: ""
// when the startup switch decides. For the decision's benchmark.
func (inv *Transport) RolloutPath(ctx context.Context, name string, body []byte) (string, error) {
	r, _, err := inv.rolloutRoute(ctx, name, body, "")
	if r == nil {
		return "", err
	}
	return string(r.path), err
}
