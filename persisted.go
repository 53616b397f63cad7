package transport

import (
	"context"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/middleware"
)

// persistedOf returns the automatic persisted queries of source schema
// name under s, nil when off. Every build makes them anew, so that a
// reload turns them on again for a schema that refused them; the hashes
// are the transport's, kept across reloads (a text's hash never changes).
func (inv *Transport) persistedOf(name string, s env.PersistedQueriesSettings) *middleware.PersistedQueries {
	if !s.On() {
		return nil
	}
	return middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{
		Schema:      name,
		GET:         s.GET.On(),
		MaxURLBytes: s.MaxURLBytes,
		Hashes:      inv.hashes,
		Logger:      inv.log,
		OnResend: func(ctx context.Context, reason string) {
			inv.o.meters.RecordPersistedQueryResend(ctx, name, reason)
		},
	})
}
