package telemetry

import (
	"context"
)

// RecordReload counts a reload that took effect: fusion.transport.reloads
// by one, and fusion.transport.transports.kept, .replaced and .removed by
// the number of source schema transports that the reload kept with their
// warm connections, replaced because their settings changed, and dropped
// because their schema is gone. A rejected reload is not recorded. The
// path calls it after the new configuration is in force.
//
// On a nil *Telemetry it does nothing.
func (t *Telemetry) RecordReload(kept, replaced, removed int) {
	if t == nil {
		return
	}
	// A reload belongs to no request: there is no context to take spans
	// or baggage from.
	ctx := context.Background()
	t.reloads.Add(ctx, 1)
	t.kept.Add(ctx, int64(kept))
	t.replaced.Add(ctx, int64(replaced))
	t.removed.Add(ctx, int64(removed))
}
