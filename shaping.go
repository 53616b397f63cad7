package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/fleetlimit"
	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/middleware"
)

// rateLimit is a source schema's rate limiter with the settings it was
// made from. One per schema, shared by its serving route and a canary's
// candidate, so that the limit bounds what the schema gets from this
// gateway replica (with the redis store, from the fleet) whichever path
// sends it; a reload with equal settings keeps it, and with it the tokens
// spent, unless its store is redis and the Redis client changed. Immutable
// once built.
type rateLimit struct {
	limiter  *middleware.RateLimiter // nil: no limit
	settings env.RateLimitSettings
	fleet    *fleetlimit.Limit   // the redis store's shared limit; nil on the local store
	redis    *redisclient.Client // the client fleet is on; nil on the local store
	limited  *atomic.Int64       // the calls the limiter refused, for the status page; nil without a limit
}

// limitOf returns the rate limit of source schema name under s, prev's if
// its settings are equal and, on the redis store, st's Redis client is
// prev's.
func (inv *Transport) limitOf(st *state, name string, s env.RateLimitSettings, prev *entry) (rateLimit, error) {
	if !s.On() {
		return rateLimit{}, nil
	}
	s.Burst = s.EffectiveBurst()
	remote := s.Store == env.StoreRedis
	if prev != nil && prev.limit.limiter != nil && prev.limit.settings == s && (!remote || prev.limit.redis == st.redis) {
		return prev.limit, nil
	}
	rl := rateLimit{settings: s, limited: new(atomic.Int64)}
	cfg := middleware.RateLimitConfig{
		Schema:            name,
		RequestsPerSecond: s.RequestsPerSecond,
		Burst:             s.Burst,
		Wait:              setting.Bound(s.Wait),
		OnLimited:         func(context.Context) { rl.limited.Add(1) },
	}
	if remote {
		if st.redis == nil {
			// Validate refuses it; a Config built by hand may still say so.
			return rateLimit{}, fmt.Errorf("source_schemas.%s.rate_limit.store: redis needs redis.url", name)
		}
		rl.redis = st.redis
		rl.fleet = fleetlimit.New(fleetlimit.Config{
			Schema:            name,
			Client:            st.redis,
			RequestsPerSecond: s.RequestsPerSecond,
			Burst:             s.Burst,
			Timeout:           s.StoreTimeout,
			OnStoreError:      s.OnStoreError,
			Log:               inv.log,
			Observe:           func(ctx context.Context, ev fleetlimit.Event) { inv.limitEvent(ctx, name, ev) },
		})
		cfg.Shared, cfg.OnStoreError, cfg.LocalShare = rl.fleet, s.OnStoreError, s.LocalShare
	}
	rl.limiter = middleware.NewRateLimiter(cfg)
	return rl, nil
}

// limitEvent records an event of source schema name's shared limit in
// the telemetry.
func (inv *Transport) limitEvent(ctx context.Context, name string, ev fleetlimit.Event) {
	switch ev {
	case fleetlimit.StoreError:
		inv.o.meters.RecordRateLimitStoreError(ctx, name)
	case fleetlimit.FellBack:
		inv.o.meters.RecordRateLimitFallback(ctx, name)
	case fleetlimit.Returned:
		inv.o.meters.RecordRateLimitReturn(ctx, name)
	}
	if inv.o.limitHook != nil {
		inv.o.limitHook(name, ev)
	}
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
