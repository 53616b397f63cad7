package sockets

import (
	"github.com/fusiongo/transport/env"
	isockets "github.com/fusiongo/transport/internal/sockets"
)

// ReloadChange says what a reload of the sockets path from one
// configuration to another does to one source schema.
type ReloadChange struct {
	// Schema is the source schema's name.
	Schema string
	// Action is "kept" (same pool, warm connections stay), "replaced" (new
	// pool; the old one drains), "added" or "removed".
	Action string
	// Reasons lists what differs: setting keys, "url address" for a new
	// scheme, host or port, "tls files" for changed certificate contents;
	// for a kept schema, the per-request settings that change without a
	// new pool, "url path" and "url userinfo" among them.
	Reasons []string
	// Also lists, for a replaced schema, what else differs: the
	// per-request settings and url parts a kept schema would list. Reasons
	// and Also name keys, never values, so a changed secret shows as the
	// key that holds it: proxy, headers.set, "url userinfo".
	Also []string
}

// PlanReload tells, without building anything, what a sockets-path
// Reload(next) of an invoker running prev would do to each source schema
// (the fusion-transport config -diff command prints it), in name order. It
// reads TLS files as a reload would, so a renewed certificate shows as a
// replacement.
func PlanReload(prev, next env.Config) []ReloadChange {
	in := isockets.Plan(prev, next)
	out := make([]ReloadChange, len(in))
	for i, c := range in {
		out[i] = ReloadChange{Schema: c.Schema, Action: c.Action, Reasons: c.Reasons, Also: c.Also}
	}
	return out
}

// EngineFor returns the engine the sockets path serves a source schema
// with, given its effective settings s (env.Config.Effective) and its URL's
// scheme: the one its engine setting asks for, except that h1 serves only
// what would be HTTP/1.1 without a proxy anyway. When h1 was asked for and
// cannot serve, key names the setting that decided it and why says what it
// needs; both are empty otherwise.
func EngineFor(s env.Settings, scheme string) (engine, key, why string) {
	return isockets.EngineFor(s, scheme)
}

// SpreadsAddresses reports whether the pool of a source schema with
// effective settings s chooses among the addresses of its host (and
// follows DNS, and ejects an address that keeps failing): not for a
// unix_socket or through a proxy, nor with a Config.Dial hook, which
// settings do not show. A host written as an IP address is its one
// address; a name is resolved unless dns_refresh is off.
func SpreadsAddresses(s env.Settings) bool {
	return isockets.HasAddresses(s)
}
