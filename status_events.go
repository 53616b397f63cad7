package transport

import (
	"sync"
	"time"

	"github.com/fusiongo/transport/canary"
)

// recentCap bounds the events the status page keeps: enough for the last
// minutes of a canary's life and a few ejections, a few kilobytes at most.
const recentCap = 64

// statusEvent is one event as the status page shows it: a change of a
// canary's share, a breaker's change of state, an address ejected or back.
// It carries names, states and shares only: never a header, a URL or a body.
type statusEvent struct {
	At     time.Time `json:"at"`
	Schema string    `json:"schema"`
	Kind   string    `json:"kind"`           // canary_<reason>, or a ResilienceKind
	Path   string    `json:"path,omitempty"` // resilience events: the route's path
	// From and To: a canary's shares, or a breaker's states.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Address is the address ejected or returned.
	Address string `json:"address,omitempty"`
	// Share is the canary share after the event; nil for other kinds.
	Share *float64 `json:"share,omitempty"`
}

// recentEvents is a bounded ring of the latest events, oldest dropped
// first. The zero value is ready; it is safe for concurrent use. Events
// are rare (a share change, a breaker change, an ejection), so a mutex is
// cheap here; hedges and budget exhaustion, which can come per request,
// are not kept.
type recentEvents struct {
	mu   sync.Mutex
	buf  [recentCap]statusEvent
	next int // events added
}

func (r *recentEvents) add(ev statusEvent) {
	r.mu.Lock()
	r.buf[r.next%recentCap] = ev
	r.next++
	r.mu.Unlock()
}

// canary keeps a canary event.
func (r *recentEvents) canary(ev canary.Event) {
	to := ev.To
	r.add(statusEvent{At: ev.At.UTC(), Schema: ev.Schema, Kind: "canary_" + string(ev.Reason),
		From: formatShare(ev.From), To: formatShare(to), Share: &to})
}

// resilience keeps a breaker or address event; the others are dropped.
func (r *recentEvents) resilience(ev ResilienceEvent) {
	switch ev.Kind {
	case BreakerStateChanged, AddressEjected, AddressReturned:
	default:
		return
	}
	r.add(statusEvent{At: ev.Time.UTC(), Schema: ev.Schema, Kind: string(ev.Kind), Path: string(ev.Path),
		From: ev.From, To: ev.To, Address: ev.Address})
}

// snapshot returns the events kept, newest first.
func (r *recentEvents) snapshot() []statusEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(r.next, recentCap)
	out := make([]statusEvent, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i)%recentCap])
	}
	return out
}
