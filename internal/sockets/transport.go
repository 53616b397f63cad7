package sockets

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/setting"
)

// newPool validates nothing (env.Config.Validate did) and maps a source
// schema's settings straight onto an http.Transport and the pool around it,
// as Caddy provisions its reverse proxy transport. dial, if set, replaces
// the dialer (SchemaOptions.Dial). log receives the pool's events.
func newPool(name string, k *key, dial func(ctx context.Context, network, addr string) (net.Conn, error), lookupEnv func(string) (string, bool), log *slog.Logger) (*pool, error) {
	s := k.settings
	tlsCfg := k.tls
	dialer := backend.Dialer(s)
	if dial == nil {
		dial = dialer.DialContext
		if s.UnixSocket != "" {
			path := s.UnixSocket
			dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "unix", path)
			}
		}
	}
	proxy, err := proxyFunc(name, s.Proxy, lookupEnv)
	if err != nil {
		return nil, err
	}
	if s.HTTPVersion == "2" && s.VersionPolicy == "exact" && tlsCfg != nil {
		// Go falls back to HTTP/1.1 when the server does not offer h2 by
		// ALPN; exact means the connection fails instead.
		tlsCfg = tlsCfg.Clone()
		verify := tlsCfg.VerifyConnection
		tlsCfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != "h2" {
				return fmt.Errorf("source schema %q: the server did not negotiate HTTP/2 by ALPN (http_version 2, version_policy exact)", name)
			}
			if verify != nil {
				return verify(cs)
			}
			return nil
		}
	}
	if s.Engine == env.EngineH1 {
		return newH1Pool(name, k, dial, log), nil
	}
	p := &pool{}
	if tlsCfg != nil {
		// Every connection of a pool goes to one server, so the protocol
		// its TLS handshake negotiates tells the pool, before the first
		// request, whether its connections multiplex.
		tlsCfg = tlsCfg.Clone()
		verify := tlsCfg.VerifyConnection
		tlsCfg.VerifyConnection = func(cs tls.ConnectionState) error {
			p.sawH2.Store(cs.NegotiatedProtocol == "h2")
			if verify != nil {
				return verify(cs)
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:               proxy, // nil unless configured: never the environment's by default
		DialContext:         watchDial(dial),
		DisableCompression:  true, // no Accept-Encoding added, no body decoded by net/http
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: setting.Bound(s.TLSHandshakeTimeout),
		// 0 (NoLimit) leaves net/http's own 10 MiB.
		MaxResponseHeaderBytes: int64(setting.Limit(s.MaxResponseHeaderBytes)),
		Protocols:              protocols(s),
		HTTP2: &http.HTTP2Config{
			SendPingTimeout:             setting.Bound(s.HTTP2.PingInterval),
			PingTimeout:                 setting.Bound(s.HTTP2.PingTimeout),
			StrictMaxConcurrentRequests: !s.HTTP2.MultipleConnections.On(),
		},
	}
	*p = poolRules(k)
	p.tr = tr
	p.schema, p.log = name, log
	p.strictH2 = !s.HTTP2.MultipleConnections.On()
	p.onlyH2 = s.HTTPVersion == "h2c" || (s.HTTPVersion == "2" && s.VersionPolicy == "exact")
	return p, nil
}

// poolRules is a pool with the rules of k's settings that every engine
// shares: lifetime, idle timeout, limits, connect timeout.
func poolRules(k *key) pool {
	s := k.settings
	lifetime := setting.Bound(s.ConnLifetime)
	maxPending := setting.Limit(s.MaxPendingRequests)
	dialStop, cancelDialStop := context.WithCancel(context.Background())
	return pool{
		dialStop:       dialStop,
		cancelDialStop: cancelDialStop,
		maxPending:     maxPending,
		overloaded:     fmt.Errorf("%w (max_pending_requests %d): not sent", fault.ErrOverloaded, maxPending),
		scheme:         k.scheme,
		addr:           k.addr,
		lifetime:       lifetime,
		jitter:         min(setting.Bound(s.ConnLifetimeJitter), lifetime),
		idle:           setting.Bound(s.IdleConnTimeout),
		max:            setting.Limit(s.MaxConnsPerHost),
		maxIdle:        setting.Limit(s.MaxIdleConnsPerHost),
		dialTO:         setting.Bound(s.ConnectTimeout),
	}
}

// newH1Pool builds the pool of a schema the h1 engine serves (engineFor
// chose it): HTTP/1.1 only, no proxy. dial is the pool's dial function;
// log receives the pool's events.
func newH1Pool(name string, k *key, dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) *pool {
	s := k.settings
	d := &h1Dialer{dial: dial, addr: k.addr, handshake: setting.Bound(s.TLSHandshakeTimeout), schema: name, log: log}
	// 0 (NoLimit) is h1's default, net/http's 10 MiB, as for nethttp.
	d.maxHeader = int64(setting.Limit(s.MaxResponseHeaderBytes))
	if k.scheme == "https" {
		cfg := k.tls.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		if cfg.ServerName == "" {
			// As net/http does: the URL's host, without the port.
			host, _, err := net.SplitHostPort(k.addr)
			if err != nil {
				host = k.addr
			}
			cfg.ServerName = host
		}
		d.tls = cfg
	}
	p := poolRules(k)
	p.h1 = d
	return &p
}

// EngineFor returns the engine the sockets path serves a source schema
// with, given its effective settings s and its URL's scheme: the one its
// engine setting asks for, except that h1 serves only what would be
// HTTP/1.1 without a proxy anyway. When h1 was asked for and cannot serve,
// key names the setting that decided it and why says what it needs.
func EngineFor(s env.Settings, scheme string) (engine, key, why string) {
	if s.Engine != env.EngineH1 {
		return env.EngineNetHTTP, "", ""
	}
	switch p := strings.ToLower(s.Proxy); {
	case p != "" && p != "off":
		return env.EngineNetHTTP, "proxy", "h1 does not speak through a proxy"
	case s.HTTPVersion == "h2c":
		return env.EngineNetHTTP, "http_version", "h1 speaks HTTP/1.1 only, and h2c is HTTP/2"
	case scheme == "https" && s.HTTPVersion != "1.1":
		return env.EngineNetHTTP, "http_version", `over https HTTP/2 is negotiated by ALPN; set http_version: "1.1" to use h1`
	}
	return env.EngineH1, "", ""
}

// protocols maps http_version and version_policy onto Transport.Protocols.
func protocols(s env.Settings) *http.Protocols {
	p := new(http.Protocols)
	switch {
	case s.HTTPVersion == "h2c":
		p.SetUnencryptedHTTP2(true) // prior knowledge; always exact
	case s.HTTPVersion == "1.1":
		p.SetHTTP1(true)
	case s.VersionPolicy == "exact":
		p.SetHTTP2(true)
	default: // "2", or_lower
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	}
	return p
}

// proxyFunc maps the proxy setting: off (direct), environment (read once,
// now), or one proxy URL.
func proxyFunc(name, v string, lookupEnv func(string) (string, bool)) (func(*http.Request) (*url.URL, error), error) {
	switch strings.ToLower(v) {
	case "", "off":
		return nil, nil
	case "environment":
		return backend.ProxyFromEnvironment(lookupEnv), nil
	}
	// redact.Parse: url.Parse's error quotes the URL, password and all.
	u, err := redact.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("source_schemas.%s.proxy: %w", name, err)
	}
	return http.ProxyURL(u), nil
}

// tlsConfig builds the TLS client configuration of a source schema and a
// digest of the files it read. Errors name the key and the file.
func tlsConfig(name string, u *url.URL, t env.TLSSettings, verify func(tls.ConnectionState) error) (*tls.Config, [sha256.Size]byte, error) {
	var digest [sha256.Size]byte
	if u.Scheme != "https" && t == (env.TLSSettings{InsecureSkipVerify: t.InsecureSkipVerify}) {
		return nil, digest, nil
	}
	h := sha256.New()
	read := func(key, file string) ([]byte, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("source_schemas.%s.tls.%s: %w", name, key, err)
		}
		h.Write(b)
		return b, nil
	}
	cfg := &tls.Config{
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify.On(),
		VerifyConnection:   verify,
		MinVersion:         tlsVersion(t.MinVersion),
		MaxVersion:         tlsVersion(t.MaxVersion),
	}
	if t.CAFile != "" {
		pem, err := read("ca_file", t.CAFile)
		if err != nil {
			return nil, digest, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, digest, fmt.Errorf("source_schemas.%s.tls.ca_file: no PEM certificate in %s", name, t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		certPEM, err := read("cert_file", t.CertFile)
		if err != nil {
			return nil, digest, err
		}
		keyPEM, err := read("key_file", t.KeyFile)
		if err != nil {
			return nil, digest, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, digest, fmt.Errorf("source_schemas.%s.tls.cert_file: %s with %s: %w", name, t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	copy(digest[:], h.Sum(nil))
	return cfg, digest, nil
}

func tlsVersion(v string) uint16 {
	switch v {
	case "1.2":
		return tls.VersionTLS12
	case "1.3":
		return tls.VersionTLS13
	}
	return 0
}
