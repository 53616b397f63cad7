package sockets

import (
	"slices"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
)

// Change says what a reload from one configuration to another does to one
// source schema on the sockets path.
type Change struct {
	// Schema is the source schema's name.
	Schema string
	// Action is "kept" (same pool, warm connections stay), "replaced" (new
	// pool; the old one drains), "added" or "removed".
	Action string
	// Reasons lists what differs: setting keys, "url address" for a new
	// scheme, host or port, "tls files" for changed certificate contents;
	// for a kept schema, the per-request settings that change without a new
	// pool, "url path" and "url userinfo" among them.
	Reasons []string
	// Also lists, for a replaced schema, what else differs: the
	// per-request settings and url parts a kept schema would list. Reasons
	// and Also name keys, never values, so a changed secret shows as the
	// key that holds it: proxy, headers.set, "url userinfo".
	Also []string
}

// Plan tells, without building anything, what Reload(next) would do to
// each source schema of a sockets invoker running prev. It reads TLS files
// as a reload would, so a renewed certificate shows as a replacement.
func Plan(prev, next env.Config) []Change {
	var out []Change
	names := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range []map[string]env.SourceSchema{prev.SourceSchemas, next.SourceSchemas} {
			for n := range m {
				if !seen[n] {
					seen[n] = true
					if !yield(n) {
						return
					}
				}
			}
		}
	})
	for _, name := range names {
		_, inPrev := prev.SourceSchemas[name]
		_, inNext := next.SourceSchemas[name]
		switch {
		case !inNext:
			out = append(out, Change{Schema: name, Action: "removed"})
			continue
		case !inPrev:
			out = append(out, Change{Schema: name, Action: "added"})
			continue
		}
		a, b := planKey(&prev, name), planKey(&next, name)
		pa, _ := prev.Effective(name)
		pb, _ := next.Effective(name)
		perRequest := append(setting.Diff(pa, pb), urlChanges(prev.SourceSchemas[name].URL, next.SourceSchemas[name].URL)...)
		if a.Equal(b) {
			out = append(out, Change{Schema: name, Action: "kept", Reasons: perRequest})
			continue
		}
		var reasons []string
		if a.scheme != b.scheme || a.addr != b.addr {
			reasons = append(reasons, "url address")
		}
		reasons = append(reasons, setting.Diff(a.settings, b.settings)...)
		if a.tlsDigest != b.tlsDigest {
			reasons = append(reasons, "tls files")
		}
		c := Change{Schema: name, Action: "replaced", Reasons: reasons}
		for _, r := range perRequest {
			if !slices.Contains(reasons, r) {
				c.Also = append(c.Also, r)
			}
		}
		out = append(out, c)
	}
	return out
}

// urlChanges names what differs between two urls of a schema besides its
// address: "url userinfo" (the user or password) and "url path" (path,
// query or fragment, or another spelling of the same address, such as the
// host in capitals). The config command prints these names instead of the
// urls, which may hold a password.
func urlChanges(a, b string) []string {
	if a == b {
		return nil
	}
	ua, ub := parseURL(a), parseURL(b)
	var out []string
	if ua.User.String() != ub.User.String() {
		out = append(out, "url userinfo")
	}
	if ua.EscapedPath() != ub.EscapedPath() || ua.RawQuery != ub.RawQuery || ua.Fragment != ub.Fragment || (out == nil && backend.SameTarget(ua, ub)) {
		out = append(out, "url path")
	}
	return out
}

func planKey(cfg *env.Config, name string) *key {
	s, _ := cfg.Effective(name)
	u := parseURL(cfg.SourceSchemas[name].URL)
	_, digest, _ := tlsConfig(name, u, s.TLS, nil)
	return &key{scheme: u.Scheme, addr: backend.HostPort(u), settings: poolSettings(s), tlsDigest: digest}
}
