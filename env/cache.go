package env

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/internal/redact"
	"golang.org/x/net/http/httpguts"
)

// ResponseCacheSettings configure a source schema's response cache: answers
// to queries stored and given again to the callers the source schema could
// not tell from the one that asked (docs/configuration.md, "Response
// cache", has the rules). Every zero field inherits.
type ResponseCacheSettings struct {
	// Enabled switches the cache on. Default: Disabled.
	Enabled Toggle

	// Mode is CacheModeOn (entries answer calls) or CacheModeShadow
	// (entries are looked up and stored, but every call is sent and
	// answered fresh, and a fresh entry that differs from the fresh answer
	// is reported: the step before turning a schema's cache on); ""
	// inherits. Default: CacheModeOn.
	Mode string

	// Store is where the entries live: StoreMemory (in this process,
	// bounded by MaxBytes) or StoreRedis (Config.Redis, shared by every
	// replica on the same Redis and key prefix); "" inherits.
	// Default: StoreMemory.
	Store string

	// MaxBytes bounds the memory store of the schema: past it, the least
	// valuable entries are evicted. At least 1. Default: 64 MiB.
	MaxBytes int

	// MaxEntryBytes is the largest answer body stored; a larger answer is
	// passed on and not stored. At least 1. Default: 1 MiB.
	MaxEntryBytes int

	// DefaultTTL is the lifetime of an answer that has no Cache-Control
	// freshness (no s-maxage, no max-age). Off stores no such answer. It
	// may be above MaxTTL, which caps it as it caps every lifetime.
	// Default: Off.
	DefaultTTL time.Duration

	// MaxTTL caps every lifetime. Positive. Default: 1h.
	MaxTTL time.Duration

	// Shared lets an answer marked public, or carrying s-maxage, answer
	// other callers: its key holds the request's headers named by the
	// answer's Vary and by Vary (below) alone. A private answer, and any
	// answer without Shared, answers only requests with every header equal.
	// Default: Disabled.
	Shared Toggle

	// StaleIfError is how long past its lifetime an entry still answers a
	// call that its source schema fails (a connection error, a 5xx, a
	// timeout, the circuit breaker, the rate limit or the pending bound
	// refusing it), for an answer that sent no stale-if-error of its own
	// (RFC 5861) and no must-revalidate. Off: only the answer's own.
	// Default: Off.
	StaleIfError time.Duration

	// LocalMaxBytes, with Store StoreRedis, puts a memory level of this
	// many bytes in front of Redis: a lookup it answers fresh costs no
	// round trip, and an invalidation on any replica reaches every
	// replica's memory level through Redis pub/sub. NoLimit (0 or off in
	// files): none. Refused with StoreMemory. Default: none.
	LocalMaxBytes int

	// LocalTTL is the longest an entry stays in the memory level: the bound
	// on an invalidation that this replica missed while its subscription
	// was broken. Positive. Default: 30s.
	LocalTTL time.Duration

	// Vary names request headers that are in every shared entry's key, as
	// if every answer's Vary named them (a tenant header the source schema
	// should have put in Vary). Each must be a valid header name, not "*".
	// Load stores each name in its canonical form (x-tenant as X-Tenant);
	// Go code may write any case. Nil inherits; an empty list (off in
	// files) adds none. Default: none.
	Vary []string
}

// The values of ResponseCacheSettings.Mode.
const (
	CacheModeOn     = "on"
	CacheModeShadow = "shadow"
)

// cacheModes are the values of ResponseCacheSettings.Mode.
var cacheModes = []string{CacheModeOn, CacheModeShadow}

// The values of ResponseCacheSettings.Store.
const (
	StoreMemory = "memory"
	StoreRedis  = "redis"
)

// cacheStores are the values of ResponseCacheSettings.Store.
var cacheStores = []string{StoreMemory, StoreRedis}

// On reports whether s caches answers.
func (s ResponseCacheSettings) On() bool { return s.Enabled.On() }

// RedisSettings configure the transport's one Redis client, shared by the
// response caches and the rate limits whose store is StoreRedis. A zero
// field means the default.
type RedisSettings struct {
	// URL is the server: redis://[user:password@]host[:port][/db] or
	// rediss:// for TLS, with a host, and no query (the keys below are the
	// client's options). Its password never appears in an error, a log
	// line, the status page or the config command's output. Required when
	// a schema's cache or rate limit uses StoreRedis; "": no Redis.
	URL string

	// KeyPrefix starts every key the transport writes, so that several
	// deployments can share one Redis; the replicas of one fleet use the
	// same prefix to share their entries and rate limits. "" means the
	// default (so no prefix at all cannot be asked for). Default:
	// DefaultRedisKeyPrefix ("fusion:").
	KeyPrefix string

	// Timeout bounds each round trip: a cache lookup that takes longer is
	// a miss. A rate limit's check is bounded by its own
	// RateLimitSettings.StoreTimeout too, the shorter of the two winning.
	// Positive; 0 means the default. Default: DefaultRedisTimeout (100ms).
	Timeout time.Duration

	// PoolSize is the most connections the client keeps open; 0 or more.
	// Default (0): go-redis's own, 10 per CPU (runtime.GOMAXPROCS).
	PoolSize int

	// TLS holds the client certificate and the CA for rediss:// URLs; a
	// file set with a redis:// URL (or none) is refused. Default: the
	// system's roots, no client certificate.
	TLS RedisTLSSettings
}

// RedisTLSSettings are the TLS files of a rediss:// connection.
type RedisTLSSettings struct {
	CAFile   string // PEM roots to verify the server with; "": the system's
	CertFile string // PEM client certificate; "": none (set with KeyFile)
	KeyFile  string // its PEM key; "": none
}

// ResponseCacheConfig holds the response cache settings that are the
// transport's, not a source schema's.
type ResponseCacheConfig struct {
	// InvalidationToken is the bearer token that the invalidation handler
	// (transport.Transport.CacheInvalidationHandler) requires; "" refuses
	// every request. Load trims the spaces around it; it holds no space or
	// control character (an Authorization header could not carry one).
	// Hidden in every output: errors, Explain and the config command show
	// redact.Value.
	InvalidationToken string
}

// Defaults of the response cache and of Redis.
const (
	DefaultCacheMaxBytes      = 64 << 20
	DefaultCacheMaxEntryBytes = 1 << 20
	DefaultCacheMaxTTL        = time.Hour
	DefaultCacheLocalTTL      = 30 * time.Second
	DefaultRedisKeyPrefix     = "fusion:"
	DefaultRedisTimeout       = 100 * time.Millisecond
)

// EffectiveRedis returns the Redis settings with defaults applied where a
// field is zero: KeyPrefix DefaultRedisKeyPrefix, Timeout
// DefaultRedisTimeout. PoolSize stays 0 for go-redis's own default.
func (c Config) EffectiveRedis() RedisSettings {
	r := c.Redis
	if r.KeyPrefix == "" {
		r.KeyPrefix = DefaultRedisKeyPrefix
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultRedisTimeout
	}
	return r
}

// The keys of the file's redis and response_cache mappings.
var (
	redisKeys         = []string{"url", "key_prefix", "timeout", "pool_size", "tls"}
	redisTLSKeys      = []string{"ca_file", "cert_file", "key_file"}
	responseCacheKeys = []string{"invalidation_token"}
)

// redisLeaf reports whether key, dotted under redis, is one of its
// values (url, tls.ca_file), for the environment's FUSION_REDIS__*.
func redisLeaf(key string) bool {
	if sec, leaf, ok := strings.Cut(key, "."); ok {
		return sec == "tls" && contains(redisTLSKeys, leaf)
	}
	return key != "tls" && contains(redisKeys, key)
}

// decodeRedis reads the top-level redis mapping into r.
func decodeRedis(errs *errorList, v any, r *RedisSettings) {
	m, ok := section(errs, "redis", v)
	if !ok {
		return
	}
	unknown(errs, "redis", m, redisKeys)
	if x, ok := m["url"]; ok {
		r.URL = topString(errs, "redis.url", x, false)
	}
	if x, ok := m["key_prefix"]; ok {
		r.KeyPrefix = topString(errs, "redis.key_prefix", x, true)
	}
	if x, ok := m["timeout"]; ok {
		switch d := duration(errs, "redis.timeout", x); {
		case d == Off:
			errs.add("redis.timeout", x, nil, "invalid duration %v: want a positive duration such as 100ms (leave it out for the default)", x)
		case d > 0:
			r.Timeout = d
		}
	}
	if x, ok := m["pool_size"]; ok {
		if n, isWhole := wholeNumber(x); isWhole && n >= 0 {
			r.PoolSize = n
		} else {
			errs.add("redis.pool_size", x, nil, "invalid value %v: want a whole number, 0 or more (0: go-redis's default, 10 per CPU)", x)
		}
	}
	t, ok := section(errs, "redis.tls", m["tls"])
	if !ok {
		return
	}
	unknown(errs, "redis.tls", t, redisTLSKeys)
	for _, f := range []struct {
		key string
		to  *string
	}{{"ca_file", &r.TLS.CAFile}, {"cert_file", &r.TLS.CertFile}, {"key_file", &r.TLS.KeyFile}} {
		if x, ok := t[f.key]; ok {
			*f.to = topString(errs, "redis.tls."+f.key, x, true)
		}
	}
}

// decodeResponseCache reads the top-level response_cache mapping into rc.
func decodeResponseCache(errs *errorList, v any, rc *ResponseCacheConfig) {
	m, ok := section(errs, "response_cache", v)
	if !ok {
		return
	}
	unknown(errs, "response_cache", m, responseCacheKeys)
	if x, ok := m["invalidation_token"]; ok {
		rc.InvalidationToken = topString(errs, "response_cache.invalidation_token", x, false)
	}
}

// topString reads a string value of a top-level block, trimmed; nil (a key
// written without a value) is "". With scalars, a YAML number or boolean
// is read as its text (a key prefix of 1); without, it is refused: a URL
// or a token that YAML read as a number is not what was meant, and its
// text would not be the one written.
func topString(errs *errorList, key string, v any, scalars bool) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	}
	if str, ok := scalarString(v); ok && scalars {
		return str
	}
	errs.add(key, v, nil, "invalid value %v: want a string (quote a value that YAML reads as a number or a boolean)", shown(key, v))
	return ""
}

// validateCache checks the response cache values set at one level (as Go
// code may set them; a file's decoding already refuses most of the same
// values), naming their keys.
func validateCache(errs *errorList, prefix string, s Settings) {
	c := s.ResponseCache
	if c.Mode != "" && !contains(cacheModes, c.Mode) {
		errs.add(prefix+".response_cache.mode", c.Mode, nil, "invalid value %q: allowed %s", c.Mode, strings.Join(cacheModes, ", "))
	}
	if c.Store != "" && !contains(cacheStores, c.Store) {
		errs.add(prefix+".response_cache.store", c.Store, nil, "invalid value %q: allowed %s", c.Store, strings.Join(cacheStores, ", "))
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"response_cache.max_bytes", c.MaxBytes}, {"response_cache.max_entry_bytes", c.MaxEntryBytes}} {
		if n.v < 0 {
			errs.add(prefix+"."+n.key, n.v, nil, "invalid value %d: want a whole number, at least 1", n.v)
		}
	}
	if c.MaxTTL < 0 {
		errs.add(prefix+".response_cache.max_ttl", "off", nil, "invalid value off: the response cache needs a positive duration")
	}
	if c.LocalTTL < 0 {
		errs.add(prefix+".response_cache.local_ttl", "off", nil, "invalid value off: the memory level needs a positive duration")
	}
	if c.LocalMaxBytes < NoLimit {
		errs.add(prefix+".response_cache.local_max_bytes", c.LocalMaxBytes, nil, "invalid value %d: want a whole number, or 0 for no memory level", c.LocalMaxBytes)
	}
	for i, n := range c.Vary {
		switch {
		case n == "*":
			errs.add(fmt.Sprintf("%s.response_cache.vary[%d]", prefix, i), n, nil, `invalid header name "*": Vary: * shares nothing; set response_cache.shared: false instead`)
		case !httpguts.ValidHeaderFieldName(n):
			errs.add(fmt.Sprintf("%s.response_cache.vary[%d]", prefix, i), n, nil, "invalid header name %q", n)
		}
	}
}

// validateCacheStore refuses a cache on the redis store without a Redis:
// at key, "defaults" or "source_schemas.NAME", whose own settings are own
// and effective settings eff. A schema whose cache is the defaults' (it sets neither
// response_cache.enabled nor response_cache.store itself) is not reported
// again: the error under defaults names the cause once.
func validateCacheStore(errs *errorList, key string, own, eff Settings, redisURL string) {
	rc := eff.ResponseCache
	if rc.On() && rc.Store != StoreRedis && rc.LocalMaxBytes > 0 && own.ResponseCache.LocalMaxBytes > 0 {
		// A level in front of a store in memory: refused, not ignored.
		errs.add(key+".response_cache.local_max_bytes", rc.LocalMaxBytes, nil,
			"invalid value %d: a memory level stands in front of the redis store; the store here is %s", rc.LocalMaxBytes, rc.Store)
	}
	if !rc.On() || rc.Store != StoreRedis || redisURL != "" {
		return
	}
	if key != "defaults" && own.ResponseCache.Enabled == Inherit && own.ResponseCache.Store == "" {
		return // both inherited: the defaults' own error names the cause
	}
	errs.add(key+".response_cache.store", rc.Store, nil, "invalid value %q: the redis store needs redis.url, which is not set", rc.Store)
}

// validateRedis checks the top-level redis and response_cache blocks. No
// error shows the URL's password or the token.
func validateRedis(errs *errorList, c Config) {
	r := c.Redis
	var u *url.URL
	if r.URL != "" {
		if err := checkRedisURL(r.URL); err != nil {
			errs.add("redis.url", r.URL, err, "%v", err)
		} else {
			u, _ = url.Parse(r.URL)
		}
	}
	if r.Timeout < 0 {
		errs.add("redis.timeout", r.Timeout.String(), nil, "invalid value %s: want a positive duration (0 means the default, %s)", r.Timeout, DefaultRedisTimeout)
	}
	if r.PoolSize < 0 {
		errs.add("redis.pool_size", r.PoolSize, nil, "invalid value %d: want a whole number, 0 or more (0: go-redis's default, 10 per CPU)", r.PoolSize)
	}
	t := r.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs.add("redis.tls", t.CertFile+t.KeyFile, nil, "redis.tls.cert_file and redis.tls.key_file go together: set both or neither")
	}
	if u == nil || u.Scheme != "rediss" {
		which := "not set"
		if r.URL != "" {
			which = strconv.Quote(redact.URL(r.URL))
		}
		for _, f := range []struct{ key, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
			if f.v != "" {
				errs.add("redis.tls."+f.key, f.v, nil, "invalid value %q: TLS files need a rediss:// redis.url, and redis.url is %s", f.v, which)
			}
		}
	}
	if tok := c.ResponseCache.InvalidationToken; strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs.add("response_cache.invalidation_token", tok, nil, "invalid value %s: a bearer token holds no spaces or control characters", redact.Value)
	}
}

// checkRedisURL requires a redis:// or rediss:// URL with a host, an
// optional database number as its path, and no query. Its errors show the
// URL with its password hidden (redact.URL).
func checkRedisURL(raw string) error {
	shown := redact.URL(raw)
	u, err := redact.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid url %q: %w", shown, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("invalid url %q: want scheme redis or rediss (TLS)", shown)
	}
	if err := checkHostPort(shown, u); err != nil {
		return err
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Errorf("invalid url %q: the path is the database number, such as /0; got %q", shown, u.Path)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("invalid url %q: want no query or fragment: set redis.timeout, redis.pool_size and redis.tls instead", shown)
	}
	return nil
}
