package transport

import (
	"context"
	"errors"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/middleware"
)

// rateLimit is a source schema's rate limiter with the settings it was
// made from. One per schema, shared by its serving route and a canary's
// candidate, so that the limit bounds what the schema gets from this
// gateway replica whichever path sends it; a reload with equal settings
// keeps it, and with it the tokens spent. Immutable once built.
type rateLimit struct {
	limiter  *middleware.RateLimiter // nil: no limit
	settings env.RateLimitSettings
}

// limitOf returns the rate limit of source schema name under s, prev's if
// its settings are equal.
func (inv *Transport) limitOf(name string, s env.RateLimitSettings, prev *entry) rateLimit {
	if !s.On() {
		return rateLimit{}
	}
	s.Burst = s.EffectiveBurst()
	if prev != nil && prev.limit.limiter != nil && prev.limit.settings == s {
		return prev.limit
	}
	return rateLimit{settings: s, limiter: middleware.NewRateLimiter(middleware.RateLimitConfig{
		Schema:            name,
		RequestsPerSecond: s.RequestsPerSecond,
		Burst:             s.Burst,
		Wait:              setting.Bound(s.Wait),
	})}
}

// limited returns the middleware of a route's rate limiter, which counts
// each refusal in the telemetry under the route's path; nil without one.
func (inv *Transport) limited(l *middleware.RateLimiter, name string, path env.Path) middleware.Middleware {
	if l == nil {
		return nil
	}
	return l.Observed(func(ctx context.Context) {
		inv.o.meters.RecordRateLimited(ctx, name, string(path))
	})
}

// compression returns the request compression middleware that s switches
// on, nil if off.
func (inv *Transport) compression(s env.RequestCompressionSettings, name string, path env.Path) middleware.Middleware {
	if !s.On() {
		return nil
	}
	return middleware.Compress(middleware.CompressConfig{
		Codec:    s.Codec,
		MinBytes: s.MinBytes,
		OnCompressed: func(ctx context.Context, raw, sent int) {
			inv.o.meters.RecordCompressed(ctx, name, string(path), raw, sent)
		},
	})
}

// rateLimited reports whether a call failed because the schema's rate
// limit refused it, unsent. Under a canary such a call says nothing about
// either path and is not sent on the other: the limit is the schema's.
func rateLimited(err error) bool {
	return err != nil && errors.Is(err, fault.ErrRateLimited)
}
