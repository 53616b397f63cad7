package env_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/env"
)

// TestLoadEverySetting loads every key of a source schema from a file and
// checks what a schema inherits, key by key.
func TestLoadEverySetting(t *testing.T) {
	file := writeConfig(t, `
defaults:
  conn_lifetime_jitter: 5s
  max_idle_conns_per_host: 8
  max_pending_requests: 64
  dns_refresh: 2s
  outlier_detection:
    consecutive_failures: 3
    interval: 1s
    base_ejection: 10s
    max_ejection: 1m
    max_ejection_percent: 50
  max_response_header_bytes: 32768
  keep_alive: 30s
  request_timeout: 20s
  tls_handshake_timeout: 5s
  engine: h1
  http_version: "1.1"
  version_policy: exact
  http2:
    ping_interval: 10s
    ping_timeout: 3s
    multiple_connections: false
  tls:
    ca_file: /etc/ca.pem
    min_version: "1.3"
  proxy: environment
  decompression: [gzip]
  headers:
    forward: [X-Tenant]
    forward_matching: ["^X-Trace-"]
    rename: {X-User: X-Source-User}
    set: {X-Gateway: fusion}
    max_forwarded_bytes: 16384
  retry:
    max_attempts: 3
    wait_min: 10ms
    wait_max: 1s
    statuses: [503]
    budget_ratio: 0.1
    budget_min_per_second: 5
  dedupe: true
  circuit_breaker:
    enabled: true
    failure_ratio: 0.3
    min_requests: 40
    window: 30s
    open_for: 2s
    half_open_requests: 3
    statuses: [502, 503]
  hedge:
    enabled: true
    delay: p99
    max_extra: 2
  request_compression:
    codec: gzip
    min_bytes: 2048
  rate_limit:
    requests_per_second: 200
    burst: 20
    wait: 5ms
    store: redis
    on_store_error: deny
    local_share: 0.5
  response_cache:
    enabled: true
    max_bytes: 1048576
    default_ttl: 30s
    shared: true
    vary: [x-tenant, X-REGION]
  persisted_queries:
    mode: apq
    max_url_bytes: 4096
redis:
  url: redis://cache.internal:6379/2
source_schemas:
  products:
    url: https://products.internal/graphql
    http_version: "2"
    tls:
      server_name: products.internal
      cert_file: /etc/client.pem
      key_file: /etc/client.key
    decompression: off
    unix_socket: /run/products.sock
    retry:
      max_attempts: 2
    dns_refresh: off
    outlier_detection:
      enabled: false
    hedge:
      delay: 40ms
    request_compression:
      codec: zstd
    rate_limit:
      requests_per_second: 50.5
      store_timeout: 50ms
    response_cache:
      store: redis
      max_entry_bytes: 65536
      max_ttl: 10m
      stale_if_error: 5m
    persisted_queries:
      get: true
`)
	cfg := mustLoad(t, env.Loader{}, file)
	got, _ := cfg.Effective("products")
	want := env.Settings{
		ConnectTimeout:      15 * time.Second,
		ConnLifetime:        2 * time.Minute,
		ConnLifetimeJitter:  5 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxConnsPerHost:     env.NoLimit,
		MaxIdleConnsPerHost: 8,
		MaxPendingRequests:  64,
		DNSRefresh:          env.Off,
		OutlierDetection: env.OutlierSettings{Enabled: env.Disabled, ConsecutiveFailures: 3, Interval: time.Second,
			BaseEjection: 10 * time.Second, MaxEjection: time.Minute, MaxEjectionPercent: 50},
		MaxResponseHeaderBytes: 32768,
		KeepAlive:              30 * time.Second,
		HeaderTimeout:          100 * time.Second,
		RequestTimeout:         20 * time.Second,
		TLSHandshakeTimeout:    5 * time.Second,
		Engine:                 "h1",
		HTTPVersion:            "2",
		VersionPolicy:          "exact",
		HTTP2:                  env.HTTP2Settings{PingInterval: 10 * time.Second, PingTimeout: 3 * time.Second, MultipleConnections: env.Disabled},
		TLS: env.TLSSettings{CAFile: "/etc/ca.pem", CertFile: "/etc/client.pem", KeyFile: "/etc/client.key",
			ServerName: "products.internal", MinVersion: "1.3", InsecureSkipVerify: env.Disabled},
		Proxy:         "environment",
		Decompression: []string{},
		UnixSocket:    "/run/products.sock",
		Headers: env.HeaderSettings{Forward: []string{"X-Tenant"}, ForwardMatching: []string{"^X-Trace-"},
			Rename: map[string]string{"X-User": "X-Source-User"}, Set: map[string]string{"X-Gateway": "fusion"},
			MaxForwardedBytes: 16384},
		Retry: env.RetrySettings{MaxAttempts: 2, WaitMin: 10 * time.Millisecond, WaitMax: time.Second, Statuses: []int{503},
			BudgetRatio: 0.1, BudgetMinPerSecond: 5},
		Dedupe: env.Enabled,
		CircuitBreaker: env.BreakerSettings{Enabled: env.Enabled, FailureRatio: 0.3, MinRequests: 40, Window: 30 * time.Second,
			OpenFor: 2 * time.Second, HalfOpenRequests: 3, Statuses: []int{502, 503}},
		Hedge:              env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 40 * time.Millisecond}, MaxExtra: 2},
		RequestCompression: env.RequestCompressionSettings{Codec: "zstd", MinBytes: 2048},
		RateLimit: env.RateLimitSettings{RequestsPerSecond: 50.5, Burst: 20, Wait: 5 * time.Millisecond, Store: "redis", OnStoreError: "deny",
			LocalShare: 0.5, StoreTimeout: 50 * time.Millisecond},
		ResponseCache: env.ResponseCacheSettings{Enabled: env.Enabled, Mode: "on", Store: "redis", MaxBytes: 1 << 20, MaxEntryBytes: 64 << 10,
			DefaultTTL: 30 * time.Second, MaxTTL: 10 * time.Minute, StaleIfError: 5 * time.Minute, LocalMaxBytes: env.NoLimit, LocalTTL: 30 * time.Second, Shared: env.Enabled, Vary: []string{"X-Tenant", "X-Region"}},
		PersistedQueries: env.PersistedQueriesSettings{Mode: "apq", GET: env.Enabled, MaxURLBytes: 4096},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Effective(products) mismatch (-want +got):\n%s", diff)
	}
}

func TestBuiltInSettings(t *testing.T) {
	cfg := mustLoad(t, env.Loader{}, writeConfig(t, "source_schemas:\n  p:\n    url: http://p/graphql\n"))
	got, _ := cfg.Effective("p")
	want := env.Settings{
		ConnectTimeout: 15 * time.Second, ConnLifetime: 2 * time.Minute, ConnLifetimeJitter: 12 * time.Second,
		IdleConnTimeout: 90 * time.Second, MaxConnsPerHost: env.NoLimit, KeepAlive: 15 * time.Second,
		MaxResponseHeaderBytes: 64 << 10, MaxPendingRequests: env.DefaultMaxPendingRequests,
		DNSRefresh: env.DefaultDNSRefresh,
		OutlierDetection: env.OutlierSettings{Enabled: env.Enabled, ConsecutiveFailures: 5, Interval: 10 * time.Second,
			BaseEjection: 30 * time.Second, MaxEjection: 300 * time.Second, MaxEjectionPercent: 10},
		HeaderTimeout: 100 * time.Second, RequestTimeout: env.Off, TLSHandshakeTimeout: 10 * time.Second,
		Engine: "h1", HTTPVersion: "2", VersionPolicy: "or_lower",
		HTTP2:         env.HTTP2Settings{PingInterval: env.Off, PingTimeout: 15 * time.Second, MultipleConnections: env.Enabled},
		TLS:           env.TLSSettings{InsecureSkipVerify: env.Disabled},
		Proxy:         "off",
		Decompression: []string{},
		Headers:       env.HeaderSettings{MaxForwardedBytes: 64 << 10},
		Retry: env.RetrySettings{MaxAttempts: 1, WaitMin: 100 * time.Millisecond, WaitMax: 2 * time.Second, Statuses: []int{429, 502, 503, 504},
			BudgetRatio: 0.2, BudgetMinPerSecond: 10},
		Dedupe: env.Disabled,
		CircuitBreaker: env.BreakerSettings{Enabled: env.Disabled, FailureRatio: 0.5, MinRequests: 20, Window: 10 * time.Second,
			OpenFor: 5 * time.Second, HalfOpenRequests: 1, Statuses: []int{500, 502, 503, 504}},
		Hedge:              env.HedgeSettings{Enabled: env.Disabled, Delay: env.HedgeDelay{Quantile: 0.95}, MaxExtra: 1},
		RequestCompression: env.RequestCompressionSettings{Codec: "off", MinBytes: 1024},
		RateLimit: env.RateLimitSettings{RequestsPerSecond: env.RatioOff, Wait: env.Off, Store: "local", OnStoreError: "local",
			LocalShare: 1, StoreTimeout: 20 * time.Millisecond},
		ResponseCache: env.ResponseCacheSettings{Enabled: env.Disabled, Mode: "on", Store: "memory", MaxBytes: 64 << 20, MaxEntryBytes: 1 << 20,
			DefaultTTL: env.Off, MaxTTL: time.Hour, StaleIfError: env.Off, LocalMaxBytes: env.NoLimit, LocalTTL: 30 * time.Second, Shared: env.Disabled, Vary: []string{}},
		PersistedQueries: env.PersistedQueriesSettings{Mode: "off", GET: env.Disabled, MaxURLBytes: 8192},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("built-in settings mismatch (-want +got):\n%s", diff)
	}
}

// TestEnvironmentSetsKeys: every key has a variable, which overrides the
// files; schema names match regardless of case and dashes.
func TestEnvironmentSetsKeys(t *testing.T) {
	file := writeConfig(t, "source_schemas:\n  product-catalog:\n    url: http://p/graphql\n    request_timeout: 1s\n")
	vars := map[string]string{
		"FUSION_DEFAULTS__TLS__MIN_VERSION":                       "1.3",
		"FUSION_DEFAULTS__DECOMPRESSION":                          "gzip, zstd",
		"FUSION_DEFAULTS__HEADERS__SET":                           "X-A=1,X-B=2",
		"FUSION_DEFAULTS__RETRY__STATUSES":                        "502,503",
		"FUSION_SOURCE_SCHEMAS__PRODUCT_CATALOG__REQUEST_TIMEOUT": "3s",
		"FUSION_SOURCE_SCHEMAS__REVIEWS__URL":                     "http://reviews/graphql",
		"FUSION_LEGACY__HANDLER_LIFETIME":                         "5m",
		"UNRELATED":                                               "x",
		"FUSION_SOMETHING_ELSE":                                   "ignored: not a key variable",
	}
	l := env.Loader{Environ: environ(vars), LookupEnv: lookupEnv(vars)}
	cfg := mustLoad(t, l, file)
	p, _ := cfg.Effective("product-catalog")
	if p.TLS.MinVersion != "1.3" || !cmp.Equal(p.Decompression, []string{"gzip", "zstd"}) || p.Headers.Set["X-B"] != "2" ||
		!cmp.Equal(p.Retry.Statuses, []int{502, 503}) || p.RequestTimeout != 3*time.Second {
		t.Errorf("product-catalog settings from the environment: %+v", p)
	}
	if r, ok := cfg.SourceSchemas["reviews"]; !ok || r.URL != "http://reviews/graphql" {
		t.Errorf("reviews from the environment: %+v, %v", r, ok)
	}
	if cfg.EffectiveLegacy().HandlerLifetime != 5*time.Minute {
		t.Errorf("handler lifetime %v", cfg.EffectiveLegacy().HandlerLifetime)
	}
	if got := env.EnvVar("product-catalog", "tls.ca_file"); got != "FUSION_SOURCE_SCHEMAS__PRODUCT_CATALOG__TLS__CA_FILE" {
		t.Errorf("EnvVar = %s", got)
	}
}

func TestSettingErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		want       string
	}{
		{"enum", "  http_version: \"3\"\n", nil, `source_schemas.p.http_version: invalid value "3": allowed 1.1, 2, h2c`},
		{"h2c over https", "  http_version: h2c\n", nil, `source_schemas.p.http_version: invalid value "h2c" for url https://p/graphql: h2c is cleartext HTTP/2 and needs an http url (use "2" over https)`},
		{"tls version", "  tls:\n      min_version: \"1.1\"\n", nil, `source_schemas.p.tls.min_version: invalid value "1.1": allowed 1.2, 1.3`},
		{"cert without key", "  tls:\n      cert_file: /c.pem\n", nil, `source_schemas.p.tls: tls.cert_file and tls.key_file go together: set both or neither`},
		{"proxy", "  proxy: ftp://proxy:21\n", nil, `source_schemas.p.proxy: invalid proxy "ftp://proxy:21": want off, environment, or a URL with scheme http, https or socks5`},
		{"codec", "  decompression: [br]\n", nil, `source_schemas.p.decompression[0]: invalid value "br": allowed gzip, zstd`},
		{"regexp", "  headers:\n      forward_matching: [\"(\"]\n", nil, "source_schemas.p.headers.forward_matching[0]: invalid regular expression \"(\""},
		{"set value", "  headers:\n      set: {X-A: \"a\\r\\nb\"}\n", nil, `source_schemas.p.headers.set.X-A: invalid header value [redacted]: control characters such as CR or LF are not allowed`},
		{"toggle", "  dedupe: maybe\n", nil, `source_schemas.p.dedupe: invalid value maybe: want true or false`},
		{"attempts", "  retry:\n      max_attempts: 0\n", nil, `source_schemas.p.retry.max_attempts: invalid value 0: want a whole number of tries, at least 1 (1 does not retry)`},
		{"status", "  retry:\n      statuses: [99]\n", nil, `source_schemas.p.retry.statuses[0]: invalid status 99: want a number from 100 to 599`},
		{"typo", "  conn_lifetim: 1s\n", nil, `source_schemas.p.conn_lifetim: unknown key (did you mean conn_lifetime?)`},
		{"section typo", "  tls:\n      ca_fil: x\n", nil, `source_schemas.p.tls.ca_fil: unknown key (did you mean tls.ca_file?)`},
		{"from the environment", "", map[string]string{"FUSION_SOURCE_SCHEMAS__P__CONNECT_TIMEOUT": "2x"}, `source_schemas.p.connect_timeout: invalid duration "2x" (set by FUSION_SOURCE_SCHEMAS__P__CONNECT_TIMEOUT)`},
		{"unknown variable", "", map[string]string{"FUSION_DEFAULTS__CONECT_TIMEOUT": "1s"}, `FUSION_DEFAULTS__CONECT_TIMEOUT: unknown key defaults.conect_timeout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, "source_schemas:\n  p:\n    url: https://p/graphql\n  "+strings.ReplaceAll(tc.yaml, "\n  ", "\n    "))
			_, err := env.Loader{Environ: environ(tc.vars)}.Load(file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
			var ke *env.KeyError
			if !errors.As(err, &ke) {
				t.Errorf("no *KeyError in %v", err)
			}
		})
	}
}

func environ(vars map[string]string) func() []string {
	return func() []string {
		var out []string
		for k, v := range vars {
			out = append(out, k+"="+v)
		}
		return out
	}
}
