package env_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// TestShapingInheritance: request_compression and rate_limit inherit key by
// key from defaults, and "off" and 0 spell their off values.
func TestShapingInheritance(t *testing.T) {
	file := writeConfig(t, `
defaults:
  request_compression:
    codec: gzip
  rate_limit:
    requests_per_second: 100
    burst: 10
source_schemas:
  products:
    url: http://products/graphql
    request_compression:
      min_bytes: 4096
    rate_limit:
      wait: 20ms
  reviews:
    url: http://reviews/graphql
    request_compression:
      codec: "off"
    rate_limit:
      requests_per_second: "off"
      wait: 0
`)
	cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(nil), Environ: environ(nil)}, file)
	for _, tc := range []struct {
		schema string
		comp   env.RequestCompressionSettings
		limit  env.RateLimitSettings
		on     [2]bool
	}{
		{"products", env.RequestCompressionSettings{Codec: "gzip", MinBytes: 4096}, env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10, Wait: 20 * time.Millisecond,
			Store: "local", OnStoreError: "local", LocalShare: 1, StoreTimeout: 20 * time.Millisecond}, [2]bool{true, true}},
		{"reviews", env.RequestCompressionSettings{Codec: "off", MinBytes: 1024}, env.RateLimitSettings{RequestsPerSecond: env.RatioOff, Burst: 10, Wait: env.Off,
			Store: "local", OnStoreError: "local", LocalShare: 1, StoreTimeout: 20 * time.Millisecond}, [2]bool{false, false}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			s, _ := cfg.Effective(tc.schema)
			if s.RequestCompression != tc.comp {
				t.Errorf("request_compression %+v, want %+v", s.RequestCompression, tc.comp)
			}
			if s.RateLimit != tc.limit {
				t.Errorf("rate_limit %+v, want %+v", s.RateLimit, tc.limit)
			}
			if got := [2]bool{s.RequestCompression.On(), s.RateLimit.On()}; got != tc.on {
				t.Errorf("On() = %v, want %v", got, tc.on)
			}
		})
	}
}

func TestRateLimitEffectiveBurst(t *testing.T) {
	for _, tc := range []struct {
		s    env.RateLimitSettings
		want int
	}{
		{env.RateLimitSettings{RequestsPerSecond: 100}, 100},
		{env.RateLimitSettings{RequestsPerSecond: 2.5}, 3},
		{env.RateLimitSettings{RequestsPerSecond: 0.1}, 1},
		{env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10}, 10},
	} {
		if got := tc.s.EffectiveBurst(); got != tc.want {
			t.Errorf("%+v: EffectiveBurst() = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestShapingErrors: invalid values in a file name the key and the value.
func TestShapingErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"request_compression:\n    codec: br", `defaults.request_compression.codec: invalid value "br": allowed off, gzip, zstd`},
		{"request_compression:\n    min_bytes: 0", `defaults.request_compression.min_bytes: invalid value 0: want a whole number, at least 1`},
		{"rate_limit:\n    requests_per_second: 0", `defaults.rate_limit.requests_per_second: invalid value 0: want a positive number, or off`},
		{"rate_limit:\n    requests_per_second: -5", `defaults.rate_limit.requests_per_second: invalid value -5: want a positive number, or off`},
		{"rate_limit:\n    burst: 0", `defaults.rate_limit.burst: invalid value 0: want a whole number, at least 1`},
		{"rate_limit:\n    wait: 10", `defaults.rate_limit.wait: invalid duration 10: a number needs a unit`},
		{"rate_limit:\n    rate: 5", `defaults.rate_limit.rate: unknown key`},
		{"rate_limit:\n    store: memcached", `defaults.rate_limit.store: invalid value "memcached": allowed local, redis`},
		{"rate_limit:\n    on_store_error: fail", `defaults.rate_limit.on_store_error: invalid value "fail": allowed local, allow, deny`},
		{"rate_limit:\n    local_share: 0", `defaults.rate_limit.local_share: invalid value 0: want a number above 0, at most 1`},
		{"rate_limit:\n    local_share: 1.5", `defaults.rate_limit.local_share: invalid value 1.5: want a number above 0, at most 1`},
		{"rate_limit:\n    store_timeout: 0", `defaults.rate_limit.store_timeout: invalid value off: want a positive duration (a check of the redis store needs a bound)`},
		{"rate_limit:\n    store_timeout: 20", `defaults.rate_limit.store_timeout: invalid duration 20: a number needs a unit`},
		{"rate_limit:\n    requests_per_second: 10\n    store: redis", `defaults.rate_limit.store: invalid value "redis": the redis store needs redis.url, which is not set`},
	} {
		t.Run(tc.want, func(t *testing.T) { wantDefaultsError(t, tc.yaml, tc.want) })
	}
}

// TestValidateShaping: values that Go code sets out of range fail
// Validate, naming the key.
func TestValidateShaping(t *testing.T) {
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: env.Settings{
		RequestCompression: env.RequestCompressionSettings{Codec: "brotli", MinBytes: -1},
		RateLimit: env.RateLimitSettings{RequestsPerSecond: -3, Burst: -1, Wait: -2 * time.Second, Store: "memory", OnStoreError: "open",
			LocalShare: 2, StoreTimeout: env.Off},
	}}}}
	err := cfg.Validate()
	for _, want := range []string{
		`source_schemas.p.request_compression.codec: invalid value "brotli"`,
		"source_schemas.p.request_compression.min_bytes: invalid value -1",
		"source_schemas.p.rate_limit.requests_per_second: invalid value -3",
		"source_schemas.p.rate_limit.burst: invalid value -1",
		"source_schemas.p.rate_limit.wait: invalid value -2s",
		`source_schemas.p.rate_limit.store: invalid value "memory": allowed local, redis`,
		`source_schemas.p.rate_limit.on_store_error: invalid value "open": allowed local, allow, deny`,
		"source_schemas.p.rate_limit.local_share: invalid value 2",
		"source_schemas.p.rate_limit.store_timeout: invalid value off",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, want)
		}
	}
}

// TestRateLimitStoreVariables: the rate limit's keys, the store's among
// them, are read from FUSION_DEFAULTS__RATE_LIMIT__* and
// FUSION_SOURCE_SCHEMAS__<NAME>__RATE_LIMIT__* over a file that sets each
// otherwise, and Explain names the variable each value came from.
func TestRateLimitStoreVariables(t *testing.T) {
	keys := []struct{ key, defaults, schema string }{
		{"rate_limit.requests_per_second", "100", "off"},
		{"rate_limit.burst", "10", "5"},
		{"rate_limit.wait", "20ms", "0"},
		{"rate_limit.store", "redis", "local"},
		{"rate_limit.on_store_error", "deny", "allow"},
		{"rate_limit.local_share", "0.25", "1"},
		{"rate_limit.store_timeout", "15ms", "40ms"},
	}
	// A key added to the table must be added here too.
	for _, k := range setting.Keys() {
		if strings.HasPrefix(k, "rate_limit.") && !slices.ContainsFunc(keys, func(r struct{ key, defaults, schema string }) bool { return r.key == k }) {
			t.Errorf("key %s has no case: add its variables", k)
		}
	}
	vars := map[string]string{"FUSION_REDIS__URL": "redis://limits.internal:6379/0"}
	for _, k := range keys {
		vars[env.EnvVar("", k.key)] = k.defaults
		vars[env.EnvVar("product-catalog", k.key)] = k.schema
	}
	file := writeConfig(t, `
defaults:
  rate_limit: {requests_per_second: 9, burst: 9, wait: 9s, store: local, on_store_error: local, local_share: 0.9, store_timeout: 9s}
source_schemas:
  product-catalog:
    url: http://p/graphql
    rate_limit: {requests_per_second: 9, burst: 9, wait: 9s, store: redis, on_store_error: deny, local_share: 0.9, store_timeout: 9s}
  reviews:
    url: http://r/graphql
`)
	l := env.Loader{LookupEnv: lookupEnv(vars), Environ: environ(vars)}
	cfg, explained, err := l.Explain(file)
	if err != nil {
		t.Fatalf("Explain: %v", err)
	}
	for _, tc := range []struct {
		schema string
		want   env.RateLimitSettings
		origin func(key string) string
	}{
		{"reviews", env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10, Wait: 20 * time.Millisecond, Store: env.StoreRedis,
			OnStoreError: env.OnStoreErrorDeny, LocalShare: 0.25, StoreTimeout: 15 * time.Millisecond},
			func(key string) string { return "environment " + env.EnvVar("", key) + " (defaults)" }},
		{"product-catalog", env.RateLimitSettings{RequestsPerSecond: env.RatioOff, Burst: 5, Wait: env.Off, Store: env.StoreLocal,
			OnStoreError: env.OnStoreErrorAllow, LocalShare: 1, StoreTimeout: 40 * time.Millisecond},
			func(key string) string { return "environment " + env.EnvVar("product-catalog", key) }},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			s, _ := cfg.Effective(tc.schema)
			if s.RateLimit != tc.want {
				t.Errorf("rate_limit %+v, want %+v", s.RateLimit, tc.want)
			}
			seen := 0
			for _, v := range explained[tc.schema] {
				if strings.HasPrefix(v.Key, "rate_limit.") {
					seen++
					if want := tc.origin(v.Key); v.Origin != want {
						t.Errorf("%s: origin %q, want %q", v.Key, v.Origin, want)
					}
				}
			}
			if seen != len(keys) {
				t.Errorf("Explain shows %d rate_limit keys, want %d", seen, len(keys))
			}
		})
	}
}

// TestRateLimitStoreNeedsRedis: a limit on the redis store without
// redis.url is refused once, at the level that sets the limit or the
// store; with redis.url it loads.
func TestRateLimitStoreNeedsRedis(t *testing.T) {
	base := func(d, s env.RateLimitSettings) env.Config {
		return env.Config{Defaults: env.Settings{RateLimit: d}, SourceSchemas: map[string]env.SourceSchema{
			"a": {URL: "http://a:1/graphql"},
			"b": {URL: "http://b:1/graphql", Settings: env.Settings{RateLimit: s}},
		}}
	}
	shared := env.RateLimitSettings{RequestsPerSecond: 10, Store: env.StoreRedis}
	for _, tc := range []struct {
		name string
		cfg  env.Config
		want []string // each error's key; none: valid
	}{
		{"defaults", base(shared, env.RateLimitSettings{}), []string{"defaults.rate_limit.store"}},
		{"one schema", base(env.RateLimitSettings{}, shared), []string{"source_schemas.b.rate_limit.store"}},
		{"store without a limit", base(env.RateLimitSettings{Store: env.StoreRedis}, env.RateLimitSettings{}), nil},
		{"schema sets the rate on the defaults' store", base(env.RateLimitSettings{Store: env.StoreRedis}, env.RateLimitSettings{RequestsPerSecond: 5}),
			[]string{"source_schemas.b.rate_limit.store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			for _, key := range tc.want {
				if err == nil || strings.Count(err.Error(), key+": ") != 1 {
					t.Errorf("Validate() = %v, want one error naming %s", err, key)
				}
			}
			if err != nil && strings.Count(err.Error(), "redis store needs redis.url") != len(tc.want) {
				t.Errorf("Validate() = %v, want %d errors about redis.url", err, len(tc.want))
			}
			tc.cfg.Redis.URL = "redis://127.0.0.1:6379/0"
			if err := tc.cfg.Validate(); err != nil {
				t.Errorf("with redis.url: %v", err)
			}
		})
	}
}
