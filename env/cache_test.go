package env_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// TestLoadResponseCache loads the response cache keys from a file: each
// schema inherits them from defaults key by key, 0 and off spell their off
// values, vary names are stored canonical; and the top-level redis and
// response_cache blocks.
func TestLoadResponseCache(t *testing.T) {
	file := writeConfig(t, `
defaults:
  response_cache:
    enabled: true
    max_bytes: 1048576
    default_ttl: 30s
    vary: [x-tenant]
redis:
  url: rediss://cache.internal:6380/1
  key_prefix: gw-eu
  timeout: 250ms
  pool_size: 32
  tls:
    ca_file: /etc/redis/ca.pem
    cert_file: /etc/redis/client.pem
    key_file: /etc/redis/client.key
response_cache:
  invalidation_token: "  tok-123  "
source_schemas:
  products:
    url: http://products/graphql
    response_cache:
      store: redis
      max_entry_bytes: 65536
      max_ttl: 10m
      shared: true
  reviews:
    url: http://reviews/graphql
    response_cache:
      enabled: false
      default_ttl: "off"
      vary: "off"
  accounts:
    url: http://accounts/graphql
    response_cache:
      default_ttl: 0
      vary: [X-User, x-tenant-id]
  inventory:
    url: http://inventory/graphql
`)
	cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(nil), Environ: environ(nil)}, file)
	for _, tc := range []struct {
		schema string
		want   env.ResponseCacheSettings
	}{
		{"products", env.ResponseCacheSettings{Enabled: env.Enabled, Mode: env.CacheModeOn, Store: env.StoreRedis, MaxBytes: 1 << 20, MaxEntryBytes: 64 << 10,
			DefaultTTL: 30 * time.Second, MaxTTL: 10 * time.Minute, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: env.DefaultCacheLocalTTL, Shared: env.Enabled, Vary: []string{"X-Tenant"}}},
		{"reviews", env.ResponseCacheSettings{Enabled: env.Disabled, Mode: env.CacheModeOn, Store: env.StoreMemory, MaxBytes: 1 << 20, MaxEntryBytes: env.DefaultCacheMaxEntryBytes,
			DefaultTTL: env.Off, MaxTTL: env.DefaultCacheMaxTTL, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: env.DefaultCacheLocalTTL, Shared: env.Disabled, Vary: []string{}}},
		{"accounts", env.ResponseCacheSettings{Enabled: env.Enabled, Mode: env.CacheModeOn, Store: env.StoreMemory, MaxBytes: 1 << 20, MaxEntryBytes: env.DefaultCacheMaxEntryBytes,
			DefaultTTL: env.Off, MaxTTL: env.DefaultCacheMaxTTL, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: env.DefaultCacheLocalTTL, Shared: env.Disabled, Vary: []string{"X-User", "X-Tenant-Id"}}},
		{"inventory", env.ResponseCacheSettings{Enabled: env.Enabled, Mode: env.CacheModeOn, Store: env.StoreMemory, MaxBytes: 1 << 20, MaxEntryBytes: env.DefaultCacheMaxEntryBytes,
			DefaultTTL: 30 * time.Second, MaxTTL: env.DefaultCacheMaxTTL, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: env.DefaultCacheLocalTTL, Shared: env.Disabled, Vary: []string{"X-Tenant"}}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			s, _ := cfg.Effective(tc.schema)
			if diff := cmp.Diff(tc.want, s.ResponseCache); diff != "" {
				t.Errorf("response_cache (-want +got):\n%s", diff)
			}
			if s.ResponseCache.On() != tc.want.Enabled.On() {
				t.Errorf("On() = %v", s.ResponseCache.On())
			}
		})
	}
	wantRedis := env.RedisSettings{URL: "rediss://cache.internal:6380/1", KeyPrefix: "gw-eu", Timeout: 250 * time.Millisecond, PoolSize: 32,
		TLS: env.RedisTLSSettings{CAFile: "/etc/redis/ca.pem", CertFile: "/etc/redis/client.pem", KeyFile: "/etc/redis/client.key"}}
	if diff := cmp.Diff(wantRedis, cfg.Redis); diff != "" {
		t.Errorf("redis (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRedis, cfg.EffectiveRedis()); diff != "" {
		t.Errorf("EffectiveRedis, every field set (-want +got):\n%s", diff)
	}
	if got := cfg.ResponseCache.InvalidationToken; got != "tok-123" {
		t.Errorf("invalidation_token = %q, want it trimmed: tok-123", got)
	}
}

// TestEffectiveRedis: a zero key prefix and timeout mean the defaults; a
// zero pool size stays go-redis's.
func TestEffectiveRedis(t *testing.T) {
	for _, tc := range []struct {
		name        string
		redis, want env.RedisSettings
	}{
		{"zero", env.RedisSettings{}, env.RedisSettings{KeyPrefix: env.DefaultRedisKeyPrefix, Timeout: env.DefaultRedisTimeout}},
		{"url only", env.RedisSettings{URL: "redis://r:6379"},
			env.RedisSettings{URL: "redis://r:6379", KeyPrefix: "fusion:", Timeout: 100 * time.Millisecond}},
		{"set", env.RedisSettings{KeyPrefix: "blue:", Timeout: time.Second, PoolSize: 4},
			env.RedisSettings{KeyPrefix: "blue:", Timeout: time.Second, PoolSize: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, env.Config{Redis: tc.redis}.EffectiveRedis()); diff != "" {
				t.Errorf("EffectiveRedis (-want +got):\n%s", diff)
			}
		})
	}
	// Load leaves a block it was not given zero, as Go code would.
	cfg := mustLoad(t, env.Loader{}, writeConfig(t, "source_schemas:\n  p:\n    url: http://p/graphql\n"))
	if cfg.Redis != (env.RedisSettings{}) || cfg.ResponseCache != (env.ResponseCacheConfig{}) {
		t.Errorf("without the blocks: redis %+v, response_cache %+v; want zero", cfg.Redis, cfg.ResponseCache)
	}
}

// TestResponseCacheVariables: every response_cache key has a defaults and
// a per-schema variable, which override the file's values; FUSION_REDIS__*
// and FUSION_RESPONSE_CACHE__* set the top-level blocks as
// FUSION_LEGACY__* sets legacy; Explain names each variable as the origin.
func TestResponseCacheVariables(t *testing.T) {
	keys := []struct{ key, defaults, schema string }{
		{"response_cache.enabled", "true", "false"},
		{"response_cache.mode", "shadow", "on"},
		{"response_cache.store", "redis", "memory"},
		{"response_cache.max_bytes", "1024", "2048"},
		{"response_cache.max_entry_bytes", "512", "256"},
		{"response_cache.default_ttl", "5s", "off"},
		{"response_cache.max_ttl", "1m", "2m"},
		{"response_cache.stale_if_error", "10m", "off"},
		{"response_cache.local_max_bytes", "4096", "0"},
		{"response_cache.local_ttl", "5s", "10s"},
		{"response_cache.shared", "true", "false"},
		{"response_cache.vary", "x-tenant", "X-A, x-b"},
	}
	// A key added to the table must be added here too.
	for _, k := range setting.Keys() {
		if strings.HasPrefix(k, "response_cache.") && !slices.ContainsFunc(keys, func(r struct{ key, defaults, schema string }) bool { return r.key == k }) {
			t.Errorf("key %s has no case: add its variables", k)
		}
	}
	vars := map[string]string{
		"FUSION_REDIS__URL":                         "rediss://:pw@cache.internal:6380/2",
		"FUSION_REDIS__KEY_PREFIX":                  "blue:",
		"FUSION_REDIS__TIMEOUT":                     "50ms",
		"FUSION_REDIS__POOL_SIZE":                   "8",
		"FUSION_REDIS__TLS__CA_FILE":                "/ca.pem",
		"FUSION_REDIS__TLS__CERT_FILE":              "/c.pem",
		"FUSION_REDIS__TLS__KEY_FILE":               "/c.key",
		"FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN": "tok-env",
	}
	for _, k := range keys {
		vars[env.EnvVar("", k.key)] = k.defaults
		vars[env.EnvVar("product-catalog", k.key)] = k.schema
	}
	// The file sets every key otherwise, at both levels and at the top.
	file := writeConfig(t, `
defaults:
  response_cache: {enabled: false, store: memory, max_bytes: 9, max_entry_bytes: 9, default_ttl: 9s, max_ttl: 9h, shared: false, vary: [X-File]}
redis: {url: "redis://file:6379", key_prefix: "file:", timeout: 9s, pool_size: 9}
response_cache: {invalidation_token: tok-file}
source_schemas:
  product-catalog:
    url: http://p/graphql
    response_cache: {enabled: true, store: redis, max_bytes: 9, max_entry_bytes: 9, default_ttl: 9s, max_ttl: 9h, shared: true, vary: [X-File]}
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
		want   env.ResponseCacheSettings
		origin func(key string) string
	}{
		{"reviews", env.ResponseCacheSettings{Enabled: env.Enabled, Mode: env.CacheModeShadow, Store: env.StoreRedis, MaxBytes: 1024, MaxEntryBytes: 512,
			DefaultTTL: 5 * time.Second, MaxTTL: time.Minute, StaleIfError: 10 * time.Minute, LocalMaxBytes: 4096, LocalTTL: 5 * time.Second, Shared: env.Enabled, Vary: []string{"X-Tenant"}},
			func(key string) string { return "environment " + env.EnvVar("", key) + " (defaults)" }},
		{"product-catalog", env.ResponseCacheSettings{Enabled: env.Disabled, Mode: env.CacheModeOn, Store: env.StoreMemory, MaxBytes: 2048, MaxEntryBytes: 256,
			DefaultTTL: env.Off, MaxTTL: 2 * time.Minute, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: 10 * time.Second, Shared: env.Disabled, Vary: []string{"X-A", "X-B"}},
			func(key string) string { return "environment " + env.EnvVar("product-catalog", key) }},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			s, _ := cfg.Effective(tc.schema)
			if diff := cmp.Diff(tc.want, s.ResponseCache); diff != "" {
				t.Errorf("response_cache (-want +got):\n%s", diff)
			}
			seen := 0
			for _, v := range explained[tc.schema] {
				if strings.HasPrefix(v.Key, "response_cache.") {
					seen++
					if want := tc.origin(v.Key); v.Origin != want {
						t.Errorf("%s: origin %q, want %q", v.Key, v.Origin, want)
					}
				}
			}
			if seen != len(keys) {
				t.Errorf("Explain shows %d response_cache keys, want %d", seen, len(keys))
			}
		})
	}
	wantRedis := env.RedisSettings{URL: "rediss://:pw@cache.internal:6380/2", KeyPrefix: "blue:", Timeout: 50 * time.Millisecond, PoolSize: 8,
		TLS: env.RedisTLSSettings{CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key"}}
	if diff := cmp.Diff(wantRedis, cfg.Redis); diff != "" {
		t.Errorf("redis (-want +got):\n%s", diff)
	}
	if got := cfg.ResponseCache.InvalidationToken; got != "tok-env" {
		t.Errorf("invalidation_token = %q, want tok-env", got)
	}
}

// TestResponseCacheErrors: each bad response cache, redis or
// response_cache value, in a file or a variable, is refused with one error
// naming its key and value.
func TestResponseCacheErrors(t *testing.T) {
	const schema = "source_schemas:\n  p:\n    url: http://p/graphql\n"
	cache := func(yaml string) string { return "defaults:\n  response_cache:\n    " + yaml + "\n" + schema }
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		want       string // the whole error, a line per key error
	}{
		{"toggle", cache("enabled: maybe"), nil, "defaults.response_cache.enabled: invalid value maybe: want true or false"},
		{"store", cache("store: disk"), nil, `defaults.response_cache.store: invalid value "disk": allowed memory, redis`},
		{"max_bytes zero", cache("max_bytes: 0"), nil, "defaults.response_cache.max_bytes: invalid value 0: want a whole number, at least 1"},
		{"max_entry_bytes fraction", cache("max_entry_bytes: 1.5"), nil, "defaults.response_cache.max_entry_bytes: invalid value 1.5: want a whole number, at least 1"},
		{"default_ttl without unit", cache("default_ttl: 10"), nil, `defaults.response_cache.default_ttl: invalid duration 10: a number needs a unit, for example "10s"`},
		{"max_ttl off", cache("max_ttl: \"off\""), nil, "defaults.response_cache.max_ttl: invalid value off: the response cache needs a positive duration"},
		{"max_ttl zero", cache("max_ttl: 0"), nil, "defaults.response_cache.max_ttl: invalid value off: the response cache needs a positive duration"},
		{"vary name", cache("vary: [X-Tenant, Bad Name]"), nil, `defaults.response_cache.vary[1]: invalid header name "Bad Name"`},
		{"vary star", cache("vary: [\"*\"]"), nil, `defaults.response_cache.vary[0]: invalid header name "*": Vary: * shares nothing; set response_cache.shared: false instead`},
		{"typo", cache("enable: true"), nil, "defaults.response_cache.enable: unknown key (did you mean response_cache.enabled?)"},
		{"not a mapping", "defaults:\n  response_cache: on\n" + schema, nil, "defaults.response_cache: invalid value on: want a mapping"},

		{"redis not a mapping", "redis: redis://cache:6379\n", nil, "redis: invalid value redis://cache:6379: want a mapping"},
		{"redis unknown key", "redis:\n  host: cache\n", nil, "redis.host: unknown key (known keys: url, key_prefix, timeout, pool_size, tls)"},
		{"redis tls unknown key", "redis:\n  tls:\n    ca: /ca.pem\n", nil, "redis.tls.ca: unknown key (known keys: ca_file, cert_file, key_file)"},
		{"redis url scheme", "redis:\n  url: http://cache:6379\n", nil, `redis.url: invalid url "http://cache:6379": want scheme redis or rediss (TLS)`},
		{"redis url no host", "redis:\n  url: redis:///0\n", nil, `redis.url: invalid url "redis:///0": no host`},
		{"redis url port", "redis:\n  url: redis://cache:99999\n", nil, `redis.url: invalid url "redis://cache:99999": port 99999 is not between 1 and 65535`},
		{"redis url database", "redis:\n  url: redis://cache:6379/x\n", nil, `redis.url: invalid url "redis://cache:6379/x": the path is the database number, such as /0; got "/x"`},
		{"redis url query", "redis:\n  url: redis://cache:6379?dial_timeout=1s\n", nil, `redis.url: invalid url "redis://cache:6379?dial_timeout=xxxxx": want no query or fragment: set redis.timeout, redis.pool_size and redis.tls instead`},
		{"redis url not a string", "redis:\n  url: [redis://cache]\n", nil, "redis.url: invalid value [redis://cache]: want a string (quote a value that YAML reads as a number or a boolean)"},
		{"redis timeout zero", "redis:\n  timeout: 0\n", nil, "redis.timeout: invalid duration 0: want a positive duration such as 100ms (leave it out for the default)"},
		{"redis timeout off", "redis:\n  timeout: \"off\"\n", nil, "redis.timeout: invalid duration off: want a positive duration such as 100ms (leave it out for the default)"},
		{"redis timeout without unit", "redis:\n  timeout: 5\n", nil, `redis.timeout: invalid duration 5: a number needs a unit, for example "5s"`},
		{"redis pool_size negative", "redis:\n  pool_size: -1\n", nil, "redis.pool_size: invalid value -1: want a whole number, 0 or more (0: go-redis's default, 10 per CPU)"},
		{"redis cert without key", "redis:\n  url: rediss://cache:6380\n  tls:\n    cert_file: /c.pem\n", nil, "redis.tls: redis.tls.cert_file and redis.tls.key_file go together: set both or neither"},
		{"redis tls files on redis://", "redis:\n  url: redis://cache:6379\n  tls:\n    ca_file: /ca.pem\n", nil, `redis.tls.ca_file: invalid value "/ca.pem": TLS files need a rediss:// redis.url, and redis.url is "redis://cache:6379"`},
		{"redis tls files without url", "redis:\n  tls:\n    cert_file: /c.pem\n    key_file: /c.key\n", nil, strings.Join([]string{
			`redis.tls.cert_file: invalid value "/c.pem": TLS files need a rediss:// redis.url, and redis.url is not set`,
			`redis.tls.key_file: invalid value "/c.key": TLS files need a rediss:// redis.url, and redis.url is not set`,
		}, "\n")},

		{"redis store without redis.url in defaults", cache("enabled: true\n    store: redis"), nil,
			`defaults.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`},
		{"redis store without redis.url in a schema", "defaults:\n  response_cache:\n    store: redis\n" + schema + "    response_cache:\n      enabled: true\n", nil,
			`source_schemas.p.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`},
		{"redis store without redis.url at both levels", cache("enabled: true\n    store: redis") + "    response_cache:\n      max_ttl: 1m\n  q:\n    url: http://q/graphql\n    response_cache:\n      store: redis\n", nil, strings.Join([]string{
			`defaults.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`,
			`source_schemas.q.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`,
		}, "\n")},

		{"schema variable", schema, map[string]string{"FUSION_SOURCE_SCHEMAS__P__RESPONSE_CACHE__MAX_BYTES": "lots"},
			"source_schemas.p.response_cache.max_bytes: invalid value lots: want a whole number, at least 1 (set by FUSION_SOURCE_SCHEMAS__P__RESPONSE_CACHE__MAX_BYTES)"},
		{"defaults variable", schema, map[string]string{"FUSION_DEFAULTS__RESPONSE_CACHE__STORE": "disk"},
			`defaults.response_cache.store: invalid value "disk": allowed memory, redis (set by FUSION_DEFAULTS__RESPONSE_CACHE__STORE)`},
		{"redis variable", "", map[string]string{"FUSION_REDIS__TIMEOUT": "0"},
			"redis.timeout: invalid duration 0: want a positive duration such as 100ms (leave it out for the default) (set by FUSION_REDIS__TIMEOUT)"},
		{"unknown redis variable", "", map[string]string{"FUSION_REDIS__HOST": "cache"}, "FUSION_REDIS__HOST: unknown key redis.host"},
		{"redis tls section variable", "", map[string]string{"FUSION_REDIS__TLS": "on"}, "FUSION_REDIS__TLS: unknown key redis.tls"},
		{"unknown response cache variable", "", map[string]string{"FUSION_DEFAULTS__RESPONSE_CACHE__TTL": "1s"}, "FUSION_DEFAULTS__RESPONSE_CACHE__TTL: unknown key defaults.response_cache.ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := env.Loader{LookupEnv: lookupEnv(tc.vars), Environ: environ(tc.vars)}.Load(writeConfig(t, tc.yaml))
			if err == nil {
				t.Fatalf("Load() = %+v, want error %q", cfg, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Load() error:\n got %s\nwant %s", err, tc.want)
			}
			if got, want := len(keyErrors(err)), strings.Count(tc.want, "\n")+1; got != want {
				t.Errorf("%d key errors, want %d", got, want)
			}
		})
	}
}

// TestResponseCacheValues: what the values mean for the stage, as the
// docs say: default_ttl may be above max_ttl (it is capped), and a
// configuration with the cache on the redis store and a redis.url loads.
func TestResponseCacheValues(t *testing.T) {
	cfg := mustLoad(t, env.Loader{}, writeConfig(t, `
redis: {url: "redis://cache:6379/0"}
defaults:
  response_cache: {enabled: true, store: redis, default_ttl: 2h, max_ttl: 1h}
source_schemas:
  p: {url: "http://p/graphql"}
`))
	s, _ := cfg.Effective("p")
	if s.ResponseCache.DefaultTTL != 2*time.Hour || s.ResponseCache.MaxTTL != time.Hour {
		t.Errorf("default_ttl %v, max_ttl %v; want both kept as written", s.ResponseCache.DefaultTTL, s.ResponseCache.MaxTTL)
	}
}

// cacheValidateCases are the validator's cases of the response cache and
// Redis (validateCases holds them; TestValidateHidesSecrets plants a
// password into each redis.url and a token).
func cacheValidateCases() []validateCase {
	const url = "http://products/graphql"
	on := env.ResponseCacheSettings{Enabled: env.Enabled, Store: env.StoreRedis}
	return []validateCase{
		{name: "response cache on redis", cfg: env.Config{
			Redis:         env.RedisSettings{URL: "rediss://cache:6380/3", TLS: env.RedisTLSSettings{CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key"}},
			ResponseCache: env.ResponseCacheConfig{InvalidationToken: "tok"},
			Defaults:      env.Settings{ResponseCache: env.ResponseCacheSettings{Vary: []string{"x-tenant"}, DefaultTTL: 2 * time.Hour}},
			SourceSchemas: map[string]env.SourceSchema{"products": {URL: url, Settings: env.Settings{ResponseCache: on}}},
		}},
		{
			name: "response cache values out of range",
			cfg: env.Config{Defaults: env.Settings{ResponseCache: env.ResponseCacheSettings{
				Store: "disk", MaxBytes: -1, MaxEntryBytes: -2, MaxTTL: env.Off, Vary: []string{"X-Tenant", "Bad Name", "*"},
			}}},
			wantErr: strings.Join([]string{
				`defaults.response_cache.store: invalid value "disk": allowed memory, redis`,
				"defaults.response_cache.max_bytes: invalid value -1: want a whole number, at least 1",
				"defaults.response_cache.max_entry_bytes: invalid value -2: want a whole number, at least 1",
				"defaults.response_cache.max_ttl: invalid value off: the response cache needs a positive duration",
				`defaults.response_cache.vary[1]: invalid header name "Bad Name"`,
				`defaults.response_cache.vary[2]: invalid header name "*": Vary: * shares nothing; set response_cache.shared: false instead`,
			}, "\n"),
			want: []kv{
				{"defaults.response_cache.store", "disk"},
				{"defaults.response_cache.max_bytes", -1},
				{"defaults.response_cache.max_entry_bytes", -2},
				{"defaults.response_cache.max_ttl", "off"},
				{"defaults.response_cache.vary[1]", "Bad Name"},
				{"defaults.response_cache.vary[2]", "*"},
			},
		},
		{
			name:    "redis store without redis.url",
			cfg:     env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: url, Settings: env.Settings{ResponseCache: on}}}},
			wantErr: `source_schemas.products.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`,
			want:    []kv{{"source_schemas.products.response_cache.store", "redis"}},
		},
		{
			// Two schemas inherit the store: the cause is named once.
			name: "redis store in defaults without redis.url",
			cfg: env.Config{Defaults: env.Settings{ResponseCache: on}, SourceSchemas: map[string]env.SourceSchema{
				"products": {URL: url}, "reviews": {URL: "http://reviews/graphql"},
			}},
			wantErr: `defaults.response_cache.store: invalid value "redis": the redis store needs redis.url, which is not set`,
			want:    []kv{{"defaults.response_cache.store", "redis"}},
		},
		{
			name:    "redis bounds",
			cfg:     env.Config{Redis: env.RedisSettings{URL: "redis://cache:6379", Timeout: -time.Second, PoolSize: -1}},
			wantErr: "redis.timeout: invalid value -1s: want a positive duration (0 means the default, 100ms)\nredis.pool_size: invalid value -1: want a whole number, 0 or more (0: go-redis's default, 10 per CPU)",
			want:    []kv{{"redis.timeout", "-1s"}, {"redis.pool_size", -1}},
		},
		{
			name:    "redis url port",
			cfg:     env.Config{Redis: env.RedisSettings{URL: "redis://cache:0/1"}},
			wantErr: `redis.url: invalid url "redis://cache:0/1": port 0 is not between 1 and 65535`,
			want:    []kv{{"redis.url", "redis://cache:0/1"}},
		},
		{
			name:    "redis tls files on redis://",
			cfg:     env.Config{Redis: env.RedisSettings{URL: "redis://cache:6379", TLS: env.RedisTLSSettings{CAFile: "/ca.pem", CertFile: "/c.pem"}}},
			wantErr: "redis.tls: redis.tls.cert_file and redis.tls.key_file go together: set both or neither\n" + `redis.tls.ca_file: invalid value "/ca.pem": TLS files need a rediss:// redis.url, and redis.url is "redis://cache:6379"` + "\n" + `redis.tls.cert_file: invalid value "/c.pem": TLS files need a rediss:// redis.url, and redis.url is "redis://cache:6379"`,
			want:    []kv{{"redis.tls", "/c.pem"}, {"redis.tls.ca_file", "/ca.pem"}, {"redis.tls.cert_file", "/c.pem"}},
		},
		{
			name:    "invalidation token with a line break",
			cfg:     env.Config{ResponseCache: env.ResponseCacheConfig{InvalidationToken: tokenSecret + "\r\n"}},
			wantErr: "response_cache.invalidation_token: invalid value [redacted]: a bearer token holds no spaces or control characters",
			want:    []kv{{"response_cache.invalidation_token", "[redacted]"}},
		},
	}
}
