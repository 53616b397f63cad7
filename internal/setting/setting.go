// Package setting reads package env's setting keys for the module's own
// packages: what a change of a key rebuilds on each path (Rebuild,
// Rebuilds), a Settings cut down to the keys that build one thing (Only),
// the keys whose values differ (Diff), the keys themselves (Keys), the
// values of the engine key (Engines), and a bound or a limit as net/http
// counts it (Bound, Limit). None of it is env's public API: a user of env
// loads, validates and reads a Config.
//
// The key table is env's (env/fields.go: the one list of keys that the
// loader, inheritance, the environment, the config command and a reload
// share). env imports this package, for Rebuild, and hands over the
// functions that read its table in its init (Register), as package
// telemetry hands meters.Of over. So this package names no type of env's,
// and Only, Diff and Rebuilds are generic: S is env.Settings and P env.Path
// at every call. A package that calls them names env's types, so it imports
// env, whose init has run by then.
//
// Like env's other leaves it imports nothing of this module.
package setting

import (
	"slices"
	"time"
)

// Rebuild is what a reload builds anew when the value of one setting key
// changes, on one path. env's table gives it for every key and both paths:
// the one table that the request path, the sockets path's pool key, the
// legacy path's shared client and its list of ignored keys read. The zero
// Rebuild is no answer: Rebuilds returns it for an unknown key or path.
type Rebuild int8

const (
	// RebuildNothing: the path reads the key for each request (the header
	// and request timeouts, the header rules, retries, dedupe; on the
	// sockets path decompression). A reload's new route takes the new value
	// and the transport stays, warm connections and all.
	RebuildNothing Rebuild = iota + 1
	// RebuildRoute: the root's request path reads the key, the same on
	// both paths (the circuit breaker, the retry budget, hedging, request
	// compression, the rate limit): a change builds that part of the route
	// anew (a breaker, a budget) and the transport stays, since no backend
	// sees the key.
	RebuildRoute
	// RebuildPool: the sockets path builds the schema's pool from the key:
	// a change replaces the pool, and the old one drains.
	RebuildPool
	// RebuildShared: the legacy path builds its one shared client from the
	// key, read under defaults only: a change replaces it for every
	// schema. Under a source schema the legacy path ignores the key.
	RebuildShared
	// RebuildIgnored: the path does not read the key.
	RebuildIgnored
)

// String names r for people: "nothing", "route", "sockets pool", "legacy
// shared client", "ignored"; "unknown" for the zero Rebuild.
func (r Rebuild) String() string {
	switch r {
	case RebuildNothing:
		return "nothing"
	case RebuildRoute:
		return "route"
	case RebuildPool:
		return "sockets pool"
	case RebuildShared:
		return "legacy shared client"
	case RebuildIgnored:
		return "ignored"
	}
	return "unknown"
}

// Table is what env hands over in its init: its keys and engines, and the
// functions over its key table, with S env.Settings and P env.Path.
type Table[S any, P ~string] struct {
	Keys     []string                                     // the setting keys, dotted, in documentation order
	Engines  []string                                     // the values of the engine key
	Rebuilds func(key string, path P) Rebuild             // see Rebuilds
	Only     func(s S, path P, keep func(Rebuild) bool) S // see Only
	Diff     func(a, b S) []string                        // see Diff
}

// The table env registered; written once, by env's init, before any
// package that names env's types runs, and only read after.
var (
	keys, engines []string
	rebuilds      any // func(key string, path env.Path) Rebuild
	only          any // func(env.Settings, env.Path, func(Rebuild) bool) env.Settings
	diff          any // func(a, b env.Settings) []string
)

// Register is env's hand-over of its table; env calls it once, in its init.
func Register[S any, P ~string](t Table[S, P]) {
	keys, engines = t.Keys, t.Engines
	rebuilds, only, diff = t.Rebuilds, t.Only, t.Diff
}

// Keys returns the keys a source schema or defaults section may hold,
// dotted, in documentation order; a new slice on every call.
func Keys() []string { return slices.Clone(keys) }

// Engines returns the values of env.Settings.Engine; a new slice on every
// call.
func Engines() []string { return slices.Clone(engines) }

// Rebuilds returns what a change of the setting key (as Keys spells it)
// rebuilds on path, env.PathSockets or env.PathLegacy; the zero Rebuild for
// an unknown key or another path.
func Rebuilds[P ~string](key string, path P) Rebuild {
	return rebuilds.(func(string, P) Rebuild)(key, path)
}

// Only returns the keys of s for which keep, given what a change of the key
// rebuilds on path, reports true; every other key is zero (inherit). It is
// how a reload tells what it keeps: two schemas whose Only(s,
// env.PathSockets, pool) are equal can share a pool. path is
// env.PathSockets or env.PathLegacy; on another, keep sees the zero
// Rebuild.
func Only[S any, P ~string](s S, path P, keep func(Rebuild) bool) S {
	return only.(func(S, P, func(Rebuild) bool) S)(s, path, keep)
}

// Diff returns the keys whose values differ between a and b, in key order.
// It compares the values themselves, secrets included, and returns only
// keys: a changed headers.set value or proxy password is a changed key.
// Diff(env.Settings{}, s) is the keys s sets.
func Diff[S any](a, b S) []string {
	return diff.(func(S, S) []string)(a, b)
}

// Bound returns d as net/http counts a bound: zero for env.Off (no bound),
// d otherwise.
func Bound(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// Limit returns n as net/http counts a limit: zero for env.NoLimit, n
// otherwise.
func Limit(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
