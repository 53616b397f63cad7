package env

// Rebuild is what a reload builds anew when the value of one setting key
// changes, on one path. The column of settingFields (fields.go) gives it
// for every key and both paths: the one table that the request path, the
// sockets path's pool key, the legacy path's shared client and its list of
// ignored keys read. The zero Rebuild is no answer: Rebuilds returns it for
// an unknown key or path.
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

// Rebuilds returns what a change of the setting key (as SettingKeys spells
// it) rebuilds on path, PathSockets or PathLegacy; the zero Rebuild for an
// unknown key or another path.
func Rebuilds(key string, path Path) Rebuild {
	f, ok := fieldByKey(key)
	if !ok {
		return 0
	}
	return f.rebuildOn(path)
}

// Only returns the keys of s for which keep, given what a change of the key
// rebuilds on path, reports true; every other key is zero (inherit). It is
// how a reload tells what it keeps: two schemas whose Only(PathSockets,
// pool) are equal can share a pool. path is PathSockets or PathLegacy; on
// another, keep sees the zero Rebuild.
func (s Settings) Only(path Path, keep func(Rebuild) bool) Settings {
	var out Settings
	for _, f := range settingFields {
		if keep(f.rebuildOn(path)) {
			f.inherit(&out, &s) // out's key is zero: inherit copies s's value
		}
	}
	return out
}

// rebuildOn is f's column for path.
func (f field) rebuildOn(path Path) Rebuild {
	switch path {
	case PathSockets:
		return f.sockets
	case PathLegacy:
		return f.legacy
	}
	return 0
}

// rebuilds sets f's column: what a change of its key rebuilds on the
// sockets path and on the legacy path.
func (f field) rebuilds(sockets, legacy Rebuild) field {
	f.sockets, f.legacy = sockets, legacy
	return f
}
