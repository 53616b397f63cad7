package sockets

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/headers"
)

// schema is one source schema in one configuration: its pool (kept across
// reloads while its transport settings stay equal), URL and header rules.
type schema struct {
	name          string
	url           *url.URL
	post          *http.Request // template of Post's requests: method, URL, Host
	rules         headers.Rules
	headerTimeout time.Duration
	key           poolKey
	pool          *pool
}

// poolKey holds everything a pool is built from. Two schemas with equal
// keys can share a pool, which is how Reload decides to keep one.
type poolKey struct {
	scheme, addr string
	settings     env.Settings
}

// newPoolKey keeps what a pool is built from: the header timeout acts per
// request, so changing it keeps the pool and its warm connections.
func newPoolKey(u *url.URL, s env.Settings) poolKey {
	s.HeaderTimeout = 0
	return poolKey{scheme: u.Scheme, addr: hostPort(u), settings: s}
}

func (k poolKey) equal(o poolKey) bool {
	return k.scheme == o.scheme && k.addr == o.addr && k.settings.Equal(o.settings)
}

// build makes the state for cfg, reusing old's pools whose keys are equal.
func build(cfg env.Config, old *state) (*state, error) {
	st := &state{schemas: make(map[string]*schema, len(cfg.SourceSchemas))}
	for name, sc := range cfg.SourceSchemas {
		settings, _ := cfg.Effective(name)
		u, err := url.Parse(sc.URL)
		if err != nil {
			return nil, fmt.Errorf("source schema %q: url: %w", name, err)
		}
		s := &schema{
			name:          name,
			url:           u,
			rules:         headers.Compile(cfg.ForwardHeaders, sc.ForwardHeaders),
			headerTimeout: env.Bound(settings.HeaderTimeout),
			key:           newPoolKey(u, settings),
		}
		s.post = &http.Request{
			Method:     http.MethodPost,
			URL:        u,
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Host:       u.Host,
		}
		if o, ok := old.lookup(name); ok && o.key.equal(s.key) {
			s.pool = o.pool
		} else {
			s.pool = newPool(s.key)
		}
		st.schemas[name] = s
	}
	return st, nil
}

func (st *state) lookup(name string) (*schema, bool) {
	if st == nil {
		return nil, false
	}
	s, ok := st.schemas[name]
	return s, ok
}

// newPool builds the transport and pool for one source schema with the
// sockets path's defaults: no proxy, no decompression, bounded dialing.
func newPool(k poolKey) *pool {
	s := k.settings
	dialer := &net.Dialer{Timeout: env.Bound(s.ConnectTimeout)}
	tr := &http.Transport{
		Proxy:               nil, // never the environment's proxy
		DialContext:         dialer.DialContext,
		DisableCompression:  true, // no Accept-Encoding added, no body decoded
		TLSHandshakeTimeout: env.Bound(s.ConnectTimeout),
		ForceAttemptHTTP2:   true, // HTTP/2 by ALPN over TLS, HTTP/1.1 otherwise
	}
	lifetime := env.Bound(s.ConnLifetime)
	return &pool{
		tr:       tr,
		scheme:   k.scheme,
		addr:     k.addr,
		lifetime: lifetime,
		jitter:   lifetime / 10,
		idle:     env.Bound(s.IdleConnTimeout),
		max:      env.Limit(s.MaxConnsPerHost),
		dialTO:   env.Bound(s.ConnectTimeout),
	}
}

// hostPort returns u's host with its port, the scheme's default if none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// roundTrip sends req on a pooled connection. A request that failed on a
// reused connection before any answer is retried once on a new connection
// if it is idempotent and its body can be sent again, as net/http's
// Transport does: the server may have closed an idle connection just as
// the request left.
func (s *schema) roundTrip(req *http.Request) (*http.Response, error) {
	c, err := s.pool.get(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := c.cc.RoundTrip(req)
	if err == nil || !c.reused || !replayable(req) || req.Context().Err() != nil {
		return resp, err
	}
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, berr := req.GetBody()
		if berr != nil {
			return nil, err
		}
		r2 := *req
		r2.Body = body
		req = &r2
	}
	c, gerr := s.pool.get(req.Context())
	if gerr != nil {
		// Not errDrained: the request was tried once, so it must not move
		// to another pool and be sent again from a read body.
		return nil, err
	}
	return c.cc.RoundTrip(req)
}

// replayable reports whether req may be sent twice: an idempotent method
// (RFC 9110, section 9.2.2) or an Idempotency-Key, as net/http decides.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		if _, ok := req.Header["Idempotency-Key"]; !ok {
			return false
		}
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// fail wraps err as net/http's client does (*url.Error with the method and
// the redacted URL) and names the source schema, so that errors read alike
// on both paths.
func (s *schema) fail(method string, u *url.URL, err error) error {
	return fmt.Errorf("source schema %q: %w", s.name, &url.Error{Op: urlErrorOp(method), URL: redact(u), Err: err})
}

// urlErrorOp spells a method as net/http's errors do: "Post", "Get".
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); len(lower) > 0 && method[0] >= 'A' && method[0] <= 'Z' {
		return method[:1] + lower[1:]
	}
	return method
}

// redact returns u as a string without its password, for errors and logs.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// checkTarget makes sure a request built by the caller goes where the
// source schema lives: the pool is bound to one scheme and address, and a
// request for another host must not reach this one under its name.
func (s *schema) checkTarget(u *url.URL) error {
	if u.Scheme != s.key.scheme || hostPort(u) != s.key.addr {
		return fmt.Errorf("%w: request is for %s://%s, source schema %q is at %s://%s", ErrWrongTarget, u.Scheme, u.Host, s.name, s.key.scheme, s.key.addr)
	}
	return nil
}

// ErrWrongTarget is wrapped by Do's error for a request whose URL does not
// point at its source schema's scheme and address.
var ErrWrongTarget = errors.New("request URL does not match the source schema")
