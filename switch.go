package transport

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/legacy"
	isockets "github.com/fusiongo/transport/internal/sockets"
)

// The startup switch: which path each source schema takes. New reads it
// once from the configuration (FUSION_SOCKETS_TRANSPORT, see env.ParseSwitch,
// and the shadow and canary rates); Reload never changes it, so a schema's
// path is fixed for the Transport's life. Every route that build makes asks
// assign which backend serves it. With WithRollout a flag decides per
// gateway request instead, falling back to this switch (rollout.go), and
// each schema also has a serving route on the other path (servingRoutes).

// paths maps a path to the constructor of its backend. A new path is a
// folder under internal/ whose type implements backend.Backend, and one
// line here.
var paths = map[env.Path]func() backend.Backend{
	env.PathLegacy:  legacy.New,
	env.PathSockets: isockets.New,
}

// choosePaths sets the switch of a new Transport from cfg: the path it
// runs, the schemas that mixed puts on sockets, the canary router, and the
// backends they need. It reports whether legacy runs with a shadow
// candidate.
func (inv *Transport) choosePaths(cfg *env.Config) (shadowed bool) {
	inv.path = cfg.EffectivePath()
	inv.backends = map[env.Path]backend.Backend{}
	shadowed = inv.path == env.PathLegacy && cfg.Shadow.Rate > 0
	if inv.path == env.PathMixed {
		inv.onSockets = map[string]bool{}
		for _, n := range cfg.SocketsSchemas {
			inv.onSockets[n] = true
		}
	}
	// The runtime rollout (rollout.go) may send any schema on either
	// path: it builds both.
	both := inv.o.rolloutFlags != nil
	if inv.path != env.PathSockets || both {
		inv.backends[env.PathLegacy] = paths[env.PathLegacy]()
	}
	// Canary (canary.go): a share of each canaried schema on sockets.
	if inv.path == env.PathLegacy && cfg.Canary.Rate > 0 {
		inv.canary = newCanaryRouter(inv, cfg)
	}
	if inv.path != env.PathLegacy || shadowed || inv.canary != nil || both {
		inv.backends[env.PathSockets] = paths[env.PathSockets]()
	}
	return shadowed
}

// assign returns the paths of source schema name: the primary, which serves it,
// and the shadow or canary candidate's ("" if none). The split is the one
// chosen at startup.
func (inv *Transport) assign(name string) (primary, candidate env.Path) {
	switch {
	case inv.path == env.PathSockets, inv.onSockets[name]:
		return env.PathSockets, ""
	case inv.shadow != nil, inv.canary.on(name):
		return env.PathLegacy, env.PathSockets
	}
	return env.PathLegacy, ""
}

// switchKept checks that cfg, a reload's configuration, keeps every schema
// that the switch put on sockets by name: the switch is read at startup
// only, so removing one would leave a name on sockets with no schema.
func (inv *Transport) switchKept(cfg *env.Config) error {
	for _, n := range slices.Sorted(maps.Keys(inv.onSockets)) {
		if _, ok := cfg.SourceSchemas[n]; !ok {
			return fmt.Errorf("source schema %q is on the sockets path by %s and cannot be removed while running", n, env.SwitchVar)
		}
	}
	return nil
}

// servingRoutes gives e, whose primary and candidate build made, a serving
// route on each path for the runtime rollout: the primary on its path; on
// the other, a canary's candidate (which serves, with the schema's rate
// limit and cache), or a route of its own, alt, kept from prev's like the
// others. A shadow's candidate never serves: it takes no turn of the rate
// limit and never answers from the cache, so a shadowed schema gets an alt
// too. opened is the pool it opened, if any.
func (inv *Transport) servingRoutes(cfg *env.Config, e, prev *entry) (opened backend.Pool, err error) {
	e.share = new(shareWindow)
	if prev != nil && prev.share != nil {
		e.share = prev.share
	}
	e.byPath[pathIndex(e.primary.path)] = e.primary
	other := env.PathSockets
	if e.primary.path == env.PathSockets {
		other = env.PathLegacy
	}
	if c := e.candidate; c != nil && inv.shadow == nil && c.path == other {
		e.byPath[pathIndex(other)] = c
		return nil, nil
	}
	var prevAlt *route
	if prev != nil {
		prevAlt = prev.alt
	}
	e.alt, opened, err = inv.buildRoute(cfg, e.primary.name, other, false, prevAlt, e)
	if err != nil {
		return opened, err
	}
	e.alt.alt = true
	e.byPath[pathIndex(other)] = e.alt
	return opened, nil
}
