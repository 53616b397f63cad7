package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/fleetlimit"
	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/shadow"
	"github.com/fusiongo/transport/sockets"
	"github.com/fusiongo/transport/telemetry"
)

// Option configures New.
type Option func(*options)

// options are New's settings. Each is fixed for the invoker's life.
type options struct {
	logger     *slog.Logger
	lookupEnv  func(string) (string, bool)
	middleware []func(http.RoundTripper) http.RoundTripper
	schemas    map[string]SchemaOptions

	shadowPublisher shadow.Publisher
	shadowComparer  shadow.Comparer
	telemetry       *telemetry.Telemetry
	meters          *meters.Set // the instruments of telemetry (nil without): see meters.Of
	requestLog      *slog.Logger

	resolver       sockets.Resolver      // see WithResolver; nil: net.DefaultResolver
	canaryHook     func(canary.Event)    // see WithCanaryHook (canary.go)
	resilienceHook func(ResilienceEvent) // see WithResilienceHook (resilience.go)

	rolloutFlags RolloutFlags   // see WithRollout (rollout.go); nil: the startup switch alone
	rollout      RolloutOptions // WithRollout's settings, before defaults
	rolloutSet   bool           // WithRollout was given (checkRollout refuses nil flags)

	// queueHook is set by tests only (WithQueueHook, export_test.go); it
	// becomes backend.Schema.OnQueue.
	queueHook func(ctx context.Context, event backend.QueueEvent)

	// dedupeJoined is set by tests only (WithDedupeJoinedHook,
	// export_test.go): dedupe calls it each time a caller has joined a
	// call, with the number of callers now waiting on it.
	dedupeJoined func(waiters int)

	// cacheClock is set by tests only (WithCacheClock, export_test.go):
	// the response caches' clock, so that a test ages an entry without
	// waiting. Nil: time.Now.
	cacheClock func() time.Time
	// cacheHook is set by tests only (WithCacheEventHook, export_test.go):
	// called with every response cache event after the telemetry.
	cacheHook func(schema, kind, reason string)

	// redisPause is set by tests only (WithRedisPause, export_test.go):
	// how long the Redis client's breaker pauses it. Zero: its default.
	redisPause time.Duration
	// limitHook is set by tests only (WithRateLimitEventHook,
	// export_test.go): called with every event of a shared rate limit
	// after the telemetry.
	limitHook func(schema string, ev fleetlimit.Event)
}

// SchemaOptions are the Go-only settings of one source schema, the ones a
// file cannot hold: a dial function, a TLS verification callback, a
// RoundTripper that replaces the path's transport (for tests and
// in-process source schemas), middleware, and computed headers. The zero
// value changes nothing. Each field names the paths that honour it.
type SchemaOptions struct {
	// Dial opens the source schema's connections instead of the default
	// dialer (both paths), bounded by connect_timeout. Nil: a net.Dialer
	// with connect_timeout and keep_alive, or the unix_socket if
	// configured (sockets path).
	//
	// On the legacy path the shared transport dials with it every
	// connection to the host and port of the schema's URL, whichever
	// request it carries (another schema's redirect to that host
	// included), and no other. So New and Reload refuse, naming the
	// schema, a Dial on a schema whose URL the environment's proxy
	// applies to (the shared transport would dial the proxy), and a
	// second one at a host and port where another schema has one (the
	// shared transport keeps one pool per host and port). A reload that
	// changes which schemas have hooks where starts a new shared
	// transport for the requests after it.
	//
	// Before it reuses an idle connection, engine h1 looks at its socket
	// (a non-blocking MSG_PEEK) to see whether the server closed it or
	// wrote to it; so it must find the socket under what Dial returns: a
	// syscall.Conn (a *net.TCPConn or *net.UnixConn, as dialled), or a
	// wrapper with a method NetConn() net.Conn that returns the
	// connection it wraps, looked at the same way, through up to 8
	// wrappers. A wrapper that shows its connection so must read and
	// write through it and hold back no byte it read (a *tls.Conn holds
	// back records, so it is not looked through). Where no socket is
	// found (a struct that embeds net.Conn and has no NetConn method, a
	// pipe; and every connection where the platform has no MSG_PEEK),
	// each connection carries one request, which asks the server to
	// close it (Connection: close), and the sockets path logs that once
	// per pool, at Info, naming the schema. Engine nethttp needs no
	// socket (its guard is net/http's reader), but uses one it finds the
	// same way.
	//
	// Dial decides where the schema's connections go: it is called with
	// the host and port of the schema's URL, as without addresses, and the
	// pool neither resolves the host (dns_refresh, WithResolver) nor
	// spreads over its addresses nor ejects one (outlier_detection).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// VerifyConnection is called after the TLS handshake and certificate
	// verification (both paths), as tls.Config.VerifyConnection: a
	// non-nil error aborts the connection, before any request is sent on
	// it. Nil: none.
	//
	// On the legacy path the shared transport calls it for every TLS
	// connection to the host and port of the schema's URL, whichever
	// request opens it (another schema's redirect to that host
	// included), and for no other; where several schemas share a host
	// and port, a connection must pass each of their hooks. New and
	// Reload refuse it, naming the schema, on a schema whose URL the
	// environment's proxy applies to (net/http then makes the handshake
	// through the proxy, where no hook is known).
	VerifyConnection func(tls.ConnectionState) error

	// RoundTripper replaces the path's own transport for this source
	// schema (both paths): tests route calls to an in-process handler with
	// it. Header rules, timeouts and middleware still apply; on the legacy
	// path redirects are still followed. It sends, so dedupe's key cannot
	// see what it adds to a request: credentials that differ per caller
	// belong in AttemptMiddleware, not here. It dials nothing itself, so
	// New refuses it beside Dial or VerifyConnection, naming the schema
	// and the field. Nil: the path's transport.
	RoundTripper http.RoundTripper

	// Middleware wraps this source schema's requests, the first entry
	// outermost, inside the global middleware (WithMiddleware) and outside
	// dedupe and retry: it sees each call once. Nil: none.
	Middleware []func(http.RoundTripper) http.RoundTripper

	// AttemptMiddleware wraps each attempt of this source schema's
	// requests, the first entry outermost (both paths, every engine): it
	// runs inside retry and hedge, once per attempt (the first try, each
	// retry, each hedge), where Middleware runs once per call. The place
	// for middleware.Token, so that every attempt carries a token fetched
	// for it. It sits inside the circuit breaker and the rate limit, so an
	// attempt they refuse, unsent, never reaches it (Token fetches no
	// token for it) and a token fetched after a rate-limit wait is fresh;
	// and outside the backend's own middleware (decompression). An error
	// it returns is the attempt's own: retry may try again, the breaker
	// counts it as a failure as it would the transport's, and the attempt
	// has taken its rate-limit turn. It sees the body compressed when
	// request_compression is on. On the legacy path it runs on each
	// redirect hop, as the whole pipeline does.
	//
	// With dedupe on, it also runs once for each query that could be
	// shared, before the query goes on, as dedupe's key probe: under a
	// context that middleware.IsKeyProbe reports, on the uncompressed body,
	// and over an end that sends nothing and returns an error. Dedupe keys
	// the request that comes out, so two callers share an answer only if
	// their attempts would carry the same headers and body: a Token whose
	// value depends on the caller keeps users apart. A query whose probe
	// fails (a TokenFunc error) goes alone, and its attempt fails as it
	// would. A middleware may skip its effects beyond the request (counts,
	// logs, waits) in the probe; a value it makes new for each request (a
	// nonce) keeps every call from sharing. Nil: none.
	AttemptMiddleware []func(http.RoundTripper) http.RoundTripper

	// HeaderValues computes headers per request from the gateway request,
	// after the configured header rules (both paths): the key is the
	// header's name, the function its value. Nil: none.
	HeaderValues map[string]HeaderValueFunc
}

// HeaderValueFunc computes one header's value for a source schema request
// from gateway, the incoming gateway request (nil when the context carries
// none; see Middleware and WithGatewayRequest). It returns false to send
// no such header. It is called once per request and attempt, concurrently.
type HeaderValueFunc func(ctx context.Context, gateway *http.Request) (value string, ok bool)

// WithSchemaOptions sets the Go-only settings of source schema name. A
// later call for the same name replaces an earlier one. They hold for the
// invoker's life: Reload keeps them. Options for a name the configuration
// in force does not have are kept for a Reload that adds it, and New and
// every such Reload log a warning naming it (a misspelt name would
// otherwise lose its token, dial hook or pin without a word).
func WithSchemaOptions(name string, so SchemaOptions) Option {
	return func(o *options) {
		if o.schemas == nil {
			o.schemas = map[string]SchemaOptions{}
		}
		o.schemas[name] = so
	}
}

// WithMiddleware wraps every source schema's requests in mws, the first
// outermost, outside each schema's own middleware. On the legacy path they
// run inside the schema's http.Client, so once per redirect hop.
func WithMiddleware(mws ...func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.middleware = append(o.middleware, mws...) }
}

// WithResolver makes the sockets path resolve the hosts of its source
// schemas with r, when it starts a pool, every dns_refresh, and when every
// known address of a host failed to connect: for tests, and for users
// with their own discovery. r must be safe for concurrent use; a lookup is
// bounded at 5 s, and a failed or empty answer keeps the addresses known.
// It does not apply to a schema with a SchemaOptions.Dial hook, a
// unix_socket, a proxy, a host written as an IP address, or dns_refresh
// off. Default: net.DefaultResolver (a *net.Resolver satisfies
// sockets.Resolver).
func WithResolver(r sockets.Resolver) Option {
	return func(o *options) { o.resolver = r }
}

// WithLogger sets the logger of the invoker. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithLookupEnv sets how the proxy variables (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY, their lower-case forms, and REQUEST_METHOD for the CGI rule)
// are read: by the legacy path always, by the sockets path for source
// schemas with proxy: environment. Default: os.LookupEnv, read once when a
// transport is built.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = lookup }
}

// WithRequestLog logs every source schema request to l: one record per
// request at Debug (at Warn when it failed), with a source_schema
// attribute, the method, the redacted URL without its query, the status
// and the duration; never a header or a body. Default: no request log.
func WithRequestLog(l *slog.Logger) Option {
	return func(o *options) { o.requestLog = l }
}

// WithTelemetry traces and measures every source schema request with t
// (OpenTelemetry; see package telemetry), and records in t's instruments
// what the transport does: its connections and addresses, reloads, the
// canary's share, breakers, retry budgets, hedges, ejections, compression,
// rate limits, the runtime rollout's fallbacks, and in shadow mode the
// comparisons, mismatches and drops
// (beside WithShadowPublisher's Publisher, not instead of it). Each
// measurement that a request causes carries that request's context; the
// package telemetry doc lists the metrics. Default: none.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return func(o *options) { o.telemetry, o.meters = t, meters.Of(t) }
}

// WithShadowPublisher sets where shadow comparison reports mismatches and
// counts (FUSION_SOCKETS_TRANSPORT=shadow). Default: a shadow.LogPublisher
// on the invoker's logger. Combine several with shadow.Multi. For metrics,
// WithTelemetry counts the comparisons whatever the Publisher.
func WithShadowPublisher(p shadow.Publisher) Option {
	return func(o *options) { o.shadowPublisher = p }
}

// WithShadowComparer sets how shadow comparison compares a source schema's
// two answers (FUSION_SOCKETS_TRANSPORT=shadow); compare.ShadowComparer
// compares by compare.Rules. Default (nil): the default shadow.Comparer,
// which reports what the zero compare.Rules do.
func WithShadowComparer(c shadow.Comparer) Option {
	return func(o *options) { o.shadowComparer = c }
}

// unknownSchemaOptions returns an error naming every source schema (in
// order) that has SchemaOptions but is not in cfg, wrapping
// fault.ErrUnknownSchema; nil if there is none.
func unknownSchemaOptions(schemas map[string]SchemaOptions, cfg *env.Config) error {
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		if _, ok := cfg.SourceSchemas[name]; !ok {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if missing == nil {
		return nil
	}
	return fmt.Errorf("WithSchemaOptions for %s: the configuration has no such source schema (it has %s): %w",
		strings.Join(missing, ", "), strings.Join(slices.Sorted(maps.Keys(cfg.SourceSchemas)), ", "), fault.ErrUnknownSchema)
}

// warnUnknownSchemaOptions logs, at Warn, the source schemas that have
// options but are not in cfg: kept for a reload that adds them, and said
// so, since a misspelt name is the usual cause.
func (inv *Transport) warnUnknownSchemaOptions(cfg *env.Config) {
	if err := unknownSchemaOptions(inv.o.schemas, cfg); err != nil {
		inv.log.Warn("source schema options unused until a reload adds the schema (is its name misspelt?)", "error", err)
	}
}

// errHookUnused is the cause of a SchemaOptions hook that RoundTripper,
// which replaces the transport that would call it, leaves unused.
var errHookUnused = errors.New("it has no effect with SchemaOptions.RoundTripper, which replaces the transport that would call it: set one of the two")

// unusedSchemaHooks returns an error naming the first (by schema name)
// source schema whose SchemaOptions set Dial or VerifyConnection beside
// RoundTripper: a certificate pin or a dial hook that would never run is
// refused rather than dropped in silence.
func unusedSchemaHooks(schemas map[string]SchemaOptions) error {
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		so := schemas[name]
		if so.RoundTripper == nil {
			continue
		}
		if so.Dial != nil {
			return fmt.Errorf("source schema %q: SchemaOptions.Dial: %w", name, errHookUnused)
		}
		if so.VerifyConnection != nil {
			return fmt.Errorf("source schema %q: SchemaOptions.VerifyConnection: %w", name, errHookUnused)
		}
	}
	return nil
}
