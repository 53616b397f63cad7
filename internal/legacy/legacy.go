// Package legacy is the backend of the stack most Go gateways run today,
// kept as the default path: one http.Transport shared by every source
// schema, with Go's defaults (the environment's proxy, transparent gzip
// decompression) and an http.Client per schema that follows redirects by
// its default policy, with the gateway's headers propagated to every hop
// that stays on the first request's host. The shared transport is replaced
// every legacy.handler_lifetime, so that new connections see DNS changes.
//
// Most users reach it through transport.New; it is what runs unless
// FUSION_SOCKETS_TRANSPORT selects the sockets path.
package legacy

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/headers"
	"github.com/fusiongo/transport/internal/setting"
)

// Backend is the legacy path's backend: it shares one rotating transport
// between every source schema whose configuration has the same shared
// settings. Its zero value is not usable: call New.
type Backend struct {
	mu    sync.Mutex      // guards live, dials, and each rotator's refs and hooks
	live  []*rotator      // shared transports with at least one Transport open on them
	dials map[string]bool // the source schemas Key saw with a Dial hook (hooks.go)
}

// New returns the legacy backend.
func New() backend.Backend { return &Backend{} }

// key is what a schema's Transport is built from: the shared transport's
// settings (those of Config.Defaults that it reads, and the handler
// lifetime), which every source schema of one configuration has alike, so
// that a reload keeps or replaces the shared transport for all of them at
// once; and the schema's own SchemaOptions hooks and where they apply.
type key struct {
	shared   env.Settings
	lifetime time.Duration
	hooks    hookSpec
}

func (k *key) Equal(o backend.Key) bool {
	ok, _ := o.(*key)
	return ok != nil && k.sameShared(ok) && k.hooks == ok.hooks
}

// sameShared reports whether k and o build the same shared transport.
func (k *key) sameShared(o *key) bool {
	return k.lifetime == o.lifetime && k.shared.Equal(o.shared)
}

// sharedSettings keeps the settings the shared transport is built from
// (setting.RebuildShared); the others are the sockets path's or act per
// request.
func sharedSettings(s env.Settings) env.Settings {
	return setting.Only(s, env.PathLegacy, func(r setting.Rebuild) bool { return r == setting.RebuildShared })
}

// Key returns the shared transport's settings of s's configuration and
// s's hooks. It refuses, by name, a Dial hook on a host and port where
// another source schema of the configuration has one (hooks.go).
func (b *Backend) Key(s *backend.Schema) (backend.Key, error) {
	spec, err := hooksOf(s)
	if err != nil {
		return nil, err
	}
	if spec.dial {
		if err := b.checkDialShared(s, spec.addr); err != nil {
			return nil, err
		}
	}
	return &key{shared: sharedSettings(s.Config.EffectiveDefaults()), lifetime: setting.Bound(s.Config.EffectiveLegacy().HandlerLifetime), hooks: spec}, nil
}

// Open returns a Transport on the shared transport of k, which it builds
// if no open Transport uses one with the same shared settings, and
// registers s's hooks on it for as long as the Transport is open. It
// refuses, by name, hooks on a schema that the environment's proxy applies
// to (hooks.go).
func (b *Backend) Open(s *backend.Schema, k backend.Key) (backend.Pool, error) {
	kk := k.(*key)
	b.mu.Lock()
	defer b.mu.Unlock()
	var r *rotator
	for _, x := range b.live {
		if x.key.sameShared(kk) {
			r = x
			break
		}
	}
	var p func(*http.Request) (*url.URL, error)
	if r != nil {
		p = r.proxy
	} else {
		p = backend.ProxyFromEnvironment(s.LookupEnv)
	}
	if err := kk.hooks.checkProxy(s, p); err != nil {
		return nil, err
	}
	if r == nil {
		r = newRotator(kk, p, s.Log)
		b.live = append(b.live, r)
	}
	r.refs++
	h := &handle{b: b, r: r}
	if spec := kk.hooks; spec.addr != "" {
		h.hook = &hook{schema: s.Name, addr: spec.addr, dial: s.Options.Dial, verify: s.Options.VerifyConnection}
		r.setHooks((*r.hooks.Load()).with(h.hook))
	}
	return h, nil
}

// release ends one Transport's use of r, and takes its hook, if any, off
// r's table; the last one retires r.
func (b *Backend) release(r *rotator, hk *hook) {
	b.mu.Lock()
	r.refs--
	last := r.refs == 0
	if last {
		b.live = slices.DeleteFunc(b.live, func(x *rotator) bool { return x == r })
	} else if hk != nil {
		r.setHooks((*r.hooks.Load()).without(hk))
	}
	b.mu.Unlock()
	if last {
		r.close()
	}
}

// Front returns the schema's http.Client as a RoundTripper: it follows
// redirects (up to 10, Go's default policy), keeps no cookies, and on every
// hop that goes to the first request's host applies the header rules before
// next, the schema's pipeline. The pipeline, middleware included, runs once
// per hop; its innermost middleware (Middleware) takes the credentials off
// a hop that net/http's Client would send none to (checkRedirect).
func (b *Backend) Front(s *backend.Schema, rules headers.Rules, next http.RoundTripper) http.RoundTripper {
	// Jar nil and Timeout zero: Go's defaults.
	return clientFront{&http.Client{Transport: &propagator{rules: rules, next: next}, CheckRedirect: checkRedirect}}
}

// Middleware is withhold: on a redirect hop to where net/http's Client
// sends no credentials, it takes off those any middleware added. There is
// no decompression: the shared transport decompresses gzip itself.
func (b *Backend) Middleware(*backend.Schema) []func(http.RoundTripper) http.RoundTripper {
	return []func(http.RoundTripper) http.RoundTripper{withhold}
}

// Close retires every shared transport still open.
func (b *Backend) Close() {
	b.mu.Lock()
	live := b.live
	b.live = nil
	b.mu.Unlock()
	for _, r := range live {
		r.close()
	}
}

type clientFront struct{ c *http.Client }

func (f clientFront) RoundTrip(req *http.Request) (*http.Response, error) { return f.c.Do(req) }

// handle is one source schema's Transport on a shared rotator.
type handle struct {
	b    *Backend
	r    *rotator  // immutable
	hook *hook     // immutable: the schema's hooks registered on r; nil for none
	once sync.Once // Drain releases r once
}

func (h *handle) RoundTrip(req *http.Request) (*http.Response, error) { return h.r.RoundTrip(req) }

// Drain releases the shared transport; the last Transport on it retires it.
// Requests already sent run to their end on it.
func (h *handle) Drain() { h.once.Do(func() { h.b.release(h.r, h.hook) }) }

// Describe: a handle only sends; the shared http.Transport counts no
// connections it could report per schema.
func (h *handle) Describe() backend.Description { return backend.Description{} }

// propagator is the header propagation middleware of a schema's client and
// the first handler of its pipeline, as Go gateways' header middlewares
// are: it adds the configured gateway request headers to each request that
// passes through, by the shared rules of internal/headers, then sends it
// through the schema's pipeline.
type propagator struct {
	rules headers.Rules
	next  http.RoundTripper
}

func (p *propagator) RoundTrip(req *http.Request) (*http.Response, error) {
	if p.rules.Empty() || !sameOrigin(req) {
		return p.next.RoundTrip(req)
	}
	h, err := p.rules.Apply(req.Context(), req.Header, false)
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	if len(h) != len(req.Header) {
		// Apply cloned the headers; a RoundTripper must not modify the
		// caller's request, so send a shallow copy.
		r2 := new(http.Request)
		*r2 = *req
		r2.Header = h
		req = r2
	}
	return p.next.RoundTrip(req)
}

// sameOrigin reports whether req goes to the host of the first request of
// its redirect chain. Gateway headers are not propagated to another host,
// as http.Client drops sensitive headers on such a redirect.
func sameOrigin(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return first == req || first.URL.Host == req.URL.Host
}

// perRequest reports whether the legacy path reads key for each source
// schema (setting.RebuildNothing, setting.RebuildRoute); it reads the shared keys
// (setting.RebuildShared) from defaults only. Every other key is the sockets
// path's.
func perRequest(key string) bool {
	r := setting.Rebuilds(key, env.PathLegacy)
	return r == setting.RebuildNothing || r == setting.RebuildRoute
}

// Ignored lists the keys set in cfg that the legacy path does not read, as
// "defaults.<key>" or "source_schemas.<name>.<key>", in a stable order.
func (b *Backend) Ignored(cfg *env.Config) []string {
	var out []string
	// A key counts as set under defaults when it has a value there that
	// differs from the built-in one: Load writes some built-in values into
	// Config.Defaults, and a key derived from another (the jitter from the
	// lifetime) is not set by setting the other.
	differs := setting.Diff(env.Config{}.EffectiveDefaults(), cfg.EffectiveDefaults())
	for _, k := range setting.Diff(env.Settings{}, cfg.Defaults) {
		if slices.Contains(differs, k) && setting.Rebuilds(k, env.PathLegacy) == setting.RebuildIgnored {
			out = append(out, "defaults."+k)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.SourceSchemas)) {
		for _, k := range setting.Diff(env.Settings{}, cfg.SourceSchemas[name].Settings) {
			if !perRequest(k) {
				out = append(out, "source_schemas."+name+"."+k)
			}
		}
	}
	return out
}
