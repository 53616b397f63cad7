// Package env is the configuration model of the transport: which path serves
// source schema requests, which gateway request headers are forwarded, and the
// HTTP settings of every source schema.
//
// Load builds a Config from three layers, each over the last: the built-in
// defaults, YAML files, and the environment (FUSION_SOCKETS_TRANSPORT,
// FUSION_FORWARD_HEADERS, and a FUSION_DEFAULTS__*, FUSION_SOURCE_SCHEMAS__*,
// FUSION_LEGACY__*, FUSION_REDIS__* or FUSION_RESPONSE_CACHE__* variable for
// every key). A Config built by hand works
// too: every zero field means "inherit" or "the documented default", and
// Validate reports what is wrong with it.
package env

import (
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/internal/setting"
)

// Path names the HTTP stack that serves source schema requests.
type Path string

const (
	// PathLegacy is one shared http.Client with header propagation, redirect
	// following, transparent decompression and the environment's proxy: the
	// stack most Go gateways run today. It is the default.
	PathLegacy Path = "legacy"
	// PathSockets is one owned transport per source schema with
	// reverse-proxy defaults.
	PathSockets Path = "sockets"
	// PathMixed serves the source schemas named in Config.SocketsSchemas
	// through the sockets path and the others through the legacy path: a
	// rollout one source schema at a time.
	PathMixed Path = "mixed"
)

// Built-in defaults, used where neither a source schema nor Config.Defaults
// sets a value: a reverse proxy's bounds (docs/design.md compares them with
// the original this project ports).
const (
	DefaultConnectTimeout  = 15 * time.Second
	DefaultConnLifetime    = 2 * time.Minute
	DefaultIdleConnTimeout = 90 * time.Second
	DefaultHeaderTimeout   = 100 * time.Second
	DefaultHandlerLifetime = 2 * time.Minute

	// DefaultMaxResponseHeaderBytes is the default of
	// Settings.MaxResponseHeaderBytes: Envoy's default bound is 60 KiB, a
	// source schema's answer carries a few hundred bytes of headers, and
	// net/http's own 10 MiB let eight hostile answers at once hold 535 MB.
	DefaultMaxResponseHeaderBytes = 64 << 10

	// DefaultMaxPendingRequests is the default of
	// Settings.MaxPendingRequests: Envoy's max_pending_requests.
	DefaultMaxPendingRequests = 1024

	// DefaultDNSRefresh is the default of Settings.DNSRefresh: Envoy's
	// dns_refresh_rate.
	DefaultDNSRefresh = 5 * time.Second
	// MinDNSRefresh is the shortest Settings.DNSRefresh Validate accepts:
	// a shorter one would keep the resolver busy.
	MinDNSRefresh = 10 * time.Millisecond
	// MinBreakerWindow is the shortest BreakerSettings.Window Validate
	// accepts: its ten buckets would be under a millisecond each.
	MinBreakerWindow = 10 * time.Millisecond

	// DefaultMaxForwardedHeaderBytes is the default of
	// HeaderSettings.MaxForwardedBytes: a source schema behind nginx takes
	// 8 KiB per header line and 32 KiB in all by default; 64 KiB forwards
	// any real gateway request and bounds a hostile one.
	DefaultMaxForwardedHeaderBytes = 64 << 10

	// MaxConfigFileBytes bounds a configuration file that Load reads: a
	// file of 5,000 source schemas is about 1 MiB.
	MaxConfigFileBytes = 16 << 20
)

// The values of Settings.Engine.
const (
	// EngineNetHTTP is net/http's Transport, through http.ClientConn.
	EngineNetHTTP = "nethttp"
	// EngineH1 is the library's own HTTP/1.1 client (internal/h1).
	EngineH1 = "h1"
)

// engines are the values of Settings.Engine (setting.Engines).
var engines = []string{EngineNetHTTP, EngineH1}

// Off, as the value of a duration setting, turns that bound off. Files and
// the environment write it as 0 or the word "off"; in a Config built by hand
// 0 means "inherit", so Off is how Go code says "no bound".
const Off time.Duration = -1

// NoLimit, as the value of a limit such as MaxConnsPerHost, means no limit.
// Files write it as 0; in a Config built by hand 0 means "inherit". One
// limit cannot be lifted: for MaxResponseHeaderBytes, NoLimit means
// net/http's own bound of 10 MiB (see there).
const NoLimit = -1

// Config is the whole transport configuration.
type Config struct {
	// Path selects the path at startup. The zero value selects
	// PathLegacy. FUSION_SOCKETS_TRANSPORT overrides the file's value.
	// A running Invoker never changes path: Reload ignores this field.
	Path Path

	// SocketsSchemas names the source schemas served by the sockets path
	// when Path is PathMixed. Every name must be a configured source
	// schema. Nil otherwise.
	SocketsSchemas []string

	// Shadow configures shadow comparison: with a positive Shadow.Rate
	// (and Transport PathLegacy), the legacy path serves every request and
	// a sample of queries is also sent through the sockets path and
	// compared. Default: off.
	Shadow ShadowSettings

	// Canary configures a canary rollout: with a positive Canary.Rate
	// (and Transport PathLegacy), a share of each canaried source schema's
	// gateway requests is served by the sockets path, judged against
	// legacy, and falls back by itself. Default: off. See CanarySettings.
	Canary CanarySettings

	// ForwardHeaders names the gateway request headers forwarded to every
	// source schema, on both paths. Nil forwards none. Hop-by-hop headers and
	// Host are never forwarded, even when listed. FUSION_FORWARD_HEADERS
	// replaces the file's list.
	ForwardHeaders []string

	// Defaults holds the settings every source schema inherits, key by key.
	// A zero field here means the built-in default (see Settings).
	Defaults Settings

	// SourceSchemas maps a source schema name to its configuration. A
	// request for a name that is not here fails.
	SourceSchemas map[string]SourceSchema

	// Legacy holds the settings that only the legacy path reads.
	Legacy LegacySettings

	// Redis is the transport's Redis client, for the response caches whose
	// store is redis. Default: none. See RedisSettings.
	Redis RedisSettings

	// ResponseCache holds the response cache's transport-wide settings (its
	// invalidation token); each schema's cache is Settings.ResponseCache.
	ResponseCache ResponseCacheConfig
}

// SourceSchema is the configuration of one source schema.
type SourceSchema struct {
	// URL is the source schema's GraphQL endpoint, used by Invoker.Post. It
	// is required and must be absolute (scheme and host).
	URL string

	// ForwardHeaders names gateway request headers forwarded to this source
	// schema in addition to Config.ForwardHeaders. Nil adds none.
	ForwardHeaders []string

	// Settings overrides Config.Defaults for this source schema, key by key:
	// a zero field inherits.
	Settings
}

// Settings are the HTTP settings of a source schema. In every field the zero
// value means "inherit": from Config.Defaults for a source schema, and from
// the built-in default for Config.Defaults itself. Use Config.Effective to
// read the values a source schema runs with. docs/configuration.md lists
// every key with the path that honours it.
type Settings struct {
	// ConnectTimeout bounds dialing a new connection (TCP and, for https,
	// the TLS handshake on the sockets path). Off dials without a bound.
	// Default: 15s.
	ConnectTimeout time.Duration

	// ConnLifetime is the age after which the sockets path closes a pooled
	// connection, never in the middle of a request. Off keeps connections
	// for as long as they stay usable. The legacy path ignores it (it
	// rotates its shared transport, see LegacySettings). Default: 2m.
	ConnLifetime time.Duration

	// ConnLifetimeJitter is the most that is taken, at random, off each
	// connection's lifetime, so that a pool does not reconnect all at once.
	// Off: no jitter. Default: a tenth of ConnLifetime.
	ConnLifetimeJitter time.Duration

	// IdleConnTimeout is how long an idle pooled connection is kept. Off
	// keeps idle connections without a bound. Default: 90s.
	IdleConnTimeout time.Duration

	// MaxConnsPerHost limits the connections to one source schema (sockets)
	// or to one host (legacy, whose transport is shared); a request that
	// finds the limit reached waits for a connection. NoLimit (0 in files)
	// means no limit; other negative values are invalid.
	// Default: no limit.
	MaxConnsPerHost int

	// MaxIdleConnsPerHost limits the idle connections kept per source
	// schema (sockets) or per host (legacy); a connection that turns idle
	// beyond it is closed. NoLimit (0 in files) means no limit.
	// Default: the path's own (sockets: no limit; legacy: Go's 2).
	MaxIdleConnsPerHost int

	// MaxPendingRequests bounds the requests that wait for a connection of
	// one source schema (sockets path; at max_conns_per_host): a request
	// that finds this many waiting already fails at once, unsent, with an
	// error that names the schema and matches fault.ErrOverloaded.
	// Those that wait are served in the order they came. NoLimit (0 in
	// files) means no bound. The legacy path ignores it.
	// Default: DefaultMaxPendingRequests (1024, Envoy's).
	MaxPendingRequests int

	// DNSRefresh is how often the sockets path resolves a source schema's
	// host again, so that its pool follows the addresses DNS gives (a
	// replica added or gone, a blue/green switch) and spreads its requests
	// over them. The host is resolved when the pool starts, then every
	// DNSRefresh, and at once when every known address fails to connect.
	// Off (0 in files) leaves resolving to Go's dialer, at each dial, with
	// no spreading and no outlier ejection, as before this setting. A host
	// written as an IP address, a unix_socket, a proxy and a
	// SchemaOptions.Dial hook have one address: nothing is resolved. The
	// legacy path ignores it. At least MinDNSRefresh (10ms), or off.
	// Default: DefaultDNSRefresh (5s, Envoy's).
	DNSRefresh time.Duration

	// OutlierDetection takes an address of a source schema that keeps
	// failing out of service for a while (sockets path, when the host has
	// two addresses or more). Default: on. See OutlierSettings.
	OutlierDetection OutlierSettings

	// MaxResponseHeaderBytes bounds the bytes of a response's status line
	// and headers; a larger answer fails the request, naming the schema.
	// NoLimit (0 in files) is not unbounded: it means net/http's own bound
	// of 10 MiB (10485760 bytes), on both paths and engines; a larger bound
	// is written as a number. The legacy path reads it from Defaults (its
	// transport is shared). Default: DefaultMaxResponseHeaderBytes (64 KiB).
	MaxResponseHeaderBytes int

	// KeepAlive is the interval of TCP keep-alive probes on a connection.
	// Off turns them off. Default: 15s (Go's dialer default).
	KeepAlive time.Duration

	// HeaderTimeout bounds the time until the response headers arrive for a
	// request whose context has no deadline; reading the body is not cut.
	// Off leaves such requests unbounded. Default: 100s.
	HeaderTimeout time.Duration

	// RequestTimeout bounds a whole request, body included, unless the
	// caller's context has an earlier deadline. Off: no bound.
	// Default: off.
	RequestTimeout time.Duration

	// TLSHandshakeTimeout bounds the TLS handshake of a new connection.
	// Off: no bound of its own (ConnectTimeout still applies on sockets).
	// Default: 10s.
	TLSHandshakeTimeout time.Duration

	// Engine is the sockets path's HTTP client engine: "h1" (the library's
	// own HTTP/1.1 client, internal/h1: fewer allocations and less CPU per
	// call) or "nethttp" (net/http's Transport, every protocol and
	// setting). A schema that h1 cannot serve as configured (HTTP/2 or h2c
	// possible, a proxy) uses nethttp; when h1 was set explicitly, the
	// sockets path says so once when it builds the schema's pool. The
	// legacy path ignores it. Default: "h1", which serves the schemas that
	// speak plain HTTP/1.1 (http URLs, and https with http_version 1.1).
	Engine string

	// HTTPVersion is the HTTP version spoken to the source schema: "1.1",
	// "2" (HTTP/2 over TLS, negotiated by ALPN) or "h2c" (cleartext HTTP/2
	// with prior knowledge). Default: "2" with VersionPolicy "or_lower",
	// which is Go's own behaviour: HTTP/2 where TLS offers it, else 1.1.
	HTTPVersion string

	// VersionPolicy says whether HTTPVersion is a floor or a fixed choice:
	// "or_lower" falls back to HTTP/1.1; "exact" fails rather than fall
	// back. h2c is always exact. Default: "or_lower".
	VersionPolicy string

	// HTTP2 holds the HTTP/2 connection settings.
	HTTP2 HTTP2Settings

	// TLS holds the TLS client settings for https source schemas.
	TLS TLSSettings

	// Proxy routes the source schema's connections: "off" (direct),
	// "environment" (HTTP_PROXY, HTTPS_PROXY and NO_PROXY, read once at
	// startup), or a proxy URL (http, https or socks5). Default: "off" on
	// the sockets path; the legacy path always uses the environment.
	Proxy string

	// Decompression lists the content codings the sockets path asks for
	// and decodes: "gzip", "zstd". A non-nil empty list (off in files)
	// decodes nothing. Default: none, the body reaches the caller as sent.
	Decompression []string

	// UnixSocket, if set, is the path of a Unix domain socket to dial
	// instead of the URL's host, for a sidecar. The URL still gives the
	// Host header and scheme. Default: none.
	UnixSocket string

	// Headers holds header rules beyond the forwarded names.
	Headers HeaderSettings

	// Retry configures retries of queries. Default: off (one attempt).
	Retry RetrySettings

	// Dedupe makes identical in-flight queries share one source schema
	// request: same method, URL, Host, body and every header but the
	// trace context and X-Request-Id (middleware.Dedupe), so two users
	// never share an answer. Default: Disabled.
	Dedupe Toggle

	// CircuitBreaker stops sending to a source schema that fails, on both
	// paths. Default: off. See BreakerSettings.
	CircuitBreaker BreakerSettings

	// Hedge sends a slow query once more. Default: off. See HedgeSettings.
	Hedge HedgeSettings

	// RequestCompression sends request bodies compressed, on both paths.
	// Default: off. See RequestCompressionSettings.
	RequestCompression RequestCompressionSettings

	// RateLimit bounds the rate of requests to the source schema, from this
	// gateway replica or, with the redis store, from every replica on the
	// same Redis, on both paths. Default: off. See RateLimitSettings.
	RateLimit RateLimitSettings

	// ResponseCache stores answers to queries and answers later calls from
	// them, on both paths. Default: off. See ResponseCacheSettings.
	ResponseCache ResponseCacheSettings

	// PersistedQueries sends requests by the hash of their query text
	// (automatic persisted queries), on both paths. Default: off. See
	// PersistedQueriesSettings.
	PersistedQueries PersistedQueriesSettings
}

// RequestCompressionSettings configure the compression of request bodies
// (middleware.Compress): a body of at least MinBytes bytes is sent
// compressed with Codec, with Content-Encoding naming it. A request that
// already has a Content-Encoding, and a GET or HEAD, is sent as it is. The
// body is compressed once per call: a retry or hedge sends the same
// compressed bytes. Every zero field inherits.
type RequestCompressionSettings struct {
	// Codec is "off", "gzip" or "zstd"; "" inherits. Default: "off".
	Codec string

	// MinBytes is the smallest body that is compressed; at least 1.
	// Default: 1024.
	MinBytes int
}

// RateLimitSettings configure a source schema's rate limit
// (middleware.RateLimiter). With Store StoreLocal it is a token bucket kept
// per schema and per gateway replica: a fleet of N replicas sends up to N
// times the rate. With StoreRedis it is one limit per schema shared by
// every replica on the same Redis and key prefix (Config.Redis), kept in
// Redis by GCRA on the server's clock; OnStoreError says what a replica
// does while Redis cannot be asked. A request beyond the limit waits up to
// Wait for its turn, never past its own deadline, or fails at once, unsent
// (fault.ErrRateLimited). Every attempt counts: a retry and a hedge each
// take a turn. Every zero field inherits.
type RateLimitSettings struct {
	// RequestsPerSecond is the limit's rate, positive; RatioOff (off in
	// files) turns the limit off. Default: off.
	RequestsPerSecond float64

	// Burst is how many requests may go at once after a quiet spell; at
	// least 1. Default (0 at every level): RequestsPerSecond rounded up,
	// one second's worth.
	Burst int

	// Wait is the longest a request waits for its turn, served in order;
	// Off (0 in files) fails a request beyond the limit at once.
	// Default: Off.
	Wait time.Duration

	// Store is where the limit is kept: StoreLocal (this replica's token
	// bucket) or StoreRedis (shared by the fleet; needs Config.Redis.URL);
	// "" inherits. Default: StoreLocal.
	Store string

	// OnStoreError is what the redis store does with a call whose check
	// failed or took longer than StoreTimeout: OnStoreErrorLocal (a token
	// bucket of this replica, LocalShare of the rate, until Redis answers
	// again), OnStoreErrorAllow (no limit) or OnStoreErrorDeny (refuse the
	// call); "" inherits. The local store does not read it.
	// Default: OnStoreErrorLocal.
	OnStoreError string

	// LocalShare is the share of RequestsPerSecond and Burst that the
	// fallback bucket of OnStoreErrorLocal holds, above 0 and at most 1: a
	// fleet of N replicas that all fall back sends up to N × LocalShare
	// times the rate. 0 inherits. Default: 1.
	LocalShare float64

	// StoreTimeout bounds each check of the redis store, from the call's
	// arrival to Redis's answer; a slower check is a store error. Separate
	// from Config.Redis.Timeout, which bounds the response cache's round
	// trips. Positive; 0 inherits. Default: DefaultRateLimitStoreTimeout.
	StoreTimeout time.Duration
}

// The values of RateLimitSettings.Store (StoreRedis is the response
// cache's too) and of RateLimitSettings.OnStoreError.
const (
	StoreLocal = "local"

	OnStoreErrorLocal = "local"
	OnStoreErrorAllow = "allow"
	OnStoreErrorDeny  = "deny"
)

// limitStores and onStoreErrors are the values of RateLimitSettings.Store
// and RateLimitSettings.OnStoreError.
var (
	limitStores   = []string{StoreLocal, StoreRedis}
	onStoreErrors = []string{OnStoreErrorLocal, OnStoreErrorAllow, OnStoreErrorDeny}
)

// DefaultRateLimitStoreTimeout is RateLimitSettings.StoreTimeout's default.
const DefaultRateLimitStoreTimeout = 20 * time.Millisecond

// Codecs of RequestCompressionSettings.Codec; gzip and zstd are also the
// content codings of Settings.Decompression. CodecGzip and CodecZstd are
// middleware's, by the same names: one vocabulary.
const (
	CodecOff  = "off"
	CodecGzip = defaults.CodecGzip // "gzip"
	CodecZstd = defaults.CodecZstd // "zstd"
)

// DefaultCompressMinBytes is RequestCompressionSettings.MinBytes's
// default: 1024, middleware's DefaultCompressMinBytes by the same name.
const DefaultCompressMinBytes = defaults.CompressMinBytes

// On reports whether s compresses request bodies.
func (s RequestCompressionSettings) On() bool {
	return s.Codec == CodecGzip || s.Codec == CodecZstd
}

// On reports whether s limits the rate.
func (s RateLimitSettings) On() bool { return s.RequestsPerSecond > 0 }

// EffectiveBurst is Burst, or RequestsPerSecond rounded up (at least 1)
// when Burst is zero.
func (s RateLimitSettings) EffectiveBurst() int {
	if s.Burst > 0 {
		return s.Burst
	}
	return max(1, int(math.Ceil(s.RequestsPerSecond)))
}

// BreakerSettings configure a source schema's circuit breaker
// (middleware.Breaker): once MinRequests outcomes in Window are
// FailureRatio failures or more, the breaker opens and calls fail at once,
// unsent (fault.ErrCircuitOpen); after OpenFor, HalfOpenRequests trial
// calls go through, and their outcome closes or reopens it. A failure is a
// transport error, a header or request timeout, or one of Statuses; a call
// whose caller left counts as neither. Every zero field inherits.
type BreakerSettings struct {
	// Enabled switches the breaker on. Default: Disabled.
	Enabled Toggle

	// FailureRatio is the share of failures, in (0, 1], that opens the
	// breaker. Default: 0.5.
	FailureRatio float64

	// MinRequests is how many outcomes the window must hold before the
	// breaker may open; at least 1. Default: 20.
	MinRequests int

	// Window is the rolling window of the counts (ten buckets of a tenth
	// each); at least MinBreakerWindow (10ms). Default: 10s.
	Window time.Duration

	// OpenFor is how long the breaker stays open before its trial calls;
	// positive. Default: 5s.
	OpenFor time.Duration

	// HalfOpenRequests is how many trial calls a half-open breaker lets
	// through; at least 1. Default: 1.
	HalfOpenRequests int

	// Statuses lists the response statuses that count as failures. Nil
	// means the default; an empty, non-nil list (YAML `statuses: []`)
	// means that no status counts. Default: 500, 502, 503, 504.
	Statuses []int
}

// OutlierSettings configure outlier ejection (sockets path), as Envoy's
// outlier_detection names and defaults them: an address of a source
// schema that fails ConsecutiveFailures times in a row (a connect error, a
// reset, a timeout or a 5xx answer) gets no request for BaseEjection times
// the number of times it was ejected (at most MaxEjection); at most
// MaxEjectionPercent of the schema's addresses are out at once (at least
// one may be), and at least one address always stays in service. Every
// zero field inherits.
type OutlierSettings struct {
	// Enabled switches ejection on. It acts only on a host with two
	// addresses or more. Default: Enabled.
	Enabled Toggle

	// ConsecutiveFailures is how many failures in a row eject an address;
	// at least 1. Default: 5 (Envoy's consecutive_5xx).
	ConsecutiveFailures int

	// Interval is how often an address back in service earns one ejection
	// off its multiplier, as Envoy's sweep does; positive. Default: 10s.
	Interval time.Duration

	// BaseEjection is how long an address's first ejection lasts; each
	// further one lasts that much more; positive. Default: 30s.
	BaseEjection time.Duration

	// MaxEjection bounds one ejection; positive. Default: 300s (Envoy's
	// max_ejection_time).
	MaxEjection time.Duration

	// MaxEjectionPercent is the most of a schema's addresses, in percent
	// (1 to 100), that may be ejected at once; one address may always be.
	// Default: 10.
	MaxEjectionPercent int
}

// HedgeSettings configure hedged queries (middleware.Hedge): a query
// without response headers after Delay is sent once more, up to MaxExtra
// more times; the first answer wins and the others are cancelled. Hedges
// spend the retry budget. Mutations and subscriptions are never hedged.
// Every zero field inherits.
type HedgeSettings struct {
	// Enabled switches hedging on. Default: Disabled.
	Enabled Toggle

	// Delay is the wait before a hedge: a duration, or a quantile of the
	// schema's recent times to headers. Default: p95.
	Delay HedgeDelay

	// MaxExtra is how many more times a query may be sent; from 1 to 16
	// (middleware.MaxHedgeExtra). Default: 1.
	MaxExtra int
}

// HedgeDelay is the hedge delay: After (files: "50ms") or, when Quantile
// is set, that quantile of the schema's last 1024 times to response
// headers (files: "p95", "p99.9"), with no hedge until 20 samples are in.
// The zero HedgeDelay inherits.
type HedgeDelay struct {
	// After is a fixed delay; used when Quantile is zero. Default: 0.
	After time.Duration
	// Quantile is in (0, 1): 0.95 for "p95". Default: 0.
	Quantile float64
}

// String spells d as a file does: "50ms", "p95", "p99.9".
func (d HedgeDelay) String() string {
	if d.Quantile > 0 {
		return "p" + strconv.FormatFloat(d.Quantile*100, 'f', -1, 64)
	}
	if d.After == 0 {
		return "inherit"
	}
	return d.After.String()
}

// RatioOff, as RetrySettings.BudgetRatio, turns the retry budget off
// (files: "off"); zero inherits.
const RatioOff = -1.0

// HTTP2Settings are the HTTP/2 settings of a source schema.
type HTTP2Settings struct {
	// PingInterval is how long a connection may stay silent before a
	// keep-alive PING is sent. Off: no pings. Default: off.
	PingInterval time.Duration

	// PingTimeout is how long to wait for a PING's answer before the
	// connection is closed. Default: 15s.
	PingTimeout time.Duration

	// MultipleConnections lets a source schema open another connection
	// when an HTTP/2 connection is at the server's stream limit; Disabled
	// makes requests wait for a stream instead. Default: Enabled.
	MultipleConnections Toggle
}

// TLSSettings are the TLS client settings of a source schema.
type TLSSettings struct {
	// CAFile is a PEM file of CA certificates trusted instead of the
	// system's. Default: the system roots.
	CAFile string

	// CertFile and KeyFile are a PEM client certificate and key, for mTLS.
	// Both or neither. Default: none.
	CertFile, KeyFile string

	// ServerName overrides the name checked against the server's
	// certificate and sent in SNI. Default: the URL's host.
	ServerName string

	// MinVersion and MaxVersion bound the TLS version: "1.2" or "1.3".
	// Default: Go's (1.2 to 1.3).
	MinVersion, MaxVersion string

	// InsecureSkipVerify turns certificate verification OFF: anyone on the
	// path can read and change the traffic. For tests only; the path logs
	// a warning at startup. Default: Disabled.
	InsecureSkipVerify Toggle
}

// HeaderSettings are header rules of a source schema, applied on both
// paths after the forwarded names.
type HeaderSettings struct {
	// Forward names gateway request headers to forward, in addition to
	// the forward_headers lists. Default: none.
	Forward []string

	// ForwardMatching holds regular expressions (RE2, matched against the
	// canonical header name, anchored by the user) of gateway request
	// headers to forward. Default: none.
	ForwardMatching []string

	// Rename forwards the gateway header named by a key under the name of
	// its value, e.g. X-User -> X-Source-User. Default: none.
	Rename map[string]string

	// Set adds static headers to every request. A header the caller set
	// wins. Default: none.
	Set map[string]string

	// MaxForwardedBytes bounds the bytes that the rules above add to one
	// request, counted per header line as it goes on the wire: name, ": ",
	// value and CRLF, so name + value + 4 per value; a request over it
	// fails before anything is sent, naming the header where it went over.
	// NoLimit (0 in files): no bound. Default: DefaultMaxForwardedHeaderBytes
	// (64 KiB).
	MaxForwardedBytes int
}

// RetrySettings configure retries of queries (never mutations or
// subscriptions).
type RetrySettings struct {
	// MaxAttempts is the number of tries, the first included; 1 does not
	// retry. Default: 1.
	MaxAttempts int

	// WaitMin and WaitMax bound the backoff between tries; a Retry-After
	// answer is honoured up to WaitMax. Defaults: 100ms and 2s.
	WaitMin, WaitMax time.Duration

	// Statuses lists the response statuses that are retried.
	// Default: 429, 502, 503, 504.
	Statuses []int

	// BudgetRatio bounds the retries and hedges of the schema: over a
	// sliding 10s they stay at most BudgetRatio times the first tries plus
	// BudgetMinPerSecond × 10; past it a failure is returned as it is.
	// RatioOff (off in files) turns the budget off; any positive number
	// is a ratio (1 allows a retry per first try). Default: 0.2.
	BudgetRatio float64

	// BudgetMinPerSecond is the budget's floor: retries per second allowed
	// whatever the first tries. NoLimit (0 in files) means no floor.
	// Default: 10.
	BudgetMinPerSecond int
}

// Toggle is a setting that can be switched on or off, or inherited.
type Toggle int8

const (
	// Inherit, the zero Toggle, takes the value from the parent.
	Inherit Toggle = 0
	// Enabled switches the setting on.
	Enabled Toggle = 1
	// Disabled switches the setting off.
	Disabled Toggle = -1
)

// On reports whether t is Enabled.
func (t Toggle) On() bool { return t == Enabled }

func (t Toggle) String() string {
	switch t {
	case Enabled:
		return "true"
	case Disabled:
		return "false"
	}
	return "inherit"
}

// ShadowSettings configure shadow comparison. A zero field means the
// default.
type ShadowSettings struct {
	// Rate is the share of queries also sent through the sockets path, in
	// (0, 1]. Zero: shadow comparison is off.
	Rate float64

	// MaxConcurrent bounds the comparisons in flight; a sampled query that
	// finds them all busy is not shadowed (and is counted as dropped).
	// Default: 4.
	MaxConcurrent int

	// MaxBodyBytes bounds each response body kept for a comparison; a
	// comparison with a longer body is dropped and counted. Default: 1 MiB.
	MaxBodyBytes int64

	// Timeout bounds a shadow request, body included. Default: 10s.
	Timeout time.Duration
}

// Defaults of ShadowSettings (and of shadow.Options, which reads them from
// here).
const (
	DefaultShadowMaxConcurrent = 4
	DefaultShadowMaxBodyBytes  = 1 << 20
	DefaultShadowTimeout       = 10 * time.Second
)

// EffectiveShadow returns the shadow settings with defaults applied.
func (c Config) EffectiveShadow() ShadowSettings {
	s := c.Shadow
	if s.MaxConcurrent <= 0 {
		s.MaxConcurrent = DefaultShadowMaxConcurrent
	}
	if s.MaxBodyBytes <= 0 {
		s.MaxBodyBytes = DefaultShadowMaxBodyBytes
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultShadowTimeout
	}
	return s
}

// LegacySettings are read by the legacy path only.
type LegacySettings struct {
	// HandlerLifetime is how often the legacy path replaces its shared
	// http.Transport, so that DNS changes are picked up; the old one
	// closes its idle connections once its in-flight requests end. Off never
	// rotates. Default: 2m.
	HandlerLifetime time.Duration
}

// Effective returns the settings source schema name runs with: its own
// values, then Config.Defaults, then the built-in defaults, key by key. The
// boolean is false when the schema is not configured.
func (c Config) Effective(name string) (Settings, bool) {
	s, ok := c.SourceSchemas[name]
	if !ok {
		return Settings{}, false
	}
	return resolve(s.Settings.inherit(c.Defaults)), true
}

// resolve applies the built-in defaults, then those that depend on other
// settings.
func resolve(s Settings) Settings {
	s = s.inherit(builtin)
	if s.ConnLifetimeJitter == 0 {
		s.ConnLifetimeJitter = setting.Bound(s.ConnLifetime) / 10
		if s.ConnLifetimeJitter == 0 {
			s.ConnLifetimeJitter = Off
		}
	}
	return s
}

// EffectiveLegacy returns the legacy settings with built-in defaults applied.
func (c Config) EffectiveLegacy() LegacySettings {
	l := c.Legacy
	if l.HandlerLifetime == 0 {
		l.HandlerLifetime = DefaultHandlerLifetime
	}
	return l
}

// EffectiveDefaults returns Config.Defaults with the built-in defaults applied:
// the settings of the legacy path's shared transport.
func (c Config) EffectiveDefaults() Settings {
	return resolve(c.Defaults)
}

// EffectivePath returns the selected path, PathLegacy when Path is empty.
func (c Config) EffectivePath() Path {
	if c.Path == "" {
		return PathLegacy
	}
	return c.Path
}

// Equal reports whether s and o are the same settings.
func (s Settings) Equal(o Settings) bool { return reflect.DeepEqual(s, o) }

var builtin = Settings{
	ConnectTimeout:     DefaultConnectTimeout,
	ConnLifetime:       DefaultConnLifetime,
	IdleConnTimeout:    DefaultIdleConnTimeout,
	MaxConnsPerHost:    NoLimit, // as Load resolves it, so that resolved settings compare equal
	MaxPendingRequests: DefaultMaxPendingRequests,
	DNSRefresh:         DefaultDNSRefresh,
	OutlierDetection: OutlierSettings{
		Enabled:             Enabled,
		ConsecutiveFailures: 5,
		Interval:            10 * time.Second,
		BaseEjection:        30 * time.Second,
		MaxEjection:         300 * time.Second,
		MaxEjectionPercent:  10,
	},
	KeepAlive: 15 * time.Second,

	MaxResponseHeaderBytes: DefaultMaxResponseHeaderBytes,
	HeaderTimeout:          DefaultHeaderTimeout,
	RequestTimeout:         Off,
	TLSHandshakeTimeout:    10 * time.Second,
	Engine:                 EngineH1,
	HTTPVersion:            "2",
	VersionPolicy:          "or_lower",
	HTTP2: HTTP2Settings{
		PingInterval:        Off,
		PingTimeout:         15 * time.Second,
		MultipleConnections: Enabled,
	},
	TLS:           TLSSettings{InsecureSkipVerify: Disabled},
	Proxy:         "off",
	Decompression: []string{},
	Headers:       HeaderSettings{MaxForwardedBytes: DefaultMaxForwardedHeaderBytes},
	Retry: RetrySettings{
		MaxAttempts: 1,
		// The values middleware's defaults also read (internal/defaults):
		// middleware works without env, and env links no middleware.
		WaitMin:  defaults.RetryWaitMin,
		WaitMax:  defaults.RetryWaitMax,
		Statuses: defaults.RetryStatuses(),

		BudgetRatio:        defaults.BudgetRatio,
		BudgetMinPerSecond: defaults.BudgetMinPerSecond,
	},
	Dedupe: Disabled,
	CircuitBreaker: BreakerSettings{
		Enabled:          Disabled,
		FailureRatio:     defaults.BreakerFailureRatio,
		MinRequests:      defaults.BreakerMinRequests,
		Window:           defaults.BreakerWindow,
		OpenFor:          defaults.BreakerOpenFor,
		HalfOpenRequests: defaults.BreakerHalfOpenRequests,
		Statuses:         defaults.BreakerStatuses(),
	},
	Hedge: HedgeSettings{
		Enabled:  Disabled,
		Delay:    HedgeDelay{Quantile: 0.95},
		MaxExtra: defaults.HedgeMaxExtra,
	},
	RequestCompression: RequestCompressionSettings{
		Codec:    CodecOff,
		MinBytes: DefaultCompressMinBytes,
	},
	RateLimit: RateLimitSettings{
		RequestsPerSecond: RatioOff,
		Wait:              Off,
		Store:             StoreLocal,
		OnStoreError:      OnStoreErrorLocal,
		LocalShare:        1,
		StoreTimeout:      DefaultRateLimitStoreTimeout,
	},
	ResponseCache: ResponseCacheSettings{
		Enabled:       Disabled,
		Mode:          CacheModeOn,
		Store:         StoreMemory,
		MaxBytes:      DefaultCacheMaxBytes,
		MaxEntryBytes: DefaultCacheMaxEntryBytes,
		DefaultTTL:    Off,
		MaxTTL:        DefaultCacheMaxTTL,
		StaleIfError:  Off,
		LocalMaxBytes: NoLimit,
		LocalTTL:      DefaultCacheLocalTTL,
		Shared:        Disabled,
		Vary:          []string{},
	},
	PersistedQueries: PersistedQueriesSettings{
		Mode:        PersistedQueriesOff,
		GET:         Disabled,
		MaxURLBytes: DefaultPersistedQueryMaxURLBytes,
	},
}

// inherit fills the unset fields of s from parent, key by key.
func (s Settings) inherit(parent Settings) Settings {
	for _, f := range settingFields {
		f.inherit(&s, &parent)
	}
	return s
}
