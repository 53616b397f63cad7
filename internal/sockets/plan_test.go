package sockets_test

import (
	"reflect"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/sockets"
)

// TestPlanNamesChangedSecrets: a reload that changes only a secret (a url
// password, a headers.set value, a proxy password) shows in Plan as the
// key that holds it, for a kept schema in Reasons and for a replaced one in
// Also, so that the config command can say that it changed without
// printing it.
func TestPlanNamesChangedSecrets(t *testing.T) {
	const url = "http://svc:pw-1@127.0.0.1:4001/graphql"
	base := env.SourceSchema{URL: url, Settings: env.Settings{
		Proxy:   "http://pu:proxy-1@proxy:3128",
		Headers: env.HeaderSettings{Set: map[string]string{"Authorization": "Bearer tok-1"}},
	}}
	for _, tc := range []struct {
		name string
		edit func(s *env.SourceSchema)
		want sockets.Change
	}{
		{"nothing", func(*env.SourceSchema) {}, sockets.Change{Schema: "p", Action: "kept"}},
		{"url password", func(s *env.SourceSchema) { s.URL = "http://svc:pw-2@127.0.0.1:4001/graphql" },
			sockets.Change{Schema: "p", Action: "kept", Reasons: []string{"url userinfo"}}},
		{"url path", func(s *env.SourceSchema) { s.URL = "http://svc:pw-1@127.0.0.1:4001/v2/graphql" },
			sockets.Change{Schema: "p", Action: "kept", Reasons: []string{"url path"}}},
		{"url host spelling", func(s *env.SourceSchema) { s.URL = "HTTP://svc:pw-1@127.0.0.1:4001/graphql" },
			sockets.Change{Schema: "p", Action: "kept", Reasons: []string{"url path"}}},
		{"set value", func(s *env.SourceSchema) { s.Headers.Set = map[string]string{"Authorization": "Bearer tok-2"} },
			sockets.Change{Schema: "p", Action: "kept", Reasons: []string{"headers.set"}}},
		{"every secret", func(s *env.SourceSchema) {
			s.URL = "http://svc:pw-2@127.0.0.1:4001/graphql"
			s.Proxy = "http://pu:proxy-2@proxy:3128"
			s.Headers.Set = map[string]string{"Authorization": "Bearer tok-2"}
		}, sockets.Change{Schema: "p", Action: "replaced", Reasons: []string{"proxy"}, Also: []string{"headers.set", "url userinfo"}}},
		// The request path's keys never reach the pool, as in a Reload.
		{"breaker", func(s *env.SourceSchema) { s.CircuitBreaker.Enabled = env.Enabled },
			sockets.Change{Schema: "p", Action: "kept", Reasons: []string{"circuit_breaker.enabled"}}},
		{"address and password", func(s *env.SourceSchema) { s.URL = "http://svc:pw-2@127.0.0.1:4002/graphql" },
			sockets.Change{Schema: "p", Action: "replaced", Reasons: []string{"url address"}, Also: []string{"url userinfo"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base
			tc.edit(&next)
			prev := env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{"p": base}}
			cfg := env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{"p": next}}
			got := sockets.Plan(prev, cfg)
			if len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
				t.Errorf("Plan = %+v, want [%+v]", got, tc.want)
			}
		})
	}
}
