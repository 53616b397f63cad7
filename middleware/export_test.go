package middleware

import (
	"time"

	"github.com/fusiongo/transport/internal/sharekey"
)

// DedupeWithHook is Dedupe with joined called each time a caller has joined
// a shared request, with the number of callers now waiting on it, and with
// maxBody as the largest body to share (Dedupe: 32 MiB). Tests use joined
// to release a blocked server only once every caller waits.
func DedupeWithHook(joined func(waiters int), maxBody int64) Middleware {
	return newDedupe(nil, joined, maxBody)
}

// DedupeWithProbe is DedupeWithHook keyed on each call's request as the
// attempt middleware would send it, as the request path's dedupe is when
// a source schema has SchemaOptions.AttemptMiddleware.
func DedupeWithProbe(attempt []Middleware, joined func(waiters int), maxBody int64) Middleware {
	return newDedupe(sharekey.NewProbe(attempt), joined, maxBody)
}

// SetWaitingHook makes l call waiting each time a request has its turn
// and starts waiting for it, so that a test can start the next caller
// only then.
func SetWaitingHook(l *RateLimiter, waiting func()) { l.waiting = waiting }

// SetBudgetClock makes b read the time elapsed since it was made from
// clock instead of the monotonic clock, so that a test can put tries at
// chosen seconds of its window. Call it before b's first use; clock must
// never go back, as the monotonic clock does not, and be safe for
// concurrent use.
func SetBudgetClock(b *RetryBudget, clock func() time.Duration) { b.clock = clock }

// HashesComputed returns how many hashes q has computed.
func HashesComputed(q *QueryHashes) int64 { return q.computed.Load() }

// HashesKept returns how many texts q keeps, in both generations, and
// their bytes as q counts them.
func HashesKept(q *QueryHashes) (texts, bytes int) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	for _, m := range []map[string]*queryHash{q.cur, q.old} {
		for _, h := range m {
			texts++
			bytes += h.cost()
		}
	}
	return texts, bytes
}
