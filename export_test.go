package transport

import "context"

// WithQueueHook calls hook on each event of a sockets pool's wait queue,
// for every source schema of the invoker (backend.Schema.OnQueue): under
// the pool's lock, with the request's context, and event one of "joined",
// "requeued", "served", "left" or "refused". hook must not block or call
// into the invoker.
func WithQueueHook(hook func(ctx context.Context, event string)) Option {
	return func(o *options) { o.queueHook = hook }
}
