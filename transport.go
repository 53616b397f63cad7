// Package transport sends a GraphQL gateway's requests to its source schemas
// (subgraphs). Every call goes through one request path (header rules,
// bounds, middleware, reload) to one of two paths, chosen per schema at
// startup:
//
//   - legacy: one shared http.Transport with an http.Client per source
//     schema: header propagation, redirect following, transparent
//     decompression and the environment's proxy, as most Go gateways run
//     today;
//   - sockets: one owned connection pool per source schema with
//     reverse-proxy defaults (no cookies, no redirects, no decompression, no
//     environment proxy, pooled connections closed after a lifetime),
//     speaking HTTP/1.1 with one of two engines: h1 (its own) or nethttp
//     (net/http's connections, also for HTTP/2).
//
// New returns a *Transport, which implements Invoker (Do, Post, Reload,
// Close) and gives gateways that take an *http.Client one that routes by
// URL (Client, RoundTripper). FUSION_SOCKETS_TRANSPORT=1 selects the
// sockets path at startup; see package env for the configuration and
// docs/design.md for the request path, the paths, the engines and the
// reload contract.
//
// Every error value and type of every path is package fault's
// (errors.Is(err, fault.ErrCircuitOpen), errors.As(err,
// new(*fault.HeaderTimeoutError))). A program that wants one path alone,
// without the request path, has its public face: package sockets (an
// owned transport for one source schema, an http.RoundTripper) and
// package legacy (the shared client).
package transport

import (
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/canaryjudge"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/headers"
	"github.com/fusiongo/transport/internal/hedging"
	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/respcache"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/internal/sharekey"
	"github.com/fusiongo/transport/middleware"
	"github.com/fusiongo/transport/shadow"
)

// Transport is the Invoker that New returns: the one request path of every
// source schema, whichever path the startup switch gave it (switch.go).
// Legacy, sockets, mixed (a per-schema choice of path), shadow (each schema
// served by legacy and compared with sockets) and canary (a share of each
// schema's gateway requests served by sockets, judged against legacy)
// differ only in which path each schema's route uses. Beside the Invoker
// methods it has the gateway-facing forms of the same request path:
// Client, RoundTripper, CanaryHandler and StatusHandler. It is safe for concurrent use;
// its zero value is not usable: build one with New.
type Transport struct {
	o         options                      // immutable after New
	log       *slog.Logger                 // immutable
	path      env.Path                     // immutable: the path chosen at startup
	onSockets map[string]bool              // immutable: PathMixed's schemas on sockets
	backends  map[env.Path]backend.Backend // immutable set after New (switch.go); their methods run under mu
	shadow    *shadow.Shadow               // immutable; nil unless shadowing
	canary    *canaryRouter                // immutable; nil unless canary (canary.go)
	rollout   *rollout                     // immutable; nil without WithRollout (rollout.go)
	unobserve []func() error               // set in New; called in Close under mu

	recent recentEvents // the latest canary and resilience events, for the status page (status_events.go)

	upgrades upgradeSet // the connections handed over after a 101; safe for concurrent use (upgrade.go)

	hashes *middleware.QueryHashes // immutable: the query texts' hashes of every schema's persisted queries, kept across reloads; safe for concurrent use (persisted.go)

	mu    sync.Mutex            // serialises Reload and Close
	state atomic.Pointer[state] // the configuration in force; stored under mu, nil after Close
}

// state is one configuration in force. It is never modified once stored:
// Reload builds a new one and swaps it in.
type state struct {
	schemas map[string]*entry

	invalidationToken string // response_cache.invalidation_token; "": CacheInvalidationHandler refuses all

	// redis is the transport's Redis client for this configuration, made
	// from redisSettings (cache.go); nil without redis.url. A reload with
	// equal settings keeps it.
	redis         *redisclient.Client
	redisSettings env.RedisSettings
	hub           *respcache.Hub // redis's invalidation channel, for the memory levels in front of it
}

// entry is one source schema in one state.
type entry struct {
	primary   *route // answers the caller
	candidate *route // shadow and canary: the sockets route; nil otherwise

	judge *canaryjudge.Schema // canary: the schema's canary state; nil otherwise

	limit rateLimit // the schema's rate limit, shared by its routes (shaping.go)

	cache schemaCache // the schema's response cache, shared by its routes (cache.go)

	// apq is the schema's automatic persisted queries, shared by its
	// routes, made anew by every build (persisted.go); nil: off.
	apq *middleware.PersistedQueries
	// With WithRollout (rollout.go): byPath is the serving route on
	// legacy and on sockets (pathIndex), among primary, a canary's
	// candidate and alt; alt is the serving route that only the rollout
	// uses, on the path the startup switch gave the schema no serving
	// route on; share counts the schema's calls per path, kept by a
	// reload. All nil without the option.
	byPath [2]*route
	alt    *route
	share  *shareWindow
}

// route is one source schema on one path in one configuration: every
// field is set by build and immutable after.
type route struct {
	inv            *Transport
	name           string
	path           env.Path // the path the route sends on
	engine         string   // the engine serving it (its pool's Description); empty on legacy
	candidate      bool     // the shadow candidate, not the serving route
	alt            bool     // entry.alt: the serving route only the runtime rollout uses
	url            *url.URL
	target         string        // scheme://host:port, lower case, for Do on a bound backend
	postTemplate   *http.Request // template of Post's requests: method, URL, Host
	rules          headers.Rules
	headerTimeout  time.Duration
	requestTimeout time.Duration
	key            backend.Key
	pool           backend.Pool
	entry          http.RoundTripper            // what Do and Post call: the backend's front, or the pipeline
	front          bool                         // the backend has a front: it applies the rules, any target goes
	desc           backend.Description          // what the pool said of itself (Describe) when the route was built
	timed          backend.HeaderTimer          // non-nil: the pool bounds the header wait itself
	anyBody        bool                         // the pool writes Post's body in one write as it is (Description.WritesAnyBody)
	compressMin    int                          // request_compression.min_bytes when compression is on; 0: off
	res            resilience                   // breaker, retry budget, hedge samples, rate limiter (resilience.go)
	cache          *respcache.Cache             // the schema's response cache; nil: none (cache.go)
	apq            *middleware.PersistedQueries // the schema's persisted queries; nil: off (persisted.go)
	// lends: PostFunc pools its calls on this route (lentCall): the
	// pool writes the whole request before RoundTrip returns (h1),
	// the request path arms no header timer of its own (the request
	// bound arms nothing unless a call waits on it, and such a call is not
	// pooled again: bound.Guard.Reusable), and no middleware can hold the
	// request or the response once the pipeline has returned (no
	// telemetry, request log, user, attempt or backend middleware; a hedge
	// that is sent spoils the call's Borrow; dedupe sends the first
	// caller's request on the caller's goroutine and holds no other, and a
	// response it shares is copied and its pooled memory forgotten,
	// backend.Borrow.Forget).
	lends bool
}

// New builds the path that cfg selects (cfg.Path(), and shadow when
// cfg.Shadow.Rate is positive). It fails if cfg is invalid (see
// env.Config.Validate) or a transport cannot be built; the error names the
// source schema and key.
func New(cfg env.Config, opts ...Option) (*Transport, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := unusedSchemaHooks(o.schemas); err != nil {
		return nil, err
	}
	if err := checkRollout(&o); err != nil {
		return nil, err
	}
	if o.lookupEnv == nil {
		o.lookupEnv = os.LookupEnv
	}
	inv := &Transport{o: o, log: o.logger, hashes: middleware.NewQueryHashes(0)}
	if inv.log == nil {
		inv.log = slog.Default()
	}
	inv.rollout = newRollout(inv)
	inv.warnUnknownSchemaOptions(&cfg)
	shadowed := inv.choosePaths(&cfg)
	if shadowed {
		sh := cfg.EffectiveShadow()
		pub := o.shadowPublisher
		if pub == nil {
			pub = shadow.LogPublisher{Logger: inv.log}
		}
		if counters := o.meters.ShadowPublisher(); counters != nil {
			pub = shadow.Multi{pub, counters} // WithTelemetry's shadow counters
		}
		inv.shadow = shadow.New(role{inv, false}, role{inv, true}, shadow.Options{
			Rate:          sh.Rate,
			MaxConcurrent: sh.MaxConcurrent,
			MaxBodyBytes:  sh.MaxBodyBytes,
			Timeout:       sh.Timeout,
			Comparer:      o.shadowComparer,
			Publisher:     pub,
		})
	}
	st, fresh, err := inv.build(&cfg, nil)
	if err != nil {
		drainAll(fresh)
		inv.closeBackends()
		return nil, err
	}
	inv.canary.attach(st)
	inv.state.Store(st)
	inv.rollout.start(st)
	for _, p := range slices.Sorted(maps.Keys(inv.backends)) {
		unobserve, err := o.meters.ObserveConnections(string(p), inv.connections(p))
		if err != nil {
			inv.Close()
			return nil, err
		}
		inv.unobserve = append(inv.unobserve, unobserve)
		unobserve, err = o.meters.ObserveAddresses(string(p), inv.addresses(p))
		if err != nil {
			inv.Close()
			return nil, err
		}
		inv.unobserve = append(inv.unobserve, unobserve)
	}
	inv.logIgnored(&cfg)
	return inv, nil
}

// build makes the state for cfg, keeping old's transports whose keys are
// equal. It returns the transports it opened, for the caller to drain if
// the state is not used. An error names the source schema and key.
func (inv *Transport) build(cfg *env.Config, old *state) (st *state, fresh []backend.Pool, err error) {
	st = &state{schemas: make(map[string]*entry, len(cfg.SourceSchemas)), invalidationToken: cfg.ResponseCache.InvalidationToken}
	var caches []*respcache.Cache
	var redis *redisclient.Client // made for st, not old's
	building := st                // st is nil by the time a failed build's defer runs
	defer func() {
		if err != nil {
			for _, c := range caches {
				c.Close()
			}
			if redis != nil {
				closeRedis(redis, building.hub)
			}
		}
	}()
	if redis, err = inv.redisFor(cfg, old, st); err != nil {
		return nil, nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.SourceSchemas)) {
		var prev *entry
		if old != nil {
			prev = old.schemas[name]
		}
		primary, candidate := inv.assign(name)
		e := &entry{}
		settings, _ := cfg.Effective(name)
		if e.limit, err = inv.limitOf(st, name, settings.RateLimit, prev); err != nil { // shaping.go
			return nil, fresh, err
		}
		e.apq = inv.persistedOf(name, settings.PersistedQueries) // persisted.go
		if e.cache, err = inv.cacheOf(st, name, settings, cfg.SourceSchemas[name].URL, prev, &caches); err != nil {
			return nil, fresh, err
		}
		var opened backend.Pool
		e.primary, opened, err = inv.buildRoute(cfg, name, primary, false, prev.route(false), e)
		if opened != nil {
			fresh = append(fresh, opened)
		}
		if err == nil && candidate != "" {
			shared := e
			if inv.shadow != nil {
				// A shadow candidate's requests are the shadow's copies,
				// bounded by shadow.rate: they take no turn of the limit
				// that protects the schema from callers, and are really
				// sent, never answered from the cache.
				shared = &entry{apq: e.apq}
			}
			e.candidate, opened, err = inv.buildRoute(cfg, name, candidate, true, prev.route(true), shared)
			if opened != nil {
				fresh = append(fresh, opened)
			}
		}
		if err == nil && inv.rollout != nil {
			opened, err = inv.servingRoutes(cfg, e, prev)
			if opened != nil {
				fresh = append(fresh, opened)
			}
		}
		if err != nil {
			return nil, fresh, err
		}
		st.schemas[name] = e
	}
	return st, fresh, nil
}

// routes returns e's routes: the serving one, and the candidate and alt
// when it has them.
func (e *entry) routes() []*route {
	rs := make([]*route, 0, 3)
	for _, r := range []*route{e.primary, e.candidate, e.alt} {
		if r != nil {
			rs = append(rs, r)
		}
	}
	return rs
}

func (e *entry) route(candidate bool) *route {
	switch {
	case e == nil:
		return nil
	case candidate:
		return e.candidate
	}
	return e.primary
}

// buildRoute builds the route of source schema name on path, keeping
// prev's pool if it is on the same path with an equal key. shared holds
// what the route shares with the schema's other route: its rate limiter,
// response cache and persisted queries, nil for none. opened is the pool
// it opened, if any.
func (inv *Transport) buildRoute(cfg *env.Config, name string, path env.Path, candidate bool, prev *route, shared *entry) (r *route, opened backend.Pool, err error) {
	be := inv.backends[path]
	sc := cfg.SourceSchemas[name]
	settings, _ := cfg.Effective(name)
	// redact.Parse: url.Parse's error quotes the URL, password and all.
	u, err := redact.Parse(sc.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("source_schemas.%s.url: %w", name, err)
	}
	so := inv.o.schemas[name]
	hooks := backend.SchemaOptions{Dial: so.Dial, VerifyConnection: so.VerifyConnection}
	s := &backend.Schema{Name: name, URL: u, Settings: forBackend(settings), Config: cfg, Options: hooks, LookupEnv: inv.o.lookupEnv, Log: inv.log,
		Resolver: inv.o.resolver, OnAddress: inv.addressChanged(name, path), OnQueue: inv.o.queueHook}
	rules, err := headers.New(headers.Spec{
		Forward:  slices.Concat(cfg.ForwardHeaders, sc.ForwardHeaders, settings.Headers.Forward),
		Matching: settings.Headers.ForwardMatching,
		Rename:   settings.Headers.Rename,
		Set:      settings.Headers.Set,
		Values:   headerValues(so.HeaderValues),
		MaxBytes: setting.Limit(settings.Headers.MaxForwardedBytes),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("source_schemas.%s.headers: %w", name, err)
	}
	r = &route{
		inv:            inv,
		name:           name,
		path:           path,
		candidate:      candidate,
		url:            u,
		target:         u.Scheme + "://" + backend.HostPort(u),
		postTemplate:   gqlhttp.Template(u),
		rules:          rules,
		headerTimeout:  setting.Bound(settings.HeaderTimeout),
		requestTimeout: setting.Bound(settings.RequestTimeout),
	}
	if opened, err = inv.attachPool(r, s, be, so.RoundTripper, prev); err != nil {
		return nil, nil, err
	}
	r.res = inv.resilienceOf(r, settings, prev)
	r.res.limiter = shared.limit.limiter
	r.cache = shared.cache.cache
	r.apq = shared.apq
	if c := settings.RequestCompression; c.On() {
		r.compressMin = max(c.MinBytes, 1)
	}
	inv.assemble(r, s, be, so, settings, rules)
	return r, opened, nil
}

// attachPool gives r its pool: the caller's RoundTripper hook,
// prev's when it is on the same path with an equal key, or one that be
// opens (returned as opened, for the caller to drain if the build fails).
func (inv *Transport) attachPool(r *route, s *backend.Schema, be backend.Backend, hook http.RoundTripper, prev *route) (opened backend.Pool, err error) {
	if hook != nil {
		// A pointer: the request path keys maps by Pool, and the
		// caller's RoundTripper may be of a type that cannot be a key.
		r.key, r.pool = hookKey{}, &hookPool{hook}
		if prev != nil && prev.key.Equal(hookKey{}) {
			r.pool = prev.pool
		}
	} else {
		if r.key, err = be.Key(s); err != nil {
			return nil, err
		}
		if prev != nil && prev.path == r.path && prev.key.Equal(r.key) {
			r.pool = prev.pool
		} else {
			if opened, err = be.Open(s, r.key); err != nil {
				return nil, err
			}
			r.pool = opened
		}
	}
	r.desc = r.pool.Describe()
	r.engine = r.desc.Engine
	r.anyBody = r.desc.WritesAnyBody
	if ht := r.desc.Timed; ht != nil && ht.TimesHeaders(s) && r.headerTimeout > 0 {
		r.timed = ht
	}
	return opened, nil
}

// assemble stacks r's pipeline by stage (pipeline.go) in front of its
// pool and sets r.entry, and r.front when the backend puts its own
// front (legacy's http.Client) before it.
func (inv *Transport) assemble(r *route, s *backend.Schema, be backend.Backend, so SchemaOptions, settings env.Settings, rules headers.Rules) {
	name, path := r.name, r.path
	var l layers
	if inv.o.telemetry != nil {
		l.add(stageTelemetry, inv.o.telemetry.Middleware(name, string(path)))
	}
	if inv.o.requestLog != nil {
		l.add(stageRequestLog, middleware.RequestLog(inv.o.requestLog, name))
	}
	l.add(stageMiddleware, inv.o.middleware...)
	l.add(stageSchemaMiddleware, so.Middleware...)
	inv.builtins(&l, r, settings, so)
	l.add(stageAttemptMiddleware, so.AttemptMiddleware...)
	l.add(stageBackendMiddleware, be.Middleware(s)...)
	// What sits inside the hedge lets go of an attempt's request and
	// context once its RoundTrip returned and its body is closed when the
	// transport writes the whole request before RoundTrip returns and no
	// middleware of the user's or the backend's is there: the hedge then
	// pools its queries' memory, and lends it with a PostFunc call's.
	if r.anyBody && l.empty(stageAttemptMiddleware, stageBackendMiddleware) {
		for i, mw := range l[stageHedge] {
			l[stageHedge][i] = func(next http.RoundTripper) http.RoundTripper { return hedging.Reuse(mw(next)) }
		}
	}
	// Retry, the breaker, compression, persisted queries, the rate limit
	// and dedupe let go of the request and the response when they return,
	// and so does the hedge whose query sent no hedge (a hedge sent spoils
	// the call's Borrow); the other stages may not.
	r.lends = r.anyBody && r.guardHeaderTimeout() == 0 &&
		l.empty(stageTelemetry, stageRequestLog, stageMiddleware, stageSchemaMiddleware, stageAttemptMiddleware, stageBackendMiddleware)
	pipeline := l.chain(sender{r})
	r.entry = pipeline
	if f := be.Front(s, rules, pipeline); f != nil {
		r.entry, r.front = f, true
	}
}

// forBackend returns settings as a backend gets them: without the keys
// the request path itself acts on for every path (setting.RebuildRoute: the
// circuit breaker, the retry budget, hedging, resilience.go; request
// compression and the rate limit, shaping.go), so that changing one of them
// never makes a backend build a new transport.
func forBackend(settings env.Settings) env.Settings {
	return setting.Only(settings, env.PathSockets, func(r setting.Rebuild) bool { return r != setting.RebuildRoute })
}

// headerValues converts SchemaOptions.HeaderValues for package headers.
func headerValues(m map[string]HeaderValueFunc) map[string]headers.ValueFunc {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]headers.ValueFunc, len(m))
	for name, f := range m {
		out[name] = f
	}
	return out
}

// hookKey is the key of a SchemaOptions.RoundTripper: it is fixed for the
// invoker's life, so a reload always keeps it.
type hookKey struct{}

func (hookKey) Equal(o backend.Key) bool { _, ok := o.(hookKey); return ok }

// hookPool is a SchemaOptions.RoundTripper as a Pool: the caller
// owns it, so draining does nothing.
type hookPool struct{ http.RoundTripper }

func (*hookPool) Drain() {}

// Describe: the request path knows nothing of the caller's RoundTripper.
func (*hookPool) Describe() backend.Description { return backend.Description{} }

// builtins adds to l the built-in middleware that settings switch on, each
// at its stage (see stage for the order, docs/design.md "Pipeline" for
// why): dedupe (identical in-flight queries share one request; its key
// holds every header of the request as it would be sent, the rules', the
// caller's and, through a probe, those so.AttemptMiddleware adds, so two
// users never share an answer), compression (once per call, so that every
// attempt resends the same bytes), retry and hedge (each attempt goes on
// through the rest of the pipeline and is paid from the retry budget), the
// circuit breaker, which every attempt and hedge passes (resilience.go),
// and the rate limit, where every attempt and hedge the breaker let
// through takes a turn (shaping.go).
func (inv *Transport) builtins(l *layers, r *route, settings env.Settings, so SchemaOptions) {
	res, name, path := r.res, r.name, r.path
	if r.cache != nil {
		// Keyed like dedupe, on the request as it would be sent.
		l.add(stageCache, respcache.Stage(r.cache, sharekey.NewProbe(so.AttemptMiddleware), inv.o.dedupeJoined))
	}
	if settings.Dedupe.On() {
		// The attempt middleware runs inside dedupe and may add what tells
		// callers apart (middleware.Token): the key is taken on the
		// request as it would send it.
		probe := sharekey.NewProbe(so.AttemptMiddleware)
		l.add(stageDedupe, sharekey.Dedupe(sharekey.DedupeOptions{Probe: probe, Joined: inv.o.dedupeJoined}))
	}
	if r.apq != nil {
		// Inside the cache and dedupe, which key the call by its text,
		// and outside compression, which compresses what is sent.
		l.add(stagePersistedQueries, r.apq.Middleware())
	}
	l.add(stageCompress, inv.compression(settings.RequestCompression, name, path))
	retry, hedge, breaker := inv.resilient(res, settings, name, path)
	l.add(stageRetry, retry)
	l.add(stageHedge, hedge)
	l.add(stageBreaker, breaker)
	l.add(stageRateLimit, inv.limited(res.limiter, name, path))
}

// rejected wraps the reason a reload was refused.
func rejected(err error) error {
	return fmt.Errorf("reload rejected, old configuration kept: %w", err)
}

// Reload applies cfg as one swap; see Invoker.Reload.
func (inv *Transport) Reload(cfg env.Config) error {
	if err := cfg.Validate(); err != nil {
		return rejected(err)
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	old := inv.state.Load()
	if old == nil {
		return fault.ErrClosed
	}
	if err := inv.switchKept(&cfg); err != nil {
		return rejected(err)
	}
	st, fresh, err := inv.build(&cfg, old)
	if err != nil {
		drainAll(fresh)
		return rejected(err)
	}
	inv.canary.attach(st)
	inv.state.Store(st)
	inv.rollout.setSchemas(st)
	inv.warnUnknownSchemaOptions(&cfg)
	kept, replaced, removed := retire(old, st)
	closeCaches(old, st)
	if old.redis != nil && old.redis != st.redis {
		closeRedis(old.redis, old.hub) // its caches are closed: nothing uses it
	}
	inv.o.meters.RecordReload(kept, replaced, removed)
	inv.log.Info("transport reloaded", "path", string(inv.path), "kept", kept, "replaced", replaced, "removed", removed, "added", len(st.schemas)-kept-replaced)
	return nil
}

// retire drains the transports of old that st does not use, and counts
// what happened to each source schema's serving transport.
func retire(old, st *state) (kept, replaced, removed int) {
	inUse := map[backend.Pool]bool{}
	for _, e := range st.schemas {
		for _, r := range e.routes() {
			inUse[r.pool] = true
		}
	}
	for name, e := range old.schemas {
		switch n, ok := st.schemas[name]; {
		case !ok:
			removed++
		case n.primary.pool == e.primary.pool:
			kept++
		default:
			replaced++
		}
		for _, r := range e.routes() {
			if !inUse[r.pool] {
				r.pool.Drain()
				inUse[r.pool] = true // drained once
			}
		}
	}
	return kept, replaced, removed
}

func drainAll(ts []backend.Pool) {
	for _, t := range ts {
		t.Drain()
	}
}

// Close waits for the shadow comparisons in flight, then drains every
// transport: idle connections close at once, the others when their
// requests end. Requests after Close fail with fault.ErrClosed.
func (inv *Transport) Close() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.state.Load() == nil {
		return nil
	}
	if inv.shadow != nil {
		inv.shadow.Close()
	}
	inv.rollout.close()
	st := inv.state.Swap(nil)
	var errs []error
	for _, u := range inv.unobserve {
		errs = append(errs, u())
	}
	retire(st, &state{})
	closeCaches(st, &state{})
	closeRedis(st.redis, st.hub)
	inv.upgrades.closeAll()
	inv.closeBackends()
	return errors.Join(errs...)
}

func (inv *Transport) closeBackends() {
	for _, be := range inv.backends {
		be.Close()
	}
}

// routesOn yields the routes of the current state served on path, each
// schema's serving route and candidate, for the telemetry callbacks.
func (inv *Transport) routesOn(path env.Path) iter.Seq2[string, *route] {
	return func(yield func(string, *route) bool) {
		st := inv.state.Load()
		if st == nil {
			return
		}
		for name, e := range st.schemas {
			for _, r := range e.routes() {
				if r.path == path && !yield(name, r) {
					return
				}
			}
		}
	}
}

// connections reports the open and idle connections of each source schema
// served on path, for the telemetry gauges.
func (inv *Transport) connections(path env.Path) func(yield func(schema string, open, idle int)) {
	return func(yield func(schema string, open, idle int)) {
		for name, r := range inv.routesOn(path) {
			if conns := r.desc.Conns; conns != nil {
				open, idle := conns()
				yield(name, open, idle)
			}
		}
	}
}

// addresses reports the addresses of each source schema served on path
// whose transport knows them, for the telemetry gauges.
func (inv *Transport) addresses(path env.Path) func(yield func(schema string, addrs []meters.Address)) {
	return func(yield func(schema string, addrs []meters.Address)) {
		for name, r := range inv.routesOn(path) {
			if addrs := r.desc.Addresses; addrs != nil {
				if stats := addrs(); len(stats) > 0 {
					yield(name, telemetryAddresses(stats))
				}
			}
		}
	}
}

func telemetryAddresses(stats []backend.AddressStats) []meters.Address {
	out := make([]meters.Address, len(stats))
	for i, a := range stats {
		out[i] = meters.Address{Address: a.Address.String(), Conns: a.Conns, InFlight: a.InFlight, Ejected: a.Ejected, Gone: a.Gone}
	}
	return out
}

// logIgnored logs once, at startup, the keys set in cfg that a path does
// not read for the source schemas it serves.
func (inv *Transport) logIgnored(cfg *env.Config) {
	for _, p := range slices.Sorted(maps.Keys(inv.backends)) {
		sub := *cfg
		sub.SourceSchemas = map[string]env.SourceSchema{}
		for name, sc := range cfg.SourceSchemas {
			if primary, candidate := inv.assign(name); primary == p || candidate == p || inv.rollout != nil {
				sub.SourceSchemas[name] = sc
			}
		}
		if keys := inv.backends[p].Ignored(&sub); len(keys) > 0 {
			inv.log.Info("these settings are set but the "+string(p)+" path does not read them", "path", string(p), "keys", keys)
		}
	}
}
