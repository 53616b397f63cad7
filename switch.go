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
// assign which backend serves it.

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
	if inv.path != env.PathSockets {
		inv.backends[env.PathLegacy] = paths[env.PathLegacy]()
	}
	// Canary (canary.go): a share of each canaried schema on sockets.
	if inv.path == env.PathLegacy && cfg.Canary.Rate > 0 {
		inv.canary = newCanaryRouter(inv, cfg)
	}
	if inv.path != env.PathLegacy || shadowed || inv.canary != nil {
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
