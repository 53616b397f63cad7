package env_test

import (
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestPersistedQueriesSettings: persisted_queries inherits key by key from
// defaults, reads its variables, and refuses what it cannot read, in a
// file and from Go, naming the key.
func TestPersistedQueriesSettings(t *testing.T) {
	file := writeConfig(t, `
defaults:
  persisted_queries:
    mode: apq
    get: true
source_schemas:
  products:
    url: http://products/graphql
    persisted_queries:
      max_url_bytes: 2048
  reviews:
    url: http://reviews/graphql
    persisted_queries:
      mode: "off"
  accounts:
    url: http://accounts/graphql
`)
	vars := map[string]string{"FUSION_SOURCE_SCHEMAS__ACCOUNTS__PERSISTED_QUERIES__GET": "false"}
	cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(vars), Environ: environ(vars)}, file)
	for _, tc := range []struct {
		schema string
		want   env.PersistedQueriesSettings
		on     bool
	}{
		{"products", env.PersistedQueriesSettings{Mode: "apq", GET: env.Enabled, MaxURLBytes: 2048}, true},
		{"reviews", env.PersistedQueriesSettings{Mode: "off", GET: env.Enabled, MaxURLBytes: 8192}, false},
		{"accounts", env.PersistedQueriesSettings{Mode: "apq", GET: env.Disabled, MaxURLBytes: 8192}, true},
	} {
		s, _ := cfg.Effective(tc.schema)
		if s.PersistedQueries != tc.want || s.PersistedQueries.On() != tc.on {
			t.Errorf("%s: persisted_queries %+v (on %t), want %+v (on %t)", tc.schema, s.PersistedQueries, s.PersistedQueries.On(), tc.want, tc.on)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"persisted_queries:\n    mode: automatic", `defaults.persisted_queries.mode: invalid value "automatic": allowed off, apq`},
		{"persisted_queries:\n    get: sometimes", `defaults.persisted_queries.get: invalid value sometimes: want true or false`},
		{"persisted_queries:\n    max_url_bytes: 0", `defaults.persisted_queries.max_url_bytes: invalid value 0: want a whole number, at least 1`},
		{"persisted_queries:\n    hash: sha1", `defaults.persisted_queries.hash: unknown key`},
	} {
		t.Run(tc.want, func(t *testing.T) { wantDefaultsError(t, tc.yaml, tc.want) })
	}
	bad := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: env.Settings{
		PersistedQueries: env.PersistedQueriesSettings{Mode: "APQ", MaxURLBytes: -1},
	}}}}
	err := bad.Validate()
	for _, want := range []string{
		`source_schemas.p.persisted_queries.mode: invalid value "APQ": allowed off, apq`,
		"source_schemas.p.persisted_queries.max_url_bytes: invalid value -1",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, want)
		}
	}
}
