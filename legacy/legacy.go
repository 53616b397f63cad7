// Package legacy is the legacy path's public face: the shared client that
// most Go gateways call their source schemas through, as the default path
// builds it, for a program that wants that client alone (to compare
// against, or to keep while it tries the sockets path).
//
//	lt, err := legacy.New(legacy.Config{})
//	if err != nil {
//		return err
//	}
//	defer lt.Close()
//	client := lt.Client() // follows redirects, no cookie jar
//
// A Transport is one net/http Transport with Go's defaults (the
// environment's proxy, transparent gzip decompression, HTTP/2 when the
// server offers it over TLS), shared by every host it is used for, and
// replaced every handler_lifetime (2m) so that new connections see DNS
// changes: the old one closes its idle connections and retires once its
// requests have ended. Its TLS is Go's: certificates are verified against
// the system's roots (on Unix, SSL_CERT_FILE and SSL_CERT_DIR name them),
// and a handshake is bounded at 10s; the tls keys and tls_handshake_timeout
// are the sockets path's, and New refuses them. Forwarding gateway request
// headers, time bounds, retries and the other policies are the request
// path's (package transport's Invoker); New refuses their settings, naming
// the key.
package legacy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	ilegacy "github.com/fusiongo/transport/internal/legacy"
	"github.com/fusiongo/transport/internal/setting"
)

// Config is a Transport's configuration. Every zero field is its
// documented default.
type Config struct {
	// Settings are the shared transport's settings, as the defaults of a
	// configuration file (docs/configuration.md): connect_timeout,
	// idle_conn_timeout, keep_alive, max_conns_per_host,
	// max_idle_conns_per_host and max_response_header_bytes. Every zero
	// field is the built-in default; New refuses the other keys, naming
	// the key: the legacy path reads them per source schema or not at
	// all (its TLS settings among them: see the package doc).
	Settings env.Settings

	// HandlerLifetime is how often the shared transport is replaced
	// (legacy.handler_lifetime). env.Off never replaces it. Zero: 2m.
	HandlerLifetime time.Duration

	// Logger receives the Transport's events. Nil: slog.Default().
	Logger *slog.Logger

	// LookupEnv reads the proxy variables (HTTP_PROXY, HTTPS_PROXY,
	// NO_PROXY), once, when the Transport is built. Nil: os.LookupEnv.
	LookupEnv func(key string) (string, bool)
}

// Transport is the legacy path's shared transport: an http.RoundTripper,
// safe for concurrent use, for any host. Build it with New; Close it when
// done.
type Transport struct {
	be     *ilegacy.Backend // set by New, never changes
	shared backend.Pool     // set by New, never changes; drained by Close
	closed atomic.Bool      // set by the first Close, which alone drains
}

var _ http.RoundTripper = (*Transport)(nil)

// New builds the shared transport of c. Its error names the key and the
// value that are wrong.
func New(c Config) (*Transport, error) {
	for _, key := range setting.Diff(env.Settings{}, c.Settings) {
		if setting.Rebuilds(key, env.PathLegacy) != setting.RebuildShared {
			return nil, fmt.Errorf("legacy: %s is not a setting of the shared transport: leave it unset", key)
		}
	}
	cfg := env.Config{Defaults: c.Settings, Legacy: env.LegacySettings{HandlerLifetime: c.HandlerLifetime}}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("legacy: %w", err)
	}
	s := &backend.Schema{Name: "legacy", Config: &cfg, LookupEnv: c.LookupEnv, Log: c.Logger}
	if s.LookupEnv == nil {
		s.LookupEnv = os.LookupEnv
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	be := ilegacy.New().(*ilegacy.Backend)
	key, err := be.Key(s)
	if err != nil {
		return nil, fmt.Errorf("legacy: %w", err)
	}
	shared, err := be.Open(s, key)
	if err != nil {
		return nil, fmt.Errorf("legacy: %w", err)
	}
	return &Transport{be: be, shared: shared}, nil
}

// RoundTrip sends req on the shared transport, as net/http's Transport
// does: once, to whatever host req.URL names, with the environment's proxy
// and gzip asked for and decoded. After Close, or racing it, it fails with
// fault.ErrClosed, unsent, and closes req's body.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// No check of closed first: a call that passed one could still meet
	// the drained transport. Once drained, the shared transport refuses
	// every call the same way (backend.ErrDrained, the body closed), and
	// that one way is what the tests hold, after Close and racing it.
	resp, err := t.shared.RoundTrip(req)
	if errors.Is(err, backend.ErrDrained) {
		return nil, fault.ErrClosed
	}
	return resp, err
}

// Client returns an http.Client on t as the legacy path builds each
// source schema's: it follows redirects by Go's default policy (up to
// 10), keeps no cookies (no jar), and has no Timeout (bound each request
// with its context).
func (t *Transport) Client() *http.Client {
	return &http.Client{Transport: t}
}

// Close stops t: idle connections close at once, the others when their
// requests end, and a later RoundTrip fails with fault.ErrClosed. Close
// always returns nil.
func (t *Transport) Close() error {
	if t.closed.CompareAndSwap(false, true) {
		t.shared.Drain()
		t.be.Close()
	}
	return nil
}
