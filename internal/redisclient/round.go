package redisclient

import (
	"context"
	"sync"
	"time"
)

// round is the context of one of Do's round trips: the caller's context
// with the deadline of redis.timeout from the call's start. It is a
// context of its own, from a pool, rather than context.WithTimeout's so
// that a round trip allocates none and arms no timer (a timer, a context,
// a Done channel and the caller's child list were four of a cache hit's
// allocations).
//
// Its Done is the caller's: it does not close at the deadline. The bound
// holds without it, since go-redis bounds every wait of a round trip by
// the deadline (ContextTimeoutEnabled: each read's and write's deadline
// is the earlier of it and redis.timeout from the read or write; a dial's
// too, and the TLS handshake's, which the client's dialer puts on the
// connection) or by PoolTimeout, which is redis.timeout: the wait for a
// pooled connection begins at the call's start and ends by the deadline,
// and what comes after it then fails at once. Err is the caller's too:
// nil until the caller's context ends, as Done says.
//
// Nothing may keep a round past the call it was given to: it goes back to
// the pool when Do returns.
type round struct {
	parent   context.Context // the caller's; context.Background() while in the pool
	deadline time.Time       // the call's start plus redis.timeout
}

var rounds = sync.Pool{New: func() any { return &round{parent: context.Background()} }}

// newRound returns a round of parent bounded by deadline; put it back with
// release.
func newRound(parent context.Context, deadline time.Time) *round {
	r := rounds.Get().(*round)
	r.parent, r.deadline = parent, deadline
	return r
}

// release puts r back in the pool, holding nothing of its caller.
func (r *round) release() {
	r.parent, r.deadline = context.Background(), time.Time{}
	rounds.Put(r)
}

// Deadline is the earlier of the caller's deadline and the round's.
func (r *round) Deadline() (time.Time, bool) {
	if d, ok := r.parent.Deadline(); ok && d.Before(r.deadline) {
		return d, true
	}
	return r.deadline, true
}

// Done is the caller's Done.
func (r *round) Done() <-chan struct{} { return r.parent.Done() }

// Err is the caller's Err.
func (r *round) Err() error { return r.parent.Err() }

// Value is the caller's Value.
func (r *round) Value(key any) any { return r.parent.Value(key) }
