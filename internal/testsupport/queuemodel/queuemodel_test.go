package queuemodel

import (
	"testing"

	"github.com/fusiongo/transport/internal/backend"
)

// TestModel: in-order service counts nothing bad; serving a later waiter
// first counts an overtaking; a requeued request is the head again.
func TestModel(t *testing.T) {
	var m Model
	for _, e := range []struct {
		n  int
		ev backend.QueueEvent
	}{
		{1, backend.QueueJoined}, {2, backend.QueueJoined}, {1, backend.QueueServed},
		{1, backend.QueueRequeued}, {1, backend.QueueServed}, // back at the head, served in order
		{3, backend.QueueJoined}, {3, backend.QueueServed}, // overtakes 2
		{2, backend.QueueLeft}, {4, backend.QueueRefused},
	} {
		m.Event(e.n, e.ev)
	}
	c := m.Counts()
	if c.Joined != 3 || c.Served != 3 || c.Left != 1 || c.Refused != 1 || c.Overtaken != 1 || c.Waiting != 0 || c.FirstBad == "" {
		t.Errorf("Counts() = %+v, want 3 joined, 3 served, 1 left, 1 refused, 1 overtaken, none waiting", c)
	}
}
