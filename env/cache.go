package env

import "time"

// ResponseCacheSettings configure a source schema's response cache: answers
// to queries stored and given again to the callers the source schema could
// not tell from the one that asked (docs/configuration.md, "Response
// cache", has the rules). Every zero field inherits.
type ResponseCacheSettings struct {
	// Enabled switches the cache on. Default: Disabled.
	Enabled Toggle

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
	// freshness (no s-maxage, no max-age). Off stores no such answer.
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

	// Vary names request headers that are in every shared entry's key, as
	// if every answer's Vary named them (a tenant header the source schema
	// should have put in Vary). Nil inherits; an empty list (off in files)
	// adds none. Default: none.
	Vary []string
}

// The values of ResponseCacheSettings.Store.
const (
	StoreMemory = "memory"
	StoreRedis  = "redis"
)

// On reports whether s caches answers.
func (s ResponseCacheSettings) On() bool { return s.Enabled.On() }

// RedisSettings configure the transport's one Redis client, shared by the
// response caches whose store is StoreRedis (and later by other features
// that keep state for a fleet). A zero field means the default.
type RedisSettings struct {
	// URL is the server: redis://[user:password@]host:port[/db] or
	// rediss:// for TLS. Its password never appears in an error, a log
	// line, the status page or the config command's output. Required when
	// a schema's cache uses StoreRedis; "" otherwise.
	URL string

	// KeyPrefix starts every key the transport writes, so that several
	// deployments can share one Redis; the replicas of one fleet use the
	// same prefix to share their entries. Default: "fusion:".
	KeyPrefix string

	// Timeout bounds each lookup and each write: a lookup that takes longer
	// is a miss. Default: 100ms.
	Timeout time.Duration

	// PoolSize is the most connections the client keeps open. Default:
	// 10 per CPU (go-redis's own).
	PoolSize int

	// TLS holds the client certificate and the CA for rediss:// URLs.
	// Default: the system's roots, no client certificate.
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
	// every request. Hidden in every output.
	InvalidationToken string
}

// Defaults of the response cache and of Redis.
const (
	DefaultCacheMaxBytes      = 64 << 20
	DefaultCacheMaxEntryBytes = 1 << 20
	DefaultCacheMaxTTL        = time.Hour
	DefaultRedisKeyPrefix     = "fusion:"
	DefaultRedisTimeout       = 100 * time.Millisecond
)
