package fleetlimit

import (
	"context"
	"sync"
	"time"
)

// flightCtx is the context of a Limit's checks: one per Limit, used by
// one check at a time (the leader's), its deadline the check's bound. It
// is a context of its own rather than context.WithDeadline's so that a
// check allocates none: a check is a call's cost, and the Redis client
// bounds its reads and writes by the deadline. Its Done closes when the
// deadline passes during a check, as a context's must; it is never
// cancelled otherwise. Nothing may keep it past the check it was given
// to.
type flightCtx struct {
	timer *time.Timer // fires at the deadline: expire; set in newFlightCtx

	mu       sync.Mutex    // guards the fields below
	deadline time.Time     // the bound of the check in flight
	active   bool          // a check is in flight
	done     chan struct{} // closed when the deadline passed during a check; a new one after
	err      error         // context.DeadlineExceeded once done is closed
}

func newFlightCtx() *flightCtx {
	c := &flightCtx{done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return c
}

// arm starts a check bounded by deadline.
func (c *flightCtx) arm(deadline time.Time) {
	c.mu.Lock()
	c.deadline, c.active = deadline, true
	c.mu.Unlock()
	c.timer.Reset(time.Until(deadline))
}

// disarm ends the check; a context whose deadline passed gets a new Done
// for the next.
func (c *flightCtx) disarm() {
	c.timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = false
	if c.err != nil {
		c.done, c.err = make(chan struct{}), nil
	}
}

// expire closes Done if a check is in flight and its deadline has passed:
// a timer that fires late, for an earlier check, finds either no check or
// one whose deadline is still ahead, and does nothing.
func (c *flightCtx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active && c.err == nil && !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
		close(c.done)
	}
}

func (c *flightCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

func (c *flightCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *flightCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (*flightCtx) Value(any) any { return nil }
