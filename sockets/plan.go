package sockets

import (
	"slices"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
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
	// pool.
	Reasons []string
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
		if a.Equal(b) {
			c := Change{Schema: name, Action: "kept", Reasons: env.DiffSettings(pa, pb)}
			if prev.SourceSchemas[name].URL != next.SourceSchemas[name].URL {
				c.Reasons = append(c.Reasons, "url path")
			}
			out = append(out, c)
			continue
		}
		var reasons []string
		if a.scheme != b.scheme || a.addr != b.addr {
			reasons = append(reasons, "url address")
		}
		reasons = append(reasons, env.DiffSettings(a.settings, b.settings)...)
		if a.tlsDigest != b.tlsDigest {
			reasons = append(reasons, "tls files")
		}
		out = append(out, Change{Schema: name, Action: "replaced", Reasons: reasons})
	}
	return out
}

func planKey(cfg *env.Config, name string) *key {
	s, _ := cfg.Effective(name)
	u := parseURL(cfg.SourceSchemas[name].URL)
	_, digest, _ := tlsConfig(name, u, s.TLS, nil)
	return &key{scheme: u.Scheme, addr: backend.HostPort(u), settings: poolSettings(s), tlsDigest: digest}
}
