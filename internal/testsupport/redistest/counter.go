package redistest

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook (redisclient.Client.AddHook) that counts what
// a client puts on the wire: dials, and commands (each command of a
// pipeline, and the handshake's on a new connection). The zero value is
// ready.
type Counter struct {
	// Before, if set, runs as each command is about to go, before its
	// connection is taken (a test holds a call there). Set it before the
	// hook is added.
	Before func(name string)

	dials, cmds atomic.Int64
	mu          sync.Mutex
	names       []string // guarded by mu: the commands' names, in order
}

// Wire returns the dials and the commands so far.
func (h *Counter) Wire() [2]int64 { return [2]int64{h.dials.Load(), h.cmds.Load()} }

// Sent returns the names of the commands so far, in order, lower case.
func (h *Counter) Sent() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.names)
}

func (h *Counter) record(names ...string) {
	h.cmds.Add(int64(len(names)))
	h.mu.Lock()
	h.names = append(h.names, names...)
	h.mu.Unlock()
}

// DialHook counts a dial.
func (h *Counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.dials.Add(1)
		return next(ctx, network, addr)
	}
}

// ProcessHook counts a command and runs Before.
func (h *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd.Name())
		if h.Before != nil {
			h.Before(cmd.Name())
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts each command of a pipeline.
func (h *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		h.record(names...)
		return next(ctx, cmds)
	}
}
