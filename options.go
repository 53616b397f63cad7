package transport

import (
	"log/slog"
	"net/http"

	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/shadow"
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
	shadowRules     compare.Rules
	telemetry       *telemetry.Telemetry
	requestLog      *slog.Logger

	canaryHook func(canary.Event) // see WithCanaryHook (canary.go)
}

// SchemaOptions are the Go-only settings of one source schema, the ones a
// file cannot hold: a dial function, a TLS verification callback, a
// RoundTripper that replaces the path's transport (for tests and
// in-process source schemas), middleware, and computed headers. The zero
// value changes nothing. See each field for the paths that honour it.
//
// A Dial hook that wraps its connection (to count bytes, log, trace)
// should give the wrapper a method NetConn() net.Conn returning the
// connection it wraps: engine h1 looks at the socket under it before it
// reuses an idle connection, and without one each connection carries one
// request (see Dial).
type SchemaOptions = backend.SchemaOptions

// WithSchemaOptions sets the Go-only settings of source schema name. A
// later call for the same name replaces an earlier one. They hold for the
// invoker's life: Reload keeps them.
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
// (OpenTelemetry; see package telemetry), observes the sockets path's open
// and idle connections and counts reloads. Default: none.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return func(o *options) { o.telemetry = t }
}

// WithShadowPublisher sets where shadow comparison reports mismatches and
// counts (FUSION_SOCKETS_TRANSPORT=shadow). Default: a shadow.LogPublisher
// on the invoker's logger. Combine several with shadow.Multi.
func WithShadowPublisher(p shadow.Publisher) Option {
	return func(o *options) { o.shadowPublisher = p }
}

// WithShadowRules sets what shadow comparison leaves out and how it
// compares a source schema's answers. Default: the zero compare.Rules.
func WithShadowRules(r compare.Rules) Option {
	return func(o *options) { o.shadowRules = r }
}
