package sockets

import (
	"slices"
	"testing"
	"time"
)

// TestPoolIdleTimerLazy: the idle timer armed when a connection first
// went idle is not re-armed when the connection is reused and goes idle
// again; a firing that finds it idle for less than its timeout (it was
// used since) re-arms it for what is left and keeps it open, and one that
// finds it idle for its timeout closes it. The firings are called
// directly, and elapsed time is played by moving idleSince back, so that
// nothing depends on the clock.
func TestPoolIdleTimerLazy(t *testing.T) {
	srv := newPoolServer(t, nil, nil)
	p := newTestPool(t, srv, func(p *pool) { p.idle = time.Hour })
	first := mustSend(t, p)
	c := first.c
	p.mu.Lock()
	armed, since := c.timerDue, c.idleSince
	p.mu.Unlock()
	if armed.IsZero() {
		t.Fatal("no idle timer armed for the idle connection")
	}

	second := mustSend(t, p)
	if second.remote != first.remote {
		t.Fatalf("second request on %s, first on %s: want the idle connection reused", second.remote, first.remote)
	}
	p.mu.Lock()
	due, again := c.timerDue, c.idleSince
	p.mu.Unlock()
	if !due.Equal(armed) || !again.After(since) {
		t.Errorf("after reuse: timer due %v (armed for %v), idle since %v (was %v); want the timer left as it was and idleSince later", due, armed, again, since)
	}

	// The timer fires early for the second idle spell: it re-arms.
	c.idleExpired()
	p.mu.Lock()
	rearmed := c.timerDue
	want := c.idleDue()
	p.mu.Unlock()
	if !rearmed.Equal(want) {
		t.Errorf("after an early firing the timer is due %v, want %v", rearmed, want)
	}
	if open, idle := p.stats(); open != 1 || idle != 1 {
		t.Fatalf("after an early firing: %d open, %d idle; want the connection kept", open, idle)
	}

	// Its idle timeout has passed: the firing closes it.
	p.mu.Lock()
	c.idleSince = c.idleSince.Add(-2 * time.Hour)
	p.mu.Unlock()
	c.idleExpired()
	srv.waitUntil(t, "the connection idle past its timeout closes", func(_, closed []string) bool { return slices.Contains(closed, first.remote) })
	if third := mustSend(t, p); third.remote == first.remote {
		t.Error("a request was given the connection closed for idleness")
	}
}
