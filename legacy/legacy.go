// Package legacy is the stack most Go gateways run today, kept as the
// default path: one http.Client shared by every source schema, on one shared
// transport with Go's defaults — the environment's proxy (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY), transparent gzip decompression, redirects followed
// by the client's policy — with header propagation as a RoundTripper
// middleware, and the shared transport replaced every handler_lifetime as
// IHttpClientFactory rotates its handlers.
//
// Most users reach it through transport.New; it is what runs unless
// FUSION_SOCKETS_TRANSPORT selects the sockets path.
package legacy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/headers"
	"github.com/fusiongo/transport/internal/hooks"
	"github.com/fusiongo/transport/middleware"
	"github.com/fusiongo/transport/telemetry"
)

// Options are the Go-only settings of the legacy path.
type Options struct {
	// Logger receives reload and rotation events. Nil: slog.Default().
	Logger *slog.Logger
	// LookupEnv reads the proxy variables once, in New. Nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// Middleware wraps every source schema's requests inside the shared
	// client, after header propagation, the first entry outermost. It runs
	// on every redirect hop. Nil: none.
	Middleware []hooks.Middleware

	// Telemetry, if set, traces and measures every source schema request
	// (once per redirect hop, since it runs inside the shared client) and
	// counts reloads. Nil: none.
	Telemetry *telemetry.Telemetry

	// RequestLog, if set, logs every source schema request (once per
	// redirect hop) with a source_schema attribute, inside telemetry.
	// Nil: no request log.
	RequestLog *slog.Logger

	// Schemas holds the Go-only settings per source schema name. The
	// legacy path honours RoundTripper, Middleware and HeaderValues; Dial
	// and VerifyConnection belong to the shared transport and are ignored.
	// Nil: none.
	Schemas map[string]SchemaHooks
}

// SchemaHooks are the Go-only settings of one source schema.
type SchemaHooks = hooks.Schema

// ErrClosed is returned by an Invoker after Close.
var ErrClosed = errors.New("transport closed")

// ErrUnknownSchema is wrapped by the error for a request to a source schema
// that the configuration does not name.
var ErrUnknownSchema = errors.New("unknown source schema")

// Invoker is the legacy path. Its zero value is not usable: call New.
type Invoker struct {
	log    *slog.Logger
	opts   Options
	client *http.Client
	rot    *rotator
	state  atomic.Pointer[state]
	mu     sync.Mutex // serialises Reload and Close
}

type state struct {
	schemas map[string]*schema
}

// schema is what the legacy path keeps of one source schema: everything
// else lives in the shared client.
type schema struct {
	name           string
	url            *url.URL
	post           *http.Request
	rules          headers.Rules
	headerTimeout  time.Duration
	requestTimeout time.Duration
	rt             http.RoundTripper // the schema's middleware around the shared transport
}

// New builds the legacy path for cfg. It fails if cfg is invalid.
func New(cfg env.Config, opts Options) (*Invoker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	inv := &Invoker{log: opts.Logger, opts: opts}
	if inv.log == nil {
		inv.log = slog.Default()
	}
	inv.rot = newRotator(cfg, proxyFromEnv(lookup), inv.log)
	inv.client = &http.Client{
		// The propagation middleware sits in the client's pipeline, above
		// the shared (rotating) transport, and sees every redirect hop.
		Transport: &propagator{next: inv.rot},
		// Jar nil and Timeout zero: Go's defaults. CheckRedirect nil:
		// up to 10 redirects are followed.
	}
	st, err := inv.buildState(cfg)
	if err != nil {
		return nil, err
	}
	inv.state.Store(st)
	return inv, nil
}

func (inv *Invoker) buildState(cfg env.Config) (*state, error) {
	st := &state{schemas: make(map[string]*schema, len(cfg.SourceSchemas))}
	for name, sc := range cfg.SourceSchemas {
		settings, _ := cfg.Effective(name)
		hk := inv.opts.Schemas[name]
		u, _ := url.Parse(sc.URL) // Validate checked it
		rules, err := headers.New(headers.Spec{
			Forward:  slices.Concat(cfg.ForwardHeaders, sc.ForwardHeaders, settings.Headers.Forward),
			Matching: settings.Headers.ForwardMatching,
			Rename:   settings.Headers.Rename,
			Set:      settings.Headers.Set,
			Values:   hk.HeaderValues,
		})
		if err != nil {
			return nil, fmt.Errorf("source_schemas.%s.headers: %w", name, err)
		}
		var core http.RoundTripper = inv.rot
		if hk.RoundTripper != nil {
			core = hk.RoundTripper
		}
		st.schemas[name] = &schema{
			name:           name,
			url:            u,
			post:           gqlhttp.Template(u),
			rules:          rules,
			headerTimeout:  env.Bound(settings.HeaderTimeout),
			requestTimeout: env.Bound(settings.RequestTimeout),
			rt:             hooks.Chain(core, slices.Concat(inv.traced(name), inv.opts.Middleware, hk.Middleware, hooks.Builtins(settings, name, inv.log, rules.Added()))...),
		}
	}
	return st, nil
}

// traced returns the telemetry and request log middleware of a schema, if
// configured.
func (inv *Invoker) traced(name string) []hooks.Middleware {
	var out []hooks.Middleware
	if inv.opts.Telemetry != nil {
		out = append(out, inv.opts.Telemetry.Middleware(name, "legacy"))
	}
	if inv.opts.RequestLog != nil {
		out = append(out, middleware.Logging(inv.opts.RequestLog, name))
	}
	return out
}

type schemaKey struct{}

// Do sends req for source schema name through the shared client, which
// follows redirects and decompresses gzip answers. On an error the request
// body is closed, as http.Client.Do does.
func (inv *Invoker) Do(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		return nil, fmt.Errorf("source schema %q: nil request or URL", name)
	}
	s, err := inv.schema(name)
	if err != nil {
		gqlhttp.CloseBody(req)
		return nil, err
	}
	t := bound.Target{Schema: name, Method: req.Method, URL: req.URL}
	ctx, g := bound.Start(context.WithValue(ctx, schemaKey{}, s), t, s.headerTimeout, s.requestTimeout)
	resp, err := g.Finish(inv.client.Do(req.WithContext(ctx)))
	return result(t, resp, err)
}

// Post sends body to source schema name's URL as a GraphQL-over-HTTP POST.
func (inv *Invoker) Post(ctx context.Context, name string, body []byte) (*http.Response, error) {
	s, err := inv.schema(name)
	if err != nil {
		return nil, err
	}
	t := bound.Target{Schema: name, Method: http.MethodPost, URL: s.url}
	ctx, g := bound.Start(context.WithValue(ctx, schemaKey{}, s), t, s.headerTimeout, s.requestTimeout)
	req := s.post.WithContext(ctx)
	req.Header = gqlhttp.Header(0)
	gqlhttp.SetBody(req, body, true) // http.Client may follow a 307 or 308 with it
	resp, err := g.Finish(inv.client.Do(req))
	return result(t, resp, err)
}

// result names the source schema in an error. http.Client's errors are
// *url.Error already; another error (a header timeout that came just as
// the headers did) is wrapped the same way, so that every error reads
// alike.
func result(t bound.Target, resp *http.Response, err error) (*http.Response, error) {
	if err == nil {
		return resp, nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return nil, fmt.Errorf("source schema %q: %w", t.Schema, err)
	}
	return nil, t.Err(err)
}

func (inv *Invoker) schema(name string) (*schema, error) {
	st := inv.state.Load()
	if st == nil {
		return nil, fmt.Errorf("source schema %q: %w", name, ErrClosed)
	}
	s, ok := st.schemas[name]
	if !ok {
		return nil, fmt.Errorf("source schema %q: %w", name, ErrUnknownSchema)
	}
	return s, nil
}

// Reload applies cfg. Source schema URLs, header lists and header timeouts
// change at once. If the shared transport's settings (Config.Defaults) or
// the handler lifetime changed, the shared transport is replaced now, and
// the old one closes its idle connections once its requests end. An
// invalid cfg leaves the old configuration in force; cfg.Transport is
// ignored.
func (inv *Invoker) Reload(cfg env.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("reload rejected, old configuration kept: %w", err)
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.state.Load() == nil {
		return ErrClosed
	}
	st, err := inv.buildState(cfg)
	if err != nil {
		return fmt.Errorf("reload rejected, old configuration kept: %w", err)
	}
	inv.state.Store(st)
	rotated := inv.rot.reconfigure(cfg)
	if rotated {
		inv.opts.Telemetry.RecordReload(0, 1, 0)
	} else {
		inv.opts.Telemetry.RecordReload(1, 0, 0)
	}
	inv.log.Info("transport reloaded", "path", "legacy", "schemas", len(cfg.SourceSchemas), "transport_replaced", rotated)
	return nil
}

// Close retires the shared transport: idle connections close at once, the
// others as soon as their requests end. Requests after Close fail with ErrClosed.
func (inv *Invoker) Close() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.state.Swap(nil) == nil {
		return nil
	}
	inv.rot.close()
	return nil
}
