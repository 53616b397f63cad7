// Package queuemodel is a model of a sockets pool's wait queue, for tests
// that feed it the pool's queue events (backend.Schema.OnQueue) and check
// that the pool served its waiters in order: a request joins at the tail,
// goes back to the head when requeued, and must be the head when it is
// served (or, if it never waited, the queue must be empty).
package queuemodel

import (
	"fmt"
	"slices"
	"sync"

	"github.com/fusiongo/transport/internal/backend"
)

// Counts is what a Model has seen.
type Counts struct {
	Joined    int    // requests that joined the queue
	Served    int    // backend.QueueServed events
	Left      int    // backend.QueueLeft events: gave up waiting
	Refused   int    // backend.QueueRefused events
	Overtaken int    // served while not the model's head: must stay 0
	FirstBad  string // the first overtaking, described
	Waiting   int    // requests in the model's queue now
}

// Model is the queue. The zero value is ready; it is safe for concurrent
// use.
type Model struct {
	mu      sync.Mutex
	queue   []int // guarded by mu: the requests waiting, oldest first
	counts  Counts
	onEvent func(Counts, backend.QueueEvent) // guarded by mu
}

// Event feeds the model request n's event ev.
func (m *Model) Event(n int, ev backend.QueueEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.counts
	switch ev {
	case backend.QueueJoined:
		c.Joined++
		m.queue = append(m.queue, n)
	case backend.QueueRequeued:
		m.queue = append([]int{n}, m.queue...)
	case backend.QueueServed:
		c.Served++
		at := slices.Index(m.queue, n)
		if at != 0 && len(m.queue) > 0 {
			// Served before the head: overtook every request before it.
			c.Overtaken++
			if c.FirstBad == "" {
				c.FirstBad = fmt.Sprintf("call %d served at place %d of the queue %v...", n, at, m.queue[:min(len(m.queue), 5)])
			}
		}
		if at >= 0 {
			m.queue = slices.Delete(m.queue, at, at+1)
		}
	case backend.QueueLeft:
		c.Left++
		if i := slices.Index(m.queue, n); i >= 0 {
			m.queue = slices.Delete(m.queue, i, i+1)
		}
	case backend.QueueRefused:
		c.Refused++
	}
	c.Waiting = len(m.queue)
	if m.onEvent != nil {
		m.onEvent(*c, ev)
	}
}

// Counts returns what the model has seen so far.
func (m *Model) Counts() Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts
}

// OnEvent sets f to run after each event, with the counts after it. f
// runs with the model locked: it must not call the model.
func (m *Model) OnEvent(f func(Counts, backend.QueueEvent)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onEvent = f
}
