package transport

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/respcache"
	"github.com/fusiongo/transport/internal/setting"
)

// schemaCache is a source schema's response cache with what it was built
// from: a reload whose cache settings, URL and store are equal keeps it,
// entries and all. One per schema, shared by its serving route and a
// canary's candidate. Immutable once built.
type schemaCache struct {
	cache    *respcache.Cache // nil: no cache
	settings env.ResponseCacheSettings
	url      string
	redis    *redisclient.Client // the client a redis store is on; nil for memory
}

// cacheOf returns the response cache of source schema name under s, at
// url: prev's if its settings and URL are equal, else a new one (added to
// *fresh, for the caller to close if the state is not used).
func (inv *Transport) cacheOf(st *state, name string, settings env.Settings, url string, prev *entry, fresh *[]*respcache.Cache) (schemaCache, error) {
	s := settings.ResponseCache
	if !s.On() {
		return schemaCache{}, nil
	}
	remote := s.Store == env.StoreRedis
	if prev != nil && prev.cache.cache != nil && prev.cache.url == url && equalCacheSettings(prev.cache.settings, s) &&
		(!remote || prev.cache.redis == st.redis) {
		return prev.cache, nil
	}
	var store respcache.Store
	switch {
	case remote && st.redis == nil:
		// Validate refuses it; a Config built by hand may still say so.
		return schemaCache{}, fmt.Errorf("source_schemas.%s.response_cache.store: redis needs redis.url", name)
	case remote && s.LocalMaxBytes > 0:
		clock := inv.o.cacheClock
		if clock == nil {
			clock = time.Now
		}
		store = respcache.NewLayered(respcache.NewMemory(s.LocalMaxBytes).(*respcache.Memory), respcache.NewRedis(st.redis, name).(*respcache.Redis),
			st.hub, name, s.LocalTTL, clock)
	case remote:
		store = respcache.NewRedis(st.redis, name)
	default:
		store = respcache.NewMemory(s.MaxBytes)
	}
	c := respcache.New(respcache.Config{
		Schema:  name,
		Store:   store,
		Policy:  policyOf(s),
		Shadow:  s.Mode == env.CacheModeShadow,
		Remote:  remote,
		Observe: inv.cacheEvent,
		Log:     inv.log,
		Now:     inv.o.cacheClock,
		// A background refresh is bounded as a call without a deadline
		// would be: by request_timeout, else header_timeout.
		RefreshTimeout: refreshTimeout(settings),
	})
	*fresh = append(*fresh, c)
	sc := schemaCache{cache: c, settings: s, url: url}
	if remote {
		sc.redis = st.redis
	}
	return sc, nil
}

// redisFor sets st's Redis client for cfg: old's if its settings are
// equal, else a new one (returned as made, for the caller to close if the
// state is not used); none without redis.url. The client does not dial
// until a cache asks it something.
func (inv *Transport) redisFor(cfg *env.Config, old *state, st *state) (made *redisclient.Client, err error) {
	if cfg.Redis.URL == "" {
		return nil, nil
	}
	st.redisSettings = cfg.EffectiveRedis()
	if old != nil && old.redis != nil && old.redisSettings == st.redisSettings {
		st.redis, st.hub = old.redis, old.hub
		return nil, nil
	}
	if st.redis, err = redisclient.NewWithBreaker(st.redisSettings, inv.log, redisclient.Breaker{Pause: inv.o.redisPause}); err != nil {
		return nil, err
	}
	st.hub = respcache.NewHub(st.redis, inv.peerInvalidation)
	return st.redis, nil
}

// refreshTimeout bounds a background refresh under settings: its
// request_timeout, else its header_timeout, else 100s.
func refreshTimeout(settings env.Settings) time.Duration {
	if d := setting.Bound(settings.RequestTimeout); d > 0 {
		return d
	}
	if d := setting.Bound(settings.HeaderTimeout); d > 0 {
		return d
	}
	return env.DefaultHeaderTimeout
}

// policyOf is the cache policy of settings s.
func policyOf(s env.ResponseCacheSettings) respcache.Policy {
	p := respcache.Policy{
		MaxEntryBytes: s.MaxEntryBytes,
		MaxTTL:        s.MaxTTL,
		Shared:        s.Shared.On(),
	}
	if s.DefaultTTL > 0 {
		p.DefaultTTL = s.DefaultTTL
	}
	if s.StaleIfError > 0 {
		p.StaleIfError = s.StaleIfError
	}
	for _, name := range s.Vary {
		p.Vary = append(p.Vary, http.CanonicalHeaderKey(name))
	}
	slices.Sort(p.Vary)
	p.Vary = slices.Compact(p.Vary)
	return p
}

func equalCacheSettings(a, b env.ResponseCacheSettings) bool {
	return a.Enabled == b.Enabled && a.Mode == b.Mode && a.Store == b.Store && a.MaxBytes == b.MaxBytes && a.MaxEntryBytes == b.MaxEntryBytes &&
		a.DefaultTTL == b.DefaultTTL && a.MaxTTL == b.MaxTTL && a.StaleIfError == b.StaleIfError &&
		a.LocalMaxBytes == b.LocalMaxBytes && a.LocalTTL == b.LocalTTL && a.Shared == b.Shared && slices.Equal(a.Vary, b.Vary)
}

// cacheEvent records a cache event in the telemetry.
func (inv *Transport) cacheEvent(ctx context.Context, schema string, ev respcache.Event) {
	inv.o.meters.RecordCache(ctx, schema, ev.Kind.String(), ev.Reason)
	if inv.o.cacheHook != nil {
		inv.o.cacheHook(schema, ev.Kind.String(), ev.Reason)
	}
	if ev.Kind == respcache.StoreError && ev.Err != nil {
		inv.log.Debug("response cache store error", "source_schema", schema, "op", ev.Reason, "error", ev.Err)
	}
}

// peerInvalidation is the hub's onPeer: the invalidation of schema that a
// replica published (this one's too) reached this replica's memory levels.
func (inv *Transport) peerInvalidation(schema string) {
	if inv.o.cacheHook != nil {
		inv.o.cacheHook(schema, "peer_invalidation", "")
	}
}

// closeRedis closes a configuration's Redis client and its hub.
func closeRedis(c *redisclient.Client, hub *respcache.Hub) {
	if hub != nil {
		hub.Close()
	}
	if c != nil {
		c.Close()
	}
}

// closeCaches closes the caches of old that st does not keep.
func closeCaches(old, st *state) {
	if old == nil {
		return
	}
	for name, e := range old.schemas {
		if e.cache.cache == nil {
			continue
		}
		if n, ok := st.schemas[name]; ok && n.cache.cache == e.cache.cache {
			continue
		}
		e.cache.cache.Close()
	}
}

// InvalidateCache removes source schema name's cached answers: every one,
// or, with tags, those tagged with any of them (an answer's Cache-Tag and
// Surrogate-Key headers and its extensions.apolloCacheTags). On a Redis
// store it removes every replica's entries; on the memory store, this
// replica's. It returns how many it removed. An answer whose request began
// before the invalidation is never stored after it. A schema without a
// cache fails with an error that names it.
func (inv *Transport) InvalidateCache(ctx context.Context, name string, tags ...string) (int, error) {
	e, err := inv.entryOf(name)
	if err != nil {
		return 0, err
	}
	if e.cache.cache == nil {
		return 0, fmt.Errorf("source schema %q: %w", name, fault.ErrNoCache)
	}
	n, err := e.cache.cache.Invalidate(ctx, tags)
	if err != nil {
		return n, fmt.Errorf("source schema %q: invalidating the response cache: %w", name, err)
	}
	return n, nil
}
