package legacy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/fusiongo/transport/internal/backend"
	"golang.org/x/net/idna"
)

// A source schema's SchemaOptions hooks (Dial, VerifyConnection) act on the
// shared transport by host and port: each rotator keeps a table of the
// hooks of the schemas open on it, by the host and port of their URLs, and
// its transport dials (generation.dial) and verifies each TLS connection it
// makes itself (generation.dialTLS) by that table. So a pin holds for every
// connection to the schema's host and port, whichever request opens it (a
// redirect from another schema's host included), and no other host is
// touched. What the shared transport cannot do this way, Key and Open
// refuse by name: a hook on a schema that the environment's proxy applies
// to (the transport then connects to the proxy, not to the schema), and
// two Dial hooks on one host and port (the transport keeps one pool per
// host and port, so one hook would open the other's connections).

// errProxied is the cause of a hook refused because the environment's
// proxy applies to its schema's URL.
var errProxied = errors.New("the environment's proxy applies to the source schema's URL, and the legacy path's shared transport then connects to the proxy, not to the source schema (set NO_PROXY for its host, or use the sockets path)")

// errDialShared is the cause of a Dial hook refused because another source
// schema at the same host and port has one.
var errDialShared = errors.New("the legacy path's shared transport keeps one pool per host and port, which one Dial hook opens (give the hook to one of them, or use the sockets path)")

// hookSpec says which hooks a source schema has and where they apply: part
// of its key, so that a reload that moves a schema with hooks, or one
// whose hooks a reload cannot change (they are fixed for the invoker's
// life), opens a new handle that registers them where they now apply.
type hookSpec struct {
	addr         string // dialAddr of the schema's URL; "" when it has no hook
	dial, verify bool
}

// hooksOf returns s's hookSpec; its error names the schema and the hook.
func hooksOf(s *backend.Schema) (hookSpec, error) {
	spec := hookSpec{dial: s.Options.Dial != nil, verify: s.Options.VerifyConnection != nil}
	if !spec.dial && !spec.verify {
		return hookSpec{}, nil
	}
	addr, err := dialAddr(s.URL)
	if err != nil {
		return hookSpec{}, fmt.Errorf("source_schemas.%s: SchemaOptions.%s: %w", s.Name, spec.names(), err)
	}
	spec.addr = addr
	return spec, nil
}

// names names the hooks of spec as SchemaOptions fields.
func (spec hookSpec) names() string {
	switch {
	case spec.dial && spec.verify:
		return "Dial and SchemaOptions.VerifyConnection"
	case spec.dial:
		return "Dial"
	}
	return "VerifyConnection"
}

// dialAddr is the address net/http's Transport dials for a request to u
// (its canonicalAddr: the host name in its IDNA form, the scheme's port if
// none), in lower case, for a lookup without case.
func dialAddr(u *url.URL) (string, error) {
	host := u.Hostname()
	if a, err := idnaASCII(host); err != nil {
		return "", fmt.Errorf("host %q: %w", host, err)
	} else {
		host = a
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return strings.ToLower(net.JoinHostPort(host, port)), nil
}

// idnaASCII is net/http's: an ASCII name as it is, another in its IDNA
// form.
func idnaASCII(host string) (string, error) {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return idna.Lookup.ToASCII(host)
		}
	}
	return host, nil
}

// checkDialShared records that s has a Dial hook, and fails if another
// source schema of s's configuration whose URL has the same dial address
// has one too. Hooks are fixed for the invoker's life, so the schemas a
// Key call saw with a Dial hook have one in every configuration; of two
// that conflict, the one keyed second (the request path keys them in name
// order) is refused. b.mu must not be held.
func (b *Backend) checkDialShared(s *backend.Schema, addr string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dials == nil {
		b.dials = map[string]bool{}
	}
	b.dials[s.Name] = true
	for _, name := range slices.Sorted(maps.Keys(s.Config.SourceSchemas)) {
		if name == s.Name || !b.dials[name] {
			continue
		}
		u, err := url.Parse(s.Config.SourceSchemas[name].URL)
		if err != nil {
			continue // the request path names that schema's URL error itself
		}
		if other, err := dialAddr(u); err == nil && other == addr {
			return fmt.Errorf("source_schemas.%s: SchemaOptions.Dial: source schema %q at the same host and port (%s) has a Dial hook too: %w", s.Name, name, addr, errDialShared)
		}
	}
	return nil
}

// checkProxy fails if proxy, the environment's proxy of the shared
// transport that s opens on, applies to s's URL while s has hooks.
func (spec hookSpec) checkProxy(s *backend.Schema, proxy func(*http.Request) (*url.URL, error)) error {
	if spec.addr == "" {
		return nil
	}
	p, err := proxy(&http.Request{URL: s.URL})
	switch {
	case err != nil:
		return fmt.Errorf("source_schemas.%s: SchemaOptions.%s: the environment's proxy: %w", s.Name, spec.names(), err)
	case p != nil:
		return fmt.Errorf("source_schemas.%s: SchemaOptions.%s: %w (proxy %s)", s.Name, spec.names(), errProxied, p.Host)
	}
	return nil
}

// hook is one source schema's hooks, registered on its rotator by the
// handle that Open returned, until that handle drains. Immutable.
type hook struct {
	schema string
	addr   string                                                            // dialAddr of the schema's URL
	dial   func(ctx context.Context, network, addr string) (net.Conn, error) // nil: none
	verify func(tls.ConnectionState) error                                   // nil: none
}

// hookTable is a rotator's hooks by dial address, in the order they were
// registered. It is never modified: a change stores a new one.
type hookTable map[string][]*hook

// with returns a copy of t with h added.
func (t hookTable) with(h *hook) hookTable {
	out := maps.Clone(t)
	if out == nil {
		out = hookTable{}
	}
	out[h.addr] = append(slices.Clone(t[h.addr]), h)
	return out
}

// without returns a copy of t without h.
func (t hookTable) without(h *hook) hookTable {
	out := maps.Clone(t)
	out[h.addr] = slices.DeleteFunc(slices.Clone(t[h.addr]), func(x *hook) bool { return x == h })
	if len(out[h.addr]) == 0 {
		delete(out, h.addr)
	}
	return out
}

// dialer returns the Dial hook for addr, as net/http spells it: the one
// registered last (two schemas with one are refused, but a reload has the
// old schema's and the new one's registered for a moment); nil for none.
func (t hookTable) dialer(addr string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	hs := t[strings.ToLower(addr)]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].dial != nil {
			return hs[i].dial
		}
	}
	return nil
}

// verifier returns a tls.Config.VerifyConnection that every
// VerifyConnection hook for addr must pass, its error naming the schema
// whose hook refused; nil for none.
func (t hookTable) verifier(addr string) func(tls.ConnectionState) error {
	var hs []*hook
	for _, h := range t[strings.ToLower(addr)] {
		if h.verify != nil {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return func(cs tls.ConnectionState) error {
		for _, h := range hs {
			if err := h.verify(cs); err != nil {
				return fmt.Errorf("VerifyConnection of source schema %q: %w", h.schema, err)
			}
		}
		return nil
	}
}

// http1Only is the context key of a request that asks for a protocol
// upgrade: net/http sends it on an HTTP/1 connection (a connection pool of
// its own), so generation.dialTLS offers no ALPN for it, as net/http does.
type http1Only struct{}

// errHandshakeTimeout is the error of a TLS handshake that took longer
// than the transport's TLSHandshakeTimeout, as net/http's: a net.Error
// that is a timeout.
var errHandshakeTimeout error = handshakeTimeout{}

type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }

// dialTLS is the shared transport's DialTLSContext: it dials addr (g.dial,
// with the hooks' Dial) and makes the TLS handshake as net/http would
// (its TLS configuration, the ALPN protocols it set there, the server name
// from addr, TLSHandshakeTimeout), adding the VerifyConnection hooks of
// addr. net/http calls it for every TLS connection to a host it reaches
// directly, or to an https proxy; through an http proxy it makes the TLS
// handshake with the target itself, which is why a schema with hooks that
// the proxy applies to is refused.
func (g *generation) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	conn, err := g.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	// net/http set its TLS configuration, ALPN protocols and all, before
	// the first request reached the dialer.
	cfg := g.tr.TLSClientConfig.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if ctx.Value(http1Only{}) != nil {
		cfg.NextProtos = nil
	}
	cfg.VerifyConnection = g.hooks.Load().verifier(addr)
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeoutCause(ctx, g.tr.TLSHandshakeTimeout, errHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		if hctx.Err() != nil && context.Cause(hctx) == errHandshakeTimeout {
			return nil, errHandshakeTimeout
		}
		return nil, err
	}
	return tc, nil
}
