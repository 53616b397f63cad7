// Package env is the configuration model of the transport: which path serves
// source schema requests, which gateway request headers are forwarded, and the
// HTTP settings of every source schema.
//
// Load builds a Config from three layers, each over the last: the built-in
// defaults, YAML files, and the environment (FUSION_SOCKETS_TRANSPORT and
// FUSION_FORWARD_HEADERS). A Config built by hand works too: every zero field
// means "inherit" or "the documented default", and Validate reports what is
// wrong with it.
package env

import "time"

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
)

// Built-in defaults, used where neither a source schema nor Config.Defaults
// sets a value. They match YARP's forwarder and HttpClient's bounds, which the
// .NET original of this project kept.
const (
	DefaultConnectTimeout  = 15 * time.Second
	DefaultConnLifetime    = 2 * time.Minute
	DefaultIdleConnTimeout = 90 * time.Second
	DefaultHeaderTimeout   = 100 * time.Second
	DefaultHandlerLifetime = 2 * time.Minute
)

// Off, as the value of a duration setting, turns that bound off. Files and
// the environment write it as 0 or the word "off"; in a Config built by hand
// 0 means "inherit", so Off is how Go code says "no bound".
const Off time.Duration = -1

// NoLimit, as the value of a limit such as MaxConnsPerHost, means no limit.
// Files write it as 0; in a Config built by hand 0 means "inherit".
const NoLimit = -1

// Config is the whole transport configuration.
type Config struct {
	// Transport selects the path at startup. The zero value selects
	// PathLegacy. FUSION_SOCKETS_TRANSPORT overrides the file's value.
	// A running Invoker never changes path: Reload ignores this field.
	Transport Path

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
// read the values a source schema runs with.
type Settings struct {
	// ConnectTimeout bounds dialing a new connection (TCP and, for https,
	// the TLS handshake on the sockets path). Off dials without a bound.
	// Default: 15s.
	ConnectTimeout time.Duration

	// ConnLifetime is the age after which the sockets path closes a pooled
	// connection, never in the middle of a request, with up to a tenth of
	// jitter so that a pool does not reconnect all at once. Off keeps
	// connections for as long as they stay usable. The legacy path ignores
	// it (it rotates its shared transport, see LegacySettings).
	// Default: 2m.
	ConnLifetime time.Duration

	// IdleConnTimeout is how long an idle pooled connection is kept. Off
	// keeps idle connections without a bound. Default: 90s.
	IdleConnTimeout time.Duration

	// MaxConnsPerHost limits the connections to one source schema (sockets)
	// or to one host (legacy, whose transport is shared); a request that
	// finds the limit reached waits for a connection. NoLimit (0 in files)
	// means no limit; other negative values are invalid.
	// Default: no limit.
	MaxConnsPerHost int

	// HeaderTimeout bounds the time until the response headers arrive for a
	// request whose context has no deadline; reading the body is not cut.
	// Off leaves such requests unbounded. Default: 100s.
	HeaderTimeout time.Duration
}

// LegacySettings are read by the legacy path only.
type LegacySettings struct {
	// HandlerLifetime is how often the legacy path replaces its shared
	// transport, as IHttpClientFactory rotates its handlers; the old one
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
	return s.Settings.inherit(c.Defaults).inherit(builtin), true
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
	return c.Defaults.inherit(builtin)
}

// Path returns the selected path, PathLegacy when Transport is empty.
func (c Config) Path() Path {
	if c.Transport == "" {
		return PathLegacy
	}
	return c.Transport
}

var builtin = Settings{
	ConnectTimeout:  DefaultConnectTimeout,
	ConnLifetime:    DefaultConnLifetime,
	IdleConnTimeout: DefaultIdleConnTimeout,
	MaxConnsPerHost: NoLimit, // as Load resolves it, so that resolved settings compare equal
	HeaderTimeout:   DefaultHeaderTimeout,
}

// inherit fills the zero fields of s from parent.
func (s Settings) inherit(parent Settings) Settings {
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = parent.ConnectTimeout
	}
	if s.ConnLifetime == 0 {
		s.ConnLifetime = parent.ConnLifetime
	}
	if s.IdleConnTimeout == 0 {
		s.IdleConnTimeout = parent.IdleConnTimeout
	}
	if s.MaxConnsPerHost == 0 {
		s.MaxConnsPerHost = parent.MaxConnsPerHost
	}
	if s.HeaderTimeout == 0 {
		s.HeaderTimeout = parent.HeaderTimeout
	}
	return s
}

// Bound returns d as net/http counts a bound: zero for Off (no bound), d
// otherwise.
func Bound(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// Limit returns n as net/http counts a limit: zero for NoLimit, n otherwise.
func Limit(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
