package transport_test

// TestReloadEveryKeyUnderLoad reloads every reloadable key, one at a time
// and all at once, every few milliseconds while callers send requests, on
// every path. It is a -race test first: a reload builds new routes and
// transports while requests read the ones in force, so any setting that a
// reload writes where a request reads it without synchronisation (as
// internal/legacy/rotate.go once did with the handler lifetime) is reported by the
// race detector. It also holds the reload contract under load: no request
// fails, no reload is rejected, every request reaches its source schema, and
// after Close every connection closes and no goroutine is left.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/shadow"
)

const (
	reloadKeysCallers  = 8
	reloadKeysReloads  = 300 // per path; reloadKeysShort with -short
	reloadKeysShort    = 100
	reloadKeysAllEvery = 5 // every fifth reload flips every key at once
	// reloadKeysStall bounds the wait for a request after a reload, and
	// for the connections to close after Close: a hang fails the test
	// instead of blocking it.
	reloadKeysStall = 15 * time.Second
	reloadKeysBody  = `{"data":{"ok":true}}`
)

// reloadKeySkips are the keys of setting.Keys that the test does not
// reload, each with the reason.
var reloadKeySkips = map[string]string{
	"response_cache.local_max_bytes": "a memory level stands in front of the redis store only (refused with memory), which " +
		"the run's configurations do not have (TestResponseCacheTwoLevels covers it)",
	"response_cache.local_ttl": "inert without response_cache.local_max_bytes (see there; TestResponseCacheTwoLevels covers it)",
	"response_cache.store": "its other value, redis, needs a Redis server and redis.url, which the run's configurations " +
		"do not have (the Redis store's tests cover the key)",
	"rate_limit.store": "its other value, redis, needs a Redis server and redis.url, which the run's configurations " +
		"do not have (TestRateLimitRedisFleet, TestRateLimitRedisDown and TestRateLimitRedisReload cover the key)",
	"hedge.enabled": "a hedge sends a query twice, which the run's per-request accounting does not expect " +
		"(TestResilienceHedge and TestResilienceReloadKeepsBreaker cover hedging and the reload of the resilience keys)",
	"unix_socket": "a value sends the schema's connections to a Unix socket instead of its host: the loopback servers " +
		"listen on TCP only, and in defaults the socket would serve both schemas, one of them over TLS " +
		"(internal/sockets' TestSettingUnixSocket covers the key)",
}

// reloadKey is one row of the key table: two values, A and B, of one key of
// setting.Keys, both valid in every combination with the other rows'
// values at every level and with every schema URL, so that no reload is
// rejected and no request fails. A row names several keys where the values
// are only valid together (a certificate with its key, tls.min_version
// with tls.max_version, http_version with version_policy).
type reloadKey struct {
	keys []string
	a, b func(*env.Settings)
}

// pair is a row for one key whose field is reached by field.
func pair[T any](key string, field func(*env.Settings) *T, a, b T) reloadKey {
	return reloadKey{keys: []string{key}, a: func(s *env.Settings) { *field(s) = a }, b: func(s *env.Settings) { *field(s) = b }}
}

// reloadTLSFiles are the PEM files the tls.* rows alternate between.
type reloadTLSFiles struct {
	caA, caB                 string // the CA alone; the CA in a bundle with another CA
	certA, keyA, certB, keyB string // two client certificates the beta server accepts
}

// reloadKeyTable is every reloaded key of setting.Keys with its values.
// Durations are chosen so that requests keep succeeding: bounds a request
// waits on are seconds, while connection lifetimes and idle timeouts are
// milliseconds, so that connections are replaced all the time under load.
func reloadKeyTable(f reloadTLSFiles) []reloadKey {
	d := func(key string, field func(*env.Settings) *time.Duration, a, b time.Duration) reloadKey {
		return pair(key, field, a, b)
	}
	return []reloadKey{
		d("connect_timeout", func(s *env.Settings) *time.Duration { return &s.ConnectTimeout }, 5*time.Second, 6*time.Second),
		d("conn_lifetime", func(s *env.Settings) *time.Duration { return &s.ConnLifetime }, 30*time.Millisecond, 45*time.Millisecond),
		d("conn_lifetime_jitter", func(s *env.Settings) *time.Duration { return &s.ConnLifetimeJitter }, 5*time.Millisecond, 10*time.Millisecond),
		d("idle_conn_timeout", func(s *env.Settings) *time.Duration { return &s.IdleConnTimeout }, 20*time.Millisecond, 40*time.Millisecond),
		pair("max_conns_per_host", func(s *env.Settings) *int { return &s.MaxConnsPerHost }, 2, env.NoLimit),
		pair("max_idle_conns_per_host", func(s *env.Settings) *int { return &s.MaxIdleConnsPerHost }, 2, env.NoLimit),
		// Far above the callers, so that no request is refused.
		pair("max_pending_requests", func(s *env.Settings) *int { return &s.MaxPendingRequests }, 4096, env.NoLimit),
		// The servers' hosts are IP addresses: one address each, never
		// looked up, never ejected; the reload must take the keys all the
		// same.
		d("dns_refresh", func(s *env.Settings) *time.Duration { return &s.DNSRefresh }, time.Second, env.Off),
		pair("outlier_detection.enabled", func(s *env.Settings) *env.Toggle { return &s.OutlierDetection.Enabled }, env.Enabled, env.Disabled),
		pair("outlier_detection.consecutive_failures", func(s *env.Settings) *int { return &s.OutlierDetection.ConsecutiveFailures }, 5, 3),
		d("outlier_detection.interval", func(s *env.Settings) *time.Duration { return &s.OutlierDetection.Interval }, 10*time.Second, 20*time.Second),
		d("outlier_detection.base_ejection", func(s *env.Settings) *time.Duration { return &s.OutlierDetection.BaseEjection }, 30*time.Second, 10*time.Second),
		d("outlier_detection.max_ejection", func(s *env.Settings) *time.Duration { return &s.OutlierDetection.MaxEjection }, 300*time.Second, time.Minute),
		pair("outlier_detection.max_ejection_percent", func(s *env.Settings) *int { return &s.OutlierDetection.MaxEjectionPercent }, 10, 50),
		// The answers carry about a hundred bytes of headers.
		pair("max_response_header_bytes", func(s *env.Settings) *int { return &s.MaxResponseHeaderBytes }, 16<<10, env.NoLimit),
		d("keep_alive", func(s *env.Settings) *time.Duration { return &s.KeepAlive }, 10*time.Second, env.Off),
		d("header_timeout", func(s *env.Settings) *time.Duration { return &s.HeaderTimeout }, 5*time.Second, 6*time.Second),
		d("request_timeout", func(s *env.Settings) *time.Duration { return &s.RequestTimeout }, 5*time.Second, 6*time.Second),
		d("tls_handshake_timeout", func(s *env.Settings) *time.Duration { return &s.TLSHandshakeTimeout }, 5*time.Second, 6*time.Second),
		// h1 serves alpha (http) always and beta (https) when http_version
		// is 1.1; legacy ignores the key.
		pair("engine", func(s *env.Settings) *string { return &s.Engine }, env.EngineNetHTTP, env.EngineH1),
		// "2" with exact is valid only over https, and h2c only over http
		// against a server that speaks cleartext HTTP/2 with prior knowledge
		// (the recording servers speak HTTP/1.1 on cleartext): 1.1 exact
		// and 2 or_lower are valid for every schema URL.
		{
			keys: []string{"http_version", "version_policy"},
			a:    func(s *env.Settings) { s.HTTPVersion, s.VersionPolicy = "1.1", "exact" },
			b:    func(s *env.Settings) { s.HTTPVersion, s.VersionPolicy = "2", "or_lower" },
		},
		d("http2.ping_interval", func(s *env.Settings) *time.Duration { return &s.HTTP2.PingInterval }, time.Second, env.Off),
		d("http2.ping_timeout", func(s *env.Settings) *time.Duration { return &s.HTTP2.PingTimeout }, 5*time.Second, 6*time.Second),
		pair("http2.multiple_connections", func(s *env.Settings) *env.Toggle { return &s.HTTP2.MultipleConnections }, env.Enabled, env.Disabled),
		// The tls.* keys act on the beta schema where the sockets path
		// serves it over https; on a cleartext URL the sockets path reads
		// the files and uses none of them, and the legacy path ignores
		// them: there they are reloaded all the same.
		pair("tls.ca_file", func(s *env.Settings) *string { return &s.TLS.CAFile }, f.caA, f.caB),
		{
			keys: []string{"tls.cert_file", "tls.key_file"},
			a:    func(s *env.Settings) { s.TLS.CertFile, s.TLS.KeyFile = f.certA, f.keyA },
			b:    func(s *env.Settings) { s.TLS.CertFile, s.TLS.KeyFile = f.certB, f.keyB },
		},
		pair("tls.server_name", func(s *env.Settings) *string { return &s.TLS.ServerName }, "localhost", "beta.test"),
		// A minimum above the maximum is rejected: the two move together.
		{
			keys: []string{"tls.min_version", "tls.max_version"},
			a:    func(s *env.Settings) { s.TLS.MinVersion, s.TLS.MaxVersion = "1.2", "1.2" },
			b:    func(s *env.Settings) { s.TLS.MinVersion, s.TLS.MaxVersion = "1.3", "1.3" },
		},
		pair("tls.insecure_skip_verify", func(s *env.Settings) *env.Toggle { return &s.TLS.InsecureSkipVerify }, env.Disabled, env.Enabled),
		// No proxy runs here: "environment" reads newInvoker's lookup, which
		// has no proxy variables, so both values dial the schema directly.
		pair("proxy", func(s *env.Settings) *string { return &s.Proxy }, "off", "environment"),
		// The servers do not compress, so the body arrives as sent either way.
		pair("decompression", func(s *env.Settings) *[]string { return &s.Decompression }, []string{"gzip", "zstd"}, []string{}),
		pair("headers.forward", func(s *env.Settings) *[]string { return &s.Headers.Forward }, []string{"X-Fwd-A"}, []string{"X-Fwd-B"}),
		pair("headers.forward_matching", func(s *env.Settings) *[]string { return &s.Headers.ForwardMatching }, []string{"^X-Match-A"}, []string{"^X-Match-B"}),
		pair("headers.rename", func(s *env.Settings) *map[string]string { return &s.Headers.Rename }, map[string]string{"X-User": "X-Source-User"}, map[string]string{"X-User": "X-Upstream-User"}),
		pair("headers.set", func(s *env.Settings) *map[string]string { return &s.Headers.Set }, map[string]string{"X-Gateway": "a"}, map[string]string{"X-Gateway": "b"}),
		// The rules above forward a few hundred bytes at most.
		pair("headers.max_forwarded_bytes", func(s *env.Settings) *int { return &s.Headers.MaxForwardedBytes }, 4<<10, env.NoLimit),
		// The servers answer 200: nothing is retried, every value only
		// rebuilds the pipeline.
		pair("retry.max_attempts", func(s *env.Settings) *int { return &s.Retry.MaxAttempts }, 1, 3),
		d("retry.wait_min", func(s *env.Settings) *time.Duration { return &s.Retry.WaitMin }, time.Millisecond, 2*time.Millisecond),
		d("retry.wait_max", func(s *env.Settings) *time.Duration { return &s.Retry.WaitMax }, 5*time.Millisecond, 10*time.Millisecond),
		pair("retry.statuses", func(s *env.Settings) *[]int { return &s.Retry.Statuses }, []int{502, 503}, []int{429}),
		// Every request has a body or URL of its own, so dedupe never
		// merges two and every request still reaches the server.
		pair("dedupe", func(s *env.Settings) *env.Toggle { return &s.Dedupe }, env.Disabled, env.Enabled),
		pair("retry.budget_ratio", func(s *env.Settings) *float64 { return &s.Retry.BudgetRatio }, 0.2, env.RatioOff),
		pair("retry.budget_min_per_second", func(s *env.Settings) *int { return &s.Retry.BudgetMinPerSecond }, 10, env.NoLimit),
		// The servers answer 200: a breaker counts successes only and
		// never opens.
		pair("circuit_breaker.enabled", func(s *env.Settings) *env.Toggle { return &s.CircuitBreaker.Enabled }, env.Disabled, env.Enabled),
		pair("circuit_breaker.failure_ratio", func(s *env.Settings) *float64 { return &s.CircuitBreaker.FailureRatio }, 0.5, 0.9),
		pair("circuit_breaker.min_requests", func(s *env.Settings) *int { return &s.CircuitBreaker.MinRequests }, 20, 50),
		d("circuit_breaker.window", func(s *env.Settings) *time.Duration { return &s.CircuitBreaker.Window }, 10*time.Second, 20*time.Second),
		d("circuit_breaker.open_for", func(s *env.Settings) *time.Duration { return &s.CircuitBreaker.OpenFor }, time.Second, 2*time.Second),
		pair("circuit_breaker.half_open_requests", func(s *env.Settings) *int { return &s.CircuitBreaker.HalfOpenRequests }, 1, 3),
		pair("circuit_breaker.statuses", func(s *env.Settings) *[]int { return &s.CircuitBreaker.Statuses }, []int{503}, []int{500, 503}),
		// hedge.enabled is skipped (reloadKeySkips): these two are inert
		// while it is off, which the reload must take all the same.
		pair("hedge.delay", func(s *env.Settings) *env.HedgeDelay { return &s.Hedge.Delay }, env.HedgeDelay{After: 50 * time.Millisecond}, env.HedgeDelay{Quantile: 0.99}),
		pair("hedge.max_extra", func(s *env.Settings) *int { return &s.Hedge.MaxExtra }, 1, 2),
		// The bodies are far under either min_bytes: the codec only
		// rebuilds the pipeline (TestShapingCompression covers the wire).
		pair("request_compression.codec", func(s *env.Settings) *string { return &s.RequestCompression.Codec }, "gzip", "zstd"),
		pair("request_compression.min_bytes", func(s *env.Settings) *int { return &s.RequestCompression.MinBytes }, 1<<20, 2<<20),
		// A limit far above the run's rate: no request is refused, and a
		// reload with equal values keeps the limiter.
		pair("rate_limit.requests_per_second", func(s *env.Settings) *float64 { return &s.RateLimit.RequestsPerSecond }, 1e6, env.RatioOff),
		pair("rate_limit.burst", func(s *env.Settings) *int { return &s.RateLimit.Burst }, 10000, 20000),
		d("rate_limit.wait", func(s *env.Settings) *time.Duration { return &s.RateLimit.Wait }, env.Off, 10*time.Millisecond),
		// The store's keys are inert on the local store (rate_limit.store
		// is skipped), which the reload must take all the same.
		pair("rate_limit.on_store_error", func(s *env.Settings) *string { return &s.RateLimit.OnStoreError }, env.OnStoreErrorDeny, env.OnStoreErrorAllow),
		pair("rate_limit.local_share", func(s *env.Settings) *float64 { return &s.RateLimit.LocalShare }, 0.5, 1),
		d("rate_limit.store_timeout", func(s *env.Settings) *time.Duration { return &s.RateLimit.StoreTimeout }, 20*time.Millisecond, 50*time.Millisecond),
		// The run's answers carry no Cache-Control: a cache on stores
		// nothing, and every request still reaches its server; the
		// reload must build or keep the caches all the same
		// (TestResponseCacheReload covers what a reload keeps).
		pair("response_cache.enabled", func(s *env.Settings) *env.Toggle { return &s.ResponseCache.Enabled }, env.Enabled, env.Disabled),
		pair("response_cache.mode", func(s *env.Settings) *string { return &s.ResponseCache.Mode }, env.CacheModeShadow, env.CacheModeOn),
		pair("response_cache.max_bytes", func(s *env.Settings) *int { return &s.ResponseCache.MaxBytes }, 1<<20, 2<<20),
		pair("response_cache.max_entry_bytes", func(s *env.Settings) *int { return &s.ResponseCache.MaxEntryBytes }, 1<<10, 1<<20),
		d("response_cache.default_ttl", func(s *env.Settings) *time.Duration { return &s.ResponseCache.DefaultTTL }, env.Off, 0),
		d("response_cache.stale_if_error", func(s *env.Settings) *time.Duration { return &s.ResponseCache.StaleIfError }, env.Off, time.Minute),
		d("response_cache.max_ttl", func(s *env.Settings) *time.Duration { return &s.ResponseCache.MaxTTL }, time.Minute, time.Hour),
		pair("response_cache.shared", func(s *env.Settings) *env.Toggle { return &s.ResponseCache.Shared }, env.Enabled, env.Disabled),
		pair("response_cache.vary", func(s *env.Settings) *[]string { return &s.ResponseCache.Vary }, []string{"X-Tenant"}, []string{}),
		// The run's Posts carry a query shorter than the hash that would
		// replace it: persisted queries send them as they are, so the
		// server's record holds each id whatever the keys say.
		pair("persisted_queries.mode", func(s *env.Settings) *string { return &s.PersistedQueries.Mode }, env.PersistedQueriesAPQ, env.PersistedQueriesOff),
		pair("persisted_queries.get", func(s *env.Settings) *env.Toggle { return &s.PersistedQueries.GET }, env.Enabled, env.Disabled),
		pair("persisted_queries.max_url_bytes", func(s *env.Settings) *int { return &s.PersistedQueries.MaxURLBytes }, 1024, 8192),
	}
}

// TestReloadKeyTableCoversEverySetting fails when a key of
// setting.Keys is neither in reloadKeyTable nor in reloadKeySkips, so
// that a new key cannot be left out of TestReloadEveryKeyUnderLoad; and
// when a row's A and B values do not differ in exactly the keys it names.
func TestReloadKeyTableCoversEverySetting(t *testing.T) {
	checkReloadKeyTable(t, reloadKeyTable(reloadTLSFiles{"ca-a", "ca-b", "cert-a", "key-a", "cert-b", "key-b"}))
}

func checkReloadKeyTable(t *testing.T, table []reloadKey) {
	t.Helper()
	inTable := map[string]bool{}
	for _, row := range table {
		var a, b env.Settings
		row.a(&a)
		row.b(&b)
		if got := setting.Diff(a, b); !slices.Equal(got, row.keys) {
			t.Errorf("the row for %v: A and B differ in %v, want exactly %v", row.keys, got, row.keys)
		}
		for _, k := range row.keys {
			if inTable[k] {
				t.Errorf("key %s is in two rows of the reload key table", k)
			}
			inTable[k] = true
		}
	}
	known := setting.Keys()
	for _, k := range known {
		_, skipped := reloadKeySkips[k]
		switch {
		case inTable[k] && skipped:
			t.Errorf("key %s is both in the reload key table and skipped", k)
		case !inTable[k] && !skipped:
			t.Errorf("key %s (setting.Keys) is not reloaded by TestReloadEveryKeyUnderLoad: add it to reloadKeyTable with two valid values, or to reloadKeySkips with the reason", k)
		}
	}
	for k := range inTable {
		if !slices.Contains(known, k) {
			t.Errorf("the reload key table has %s, which setting.Keys does not know", k)
		}
	}
	for k := range reloadKeySkips {
		if !slices.Contains(known, k) {
			t.Errorf("reloadKeySkips has %s, which setting.Keys does not know", k)
		}
	}
}

// reloadKnob is one key at one level: the value a reload flips. State 0 is
// the initial configuration's.
type reloadKnob struct {
	name   string // as a file spells the key: defaults.conn_lifetime, source_schemas.alpha.url
	states int
	set    func(cfg *env.Config, state int)
}

// reloadKnobs expands the table to every level: under defaults each row
// alternates A, B; under each source schema it cycles inherit, A, B, so
// that the defaults' value reaches the schema a third of the time. The keys
// outside env.Settings that a reload reads come first:
// legacy.handler_lifetime, forward_headers, and each schema's url (same
// host, another path) and forward_headers; then the defaults. Those are the
// keys that the legacy path's shared transport and every schema read, so the
// round robin flips each of them alone early, within the short run; shared
// reports how many they are.
func reloadKnobs(table []reloadKey, schemas []*reloadSchema) (knobs []reloadKnob, shared int) {
	knobs = append(knobs,
		reloadKnob{name: "legacy.handler_lifetime", states: 2, set: func(cfg *env.Config, state int) {
			cfg.Legacy.HandlerLifetime = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}[state]
		}},
		reloadKnob{name: "forward_headers", states: 2, set: func(cfg *env.Config, state int) {
			cfg.ForwardHeaders = [][]string{{"X-Request-Id"}, {"X-Tenant"}}[state]
		}},
	)
	for _, s := range schemas {
		knobs = append(knobs,
			reloadKnob{name: "source_schemas." + s.name + ".url", states: 2, set: func(cfg *env.Config, state int) {
				sc := cfg.SourceSchemas[s.name]
				sc.URL = s.base + reloadKeysPaths[state]
				cfg.SourceSchemas[s.name] = sc
			}},
			reloadKnob{name: "source_schemas." + s.name + ".forward_headers", states: 2, set: func(cfg *env.Config, state int) {
				sc := cfg.SourceSchemas[s.name]
				sc.ForwardHeaders = [][]string{{"X-Tenant"}, {"X-Region"}}[state]
				cfg.SourceSchemas[s.name] = sc
			}},
		)
	}
	for _, row := range table {
		knobs = append(knobs, reloadKnob{name: "defaults." + strings.Join(row.keys, "+"), states: 2, set: func(cfg *env.Config, state int) {
			[]func(*env.Settings){row.a, row.b}[state](&cfg.Defaults)
		}})
	}
	shared = len(knobs)
	for _, s := range schemas {
		for _, row := range table {
			knobs = append(knobs, reloadKnob{name: "source_schemas." + s.name + "." + strings.Join(row.keys, "+"), states: 3, set: func(cfg *env.Config, state int) {
				if state == 0 {
					return
				}
				sc := cfg.SourceSchemas[s.name]
				[]func(*env.Settings){row.a, row.b}[state-1](&sc.Settings)
				cfg.SourceSchemas[s.name] = sc
			}})
		}
	}
	return knobs, shared
}

// reloadKeysPaths are the two url paths each schema alternates between.
var reloadKeysPaths = []string{"/graphql", "/graphql/v2"}

// reloadSchema is one source schema of a run and its server.
type reloadSchema struct {
	name  string
	srv   *wireServer
	conns *connCounter
	base  string // scheme://host:port
}

// connCounter counts the connections a server accepted and those it
// closed, below TLS; changed is signalled on every count.
type connCounter struct {
	mu             sync.Mutex
	opened, closed int
	changed        chan struct{}
}

func (c *connCounter) counts() (opened, closed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, c.closed
}

func (c *connCounter) add(opened, closed int) {
	c.mu.Lock()
	c.opened += opened
	c.closed += closed
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// waitAllClosed waits until the server has closed every connection it
// accepted, and reports whether it did within reloadKeysStall.
func (c *connCounter) waitAllClosed() bool {
	limit := time.NewTimer(reloadKeysStall)
	defer limit.Stop()
	for {
		if opened, closed := c.counts(); opened == closed {
			return true
		}
		select {
		case <-c.changed:
		case <-limit.C:
			return false
		}
	}
}

// countingListener counts the connections it hands to the server, and
// their closing by the server.
type countingListener struct {
	net.Listener
	c *connCounter
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.add(1, 0)
	return wiretest.OnClose(conn, func() { l.c.add(0, 1) }), nil
}

func newReloadSchema(t *testing.T, name string, tlsOpts *wiretest.Options) *reloadSchema {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &reloadSchema{name: name, conns: &connCounter{changed: make(chan struct{}, 1)}}
	o := wiretest.Options{}
	if tlsOpts != nil {
		o = *tlsOpts
	}
	o.Listener = countingListener{Listener: ln, c: s.conns}
	s.srv = newWireServer(t, o)
	s.base = s.srv.Server.URL
	return s
}

// reloadShadowPublisher counts shadow comparisons and keeps the
// mismatches whose sockets answer was not a 200: a candidate request that
// failed under reload.
type reloadShadowPublisher struct {
	compared atomic.Int64
	failed   failures
}

func (p *reloadShadowPublisher) Publish(_ context.Context, m shadow.Mismatch) {
	if m.CandidateStatus != http.StatusOK {
		p.failed.Add("%s: legacy answered %d, sockets %d: %v", m.Schema, m.PrimaryStatus, m.CandidateStatus, m.Differences)
	}
}
func (p *reloadShadowPublisher) Compared(context.Context, string, bool)  { p.compared.Add(1) }
func (p *reloadShadowPublisher) Dropped(context.Context, string, string) {}

// TestReloadEveryKeyUnderLoad: on each path (legacy; sockets; mixed, alpha
// on legacy and beta on sockets; shadow with rate 1), 8 callers send Posts
// and some Do GETs to two source schemas in a closed loop while one
// goroutine reloads every 2 to 5 ms: each reload flips the next key at the
// next level in turn (see reloadKnobs), and every fifth reload flips them
// all. After each reload the reloader waits until each schema has answered
// a Post sent after it, so that every configuration serves requests. No
// request may fail, no reload may be rejected, every request must reach its
// server, and both url paths must have served Posts. A last reload turns
// off idle timeouts, lifetimes and rotation; after Close each server must
// see every connection it accepted closed, and no goroutine may be left.
// Beta is an https server that demands a client certificate where the
// sockets path serves it, so that the tls.* keys act; where the legacy path
// serves it (with Go's system roots), beta is cleartext. The test fails
// first if a key of setting.Keys is neither reloaded nor skipped with a
// reason. 300 reloads per path, 80 with -short.
func TestReloadEveryKeyUnderLoad(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	other := testpki.New(t, t.TempDir())
	files := reloadTLSFiles{caA: pki.CAFile, caB: filepath.Join(pki.Dir, "bundle.pem")}
	files.certA, files.keyA = pki.ClientFiles(t, "gateway-a")
	files.certB, files.keyB = pki.ClientFiles(t, "gateway-b")
	var bundle []byte
	for _, f := range []string{pki.CAFile, other.CAFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bundle = append(bundle, b...)
	}
	if err := os.WriteFile(files.caB, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	table := reloadKeyTable(files)
	checkReloadKeyTable(t, table)
	if t.Failed() {
		t.FailNow()
	}
	betaTLS := &wiretest.Options{TLS: pki.ServerConfig(t, "127.0.0.1", "localhost", "beta.test"), ALPN: []string{"h2", "http/1.1"}}
	reloads := reloadKeysReloads
	if testing.Short() {
		reloads = reloadKeysShort
	}

	runs := []struct {
		name    string
		path    env.Path
		sockets []string // PathMixed: the schemas on sockets
		shadow  bool
		betaTLS bool
	}{
		{name: "legacy", path: env.PathLegacy},
		{name: "sockets", path: env.PathSockets, betaTLS: true},
		{name: "mixed", path: env.PathMixed, sockets: []string{"beta"}, betaTLS: true},
		{name: "shadow", path: env.PathLegacy, shadow: true},
	}
	var summary strings.Builder
	summary.WriteString("\n| path | reloads (all keys at once) | requests (Do GETs) | conns opened alpha / beta | time |\n|---|---|---|---|---|\n")
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			goleak.VerifyNone(t) // the previous run's goroutines may still be on their way out
			start := time.Now()
			var tlsOpts *wiretest.Options
			if run.betaTLS {
				tlsOpts = betaTLS
			}
			schemas := []*reloadSchema{newReloadSchema(t, "alpha", nil), newReloadSchema(t, "beta", tlsOpts)}
			knobs, shared := reloadKnobs(table, schemas)
			if singles := reloads - reloads/reloadKeysAllEvery; singles < shared {
				t.Fatalf("%d reloads flip %d keys alone, fewer than the %d shared and defaults keys: raise the reload count", reloads, singles, shared)
			}
			states := make([]int, len(knobs))
			configFor := func() env.Config {
				cfg := env.Config{Path: run.path, SocketsSchemas: run.sockets, SourceSchemas: map[string]env.SourceSchema{}}
				if run.shadow {
					cfg.Shadow.Rate = 1
				}
				for _, s := range schemas {
					cfg.SourceSchemas[s.name] = env.SourceSchema{}
				}
				for i, k := range knobs {
					k.set(&cfg, states[i])
				}
				return cfg
			}
			pub := &reloadShadowPublisher{}
			inv := newInvoker(t, configFor(), transport.WithShadowPublisher(pub))

			// The callers: caller i sends to schemas[i%2], a Do GET every
			// fourth request and Posts otherwise, each with an id of its own
			// (in the body or the query) that the server's record must hold.
			// After a Post, a caller offers the reload generation it started
			// in on progress[i%2].
			var (
				ids, gets  atomic.Int64
				generation atomic.Int64
				fails      failures
				progress   = []chan int64{make(chan int64, 1), make(chan int64, 1)}
				stop       = make(chan struct{})
				callers    sync.WaitGroup
			)
			ctx, cancel := context.WithCancel(gatewayCtx(
				"X-Request-Id", "req-1", "X-Tenant", "tenant-1", "X-Region", "eu", "X-Fwd-A", "a", "X-Fwd-B", "b",
				"X-Match-A-1", "ma", "X-Match-B-1", "mb", "X-User", "user-1"))
			defer cancel()
			for i := range reloadKeysCallers {
				s := schemas[i%len(schemas)]
				callers.Go(func() {
					for j := 0; ; j++ {
						select {
						case <-stop:
							return
						default:
						}
						gen := generation.Load()
						id := ids.Add(1)
						get := j%4 == 3
						if get {
							gets.Add(1)
						}
						if err := reloadKeysCall(ctx, inv, s, id, get); err != nil {
							fails.Add("%s %s, id %d, after reload %d: %v", s.name, map[bool]string{true: "Do GET", false: "Post"}[get], id, gen, err)
						}
						if !get {
							select {
							case progress[i%len(schemas)] <- gen:
							default:
							}
						}
					}
				})
			}

			// The reloader.
			var rejected failures
			allAtOnce, next := 0, 0
			func() {
				defer close(stop)
				for n := 1; n <= reloads; n++ {
					changed := ""
					if n%reloadKeysAllEvery == 0 {
						for i, k := range knobs {
							states[i] = (states[i] + 1) % k.states
						}
						allAtOnce++
						changed = "every key"
					} else {
						k := next % len(knobs)
						states[k] = (states[k] + 1) % knobs[k].states
						next++
						changed = knobs[k].name
					}
					pace := time.NewTimer(time.Duration(2+n%4) * time.Millisecond)
					if err := inv.Reload(configFor()); err != nil {
						rejected.Add("reload %d (%s): %v", n, changed, err)
					}
					generation.Store(int64(n))
					for i, s := range schemas {
						if !reloadKeysAwait(progress[i], int64(n)) {
							rejected.Add("reload %d (%s): no Post to %s sent after it was answered within %v", n, changed, s.name, reloadKeysStall)
							cancel() // unblock the callers: the run is over
							return
						}
					}
					<-pace.C
				}
			}()
			callers.Wait()

			// A last reload turns off every bound that closes connections by
			// itself (idle timeout, lifetime, legacy rotation), and one Post
			// per schema opens connections on the transports it built: after
			// Close, only Close can have closed those.
			last := configFor()
			last.Defaults.IdleConnTimeout, last.Defaults.ConnLifetime = env.Off, env.Off
			for name, sc := range last.SourceSchemas {
				sc.IdleConnTimeout, sc.ConnLifetime = env.Off, env.Off
				last.SourceSchemas[name] = sc
			}
			last.Legacy.HandlerLifetime = env.Off
			if err := inv.Reload(last); err != nil {
				rejected.Add("the last reload, without idle timeouts and lifetimes: %v", err)
			}
			for _, s := range schemas {
				id := ids.Add(1)
				if err := reloadKeysCall(ctx, inv, s, id, false); err != nil {
					fails.Add("%s Post, id %d, after the last reload: %v", s.name, id, err)
				}
			}
			sent := ids.Load()

			if n, first := rejected.Report(); n > 0 {
				t.Errorf("%d of %d reloads rejected or stalled:\n\t%s", n, reloads, first)
			}
			if n, first := fails.Report(); n > 0 {
				t.Errorf("%d of %d requests failed during %d reloads; first errors:\n\t%s", n, sent, reloads, first)
			}
			if run.shadow {
				if n, first := pub.failed.Report(); n > 0 {
					t.Errorf("%d shadow comparisons found the sockets request failed; first:\n\t%s", n, first)
				}
				if pub.compared.Load() == 0 {
					t.Errorf("shadow rate 1: no query was compared")
				}
			}

			// Every request reached its server, and each url path served.
			seen := make(map[int64]bool, sent)
			for _, s := range schemas {
				posts := map[string]int{}
				for _, r := range s.srv.Requests() {
					if id, ok := reloadKeysID(r); ok {
						seen[id] = true
					}
					if r.Method == http.MethodPost {
						posts[r.Path]++
					}
				}
				for _, p := range reloadKeysPaths {
					if posts[p] == 0 {
						t.Errorf("%s: no Post reached url path %s (Posts by path: %v): the url reloads did not take effect", s.name, p, posts)
					}
				}
			}
			var missing []int64
			for id := int64(1); id <= sent; id++ {
				if !seen[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%d of %d requests never reached their server; ids %v", len(missing), sent, missing[:min(len(missing), 10)])
			}

			// Close: every connection closes, then no goroutine is left.
			if err := inv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			var opened []string
			for _, s := range schemas {
				if !s.conns.waitAllClosed() {
					o, c := s.conns.counts()
					t.Errorf("%s: the server accepted %d connections and saw only %d closed %v after Close", s.name, o, c, reloadKeysStall)
				}
				o, _ := s.conns.counts()
				opened = append(opened, strconv.Itoa(o))
			}
			for _, s := range schemas {
				s.srv.Close()
			}
			goleak.VerifyNone(t)
			fmt.Fprintf(&summary, "| %s | %d (%d) | %d (%d) | %s | %v |\n", run.name, reloads, allAtOnce, sent, gets.Load(), strings.Join(opened, " / "), time.Since(start).Round(time.Millisecond))
		})
	}
	t.Log(summary.String())
}

// reloadKeysAwait waits until a Post that started at reload generation gen
// or later was answered, and reports whether one was within
// reloadKeysStall.
func reloadKeysAwait(progress <-chan int64, gen int64) bool {
	limit := time.NewTimer(reloadKeysStall)
	defer limit.Stop()
	for {
		select {
		case g := <-progress:
			if g >= gen {
				return true
			}
		case <-limit.C:
			return false
		}
	}
}

// reloadKeysCall sends request id to s, a Post or a Do GET, and checks that
// it got a 200 and the whole body.
func reloadKeysCall(ctx context.Context, inv transport.Invoker, s *reloadSchema, id int64, get bool) error {
	var resp *http.Response
	var err error
	if get {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/graphql?n="+strconv.FormatInt(id, 10), nil)
		if rerr != nil {
			return rerr
		}
		resp, err = inv.Do(ctx, s.name, req)
	} else {
		resp, err = inv.Post(ctx, s.name, fmt.Appendf(nil, `{"query":"{ ok }","variables":{"n":%d}}`, id))
	}
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != reloadKeysBody {
		return fmt.Errorf("got %d %q, body read error %v; want 200 %s", resp.StatusCode, body, err, reloadKeysBody)
	}
	return nil
}

var reloadKeysBodyID = regexp.MustCompile(`"n":(\d+)`)

// reloadKeysID returns the id a request carried: in a Post's body, or in a
// GET's query.
func reloadKeysID(r wireRequest) (int64, bool) {
	raw := ""
	if r.Method == http.MethodGet {
		u, err := url.ParseRequestURI(r.RequestURI)
		if err != nil {
			return 0, false
		}
		raw = u.Query().Get("n")
	} else if m := reloadKeysBodyID.FindStringSubmatch(r.Body); m != nil {
		raw = m[1]
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	return id, err == nil
}
