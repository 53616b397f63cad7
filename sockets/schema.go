package sockets

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/headers"
)

// schema is one source schema in one configuration: its pool (kept across
// reloads while its transport settings stay equal), URL, header rules,
// bounds and middleware.
type schema struct {
	inv            *Invoker
	name           string
	url            *url.URL
	post           *http.Request // template of Post's requests: method, URL, Host
	rules          headers.Rules
	headerTimeout  time.Duration
	requestTimeout time.Duration
	key            poolKey
	pool           *pool
	rt             http.RoundTripper // the middleware chain; nil sends on the pool directly

	// connHeaderTimer says that the header timeout is enforced by the
	// connection's own timer (see send), not by a bound.Guard.
	connHeaderTimer  bool
	headerTimeoutErr *bound.HeaderTimeoutError
}

// poolKey holds everything a pool is built from. Two schemas with equal
// keys can share a pool, which is how Reload decides to keep one.
type poolKey struct {
	scheme, addr string
	settings     env.Settings
	tlsDigest    [sha256.Size]byte // of the TLS files' contents, so a renewed certificate makes a new pool
}

// newPoolKey keeps what a pool is built from: settings that act per request
// (timeouts, header rules, retry, dedupe, decompression) are left out, so
// changing them keeps the pool and its warm connections.
func newPoolKey(u *url.URL, s env.Settings, tlsDigest [sha256.Size]byte) poolKey {
	s.HeaderTimeout, s.RequestTimeout = 0, 0
	s.Headers = env.HeaderSettings{}
	s.Retry = env.RetrySettings{}
	s.Dedupe = env.Inherit
	s.Decompression = nil
	return poolKey{scheme: u.Scheme, addr: hostPort(u), settings: s, tlsDigest: tlsDigest}
}

func (k poolKey) equal(o poolKey) bool {
	return k.scheme == o.scheme && k.addr == o.addr && k.tlsDigest == o.tlsDigest && k.settings.Equal(o.settings)
}

// build makes the state for cfg, reusing old's pools whose keys are equal.
// An error names the source schema and key; nothing is half-built then.
func build(cfg env.Config, old *state, o *Options, log *slog.Logger) (*state, error) {
	st := &state{schemas: make(map[string]*schema, len(cfg.SourceSchemas))}
	var fresh []*pool
	fail := func(err error) (*state, error) {
		for _, p := range fresh {
			p.drain()
		}
		return nil, err
	}
	for _, name := range sortedNames(cfg.SourceSchemas) {
		sc := cfg.SourceSchemas[name]
		settings, _ := cfg.Effective(name)
		hk := o.Schemas[name]
		u, err := url.Parse(sc.URL)
		if err != nil {
			return fail(fmt.Errorf("source_schemas.%s.url: %w", name, err))
		}
		rules, err := headers.New(headers.Spec{
			Forward:  slices.Concat(cfg.ForwardHeaders, sc.ForwardHeaders, settings.Headers.Forward),
			Matching: settings.Headers.ForwardMatching,
			Rename:   settings.Headers.Rename,
			Set:      settings.Headers.Set,
			Values:   hk.HeaderValues,
		})
		if err != nil {
			return fail(fmt.Errorf("source_schemas.%s.headers: %w", name, err))
		}
		tlsCfg, digest, err := tlsConfig(name, u, settings.TLS, hk.VerifyConnection)
		if err != nil {
			return fail(err)
		}
		s := &schema{
			inv:            o.inv,
			name:           name,
			url:            u,
			rules:          rules,
			headerTimeout:  env.Bound(settings.HeaderTimeout),
			requestTimeout: env.Bound(settings.RequestTimeout),
			key:            newPoolKey(u, settings, digest),
		}
		s.post = gqlhttp.Template(u)
		if prev, ok := old.lookup(name); ok && prev.key.equal(s.key) {
			s.pool = prev.pool
		} else {
			p, err := newPool(name, s.key, tlsCfg, hk, o.LookupEnv)
			if err != nil {
				return fail(err)
			}
			if settings.TLS.InsecureSkipVerify.On() {
				log.Warn("TLS certificate verification is OFF for this source schema: anyone on the network path can read and change its traffic", "source_schema", name, "key", "tls.insecure_skip_verify")
			}
			fresh = append(fresh, p)
			s.pool = p
		}
		s.rt = pipeline(s, settings, hk, o.Middleware, log)
		s.headerTimeoutErr = &bound.HeaderTimeoutError{Bound: s.headerTimeout}
		s.connHeaderTimer = u.Scheme == "http" && settings.HTTPVersion != "h2c" && hk.RoundTripper == nil && s.requestTimeout == 0
		st.schemas[name] = s
	}
	return st, nil
}

func sortedNames(m map[string]env.SourceSchema) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (st *state) lookup(name string) (*schema, bool) {
	if st == nil {
		return nil, false
	}
	s, ok := st.schemas[name]
	return s, ok
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

// roundTrip sends req on a pooled connection, again if the server refused
// its HTTP/2 stream (up to maxRefused times).
func (s *schema) roundTrip(req *http.Request) (*http.Response, error) {
	for refused := 0; ; refused++ {
		resp, err := s.roundTripOnce(req)
		if err == nil || refused == maxRefused || !refusedStream(err) || req.Context().Err() != nil {
			return resp, err
		}
		// The server refused the stream before processing it (RFC 9113,
		// section 8.7), typically because a new connection's stream limit
		// was not known yet: any request, a POST too, may go again.
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// maxRefused bounds the retries of a request whose stream was refused.
const maxRefused = 3

// refusedStream reports an HTTP/2 REFUSED_STREAM from the server. net/http
// does not export its bundled HTTP/2 error types, so the code is matched in
// the error text.
func refusedStream(err error) bool {
	return err != nil && strings.Contains(err.Error(), "REFUSED_STREAM")
}

// rewound returns req with a fresh body, for sending again.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("the request body cannot be sent again (no GetBody)")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r2 := *req
	r2.Body = body
	return &r2, nil
}

// roundTripOnce sends req on a pooled connection. A request that failed on
// a reused connection before any answer is retried once on a new
// connection if it is idempotent and its body can be sent again, as
// net/http's Transport does: the server may have closed an idle connection
// just as the request left.
func (s *schema) roundTripOnce(req *http.Request) (*http.Response, error) {
	c, pending, err := s.pool.get(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := s.send(c, req)
	s.pool.done(c, pending)
	if err == nil && resp.ProtoMajor == 2 && !c.h2.Load() {
		c.h2.Store(true) // one stream at a time so far; HTTP/2 all the same
	}
	if err == nil || !c.reused.Load() || !replayable(req) || req.Context().Err() != nil || errors.Is(err, s.headerTimeoutErr) || refusedStream(err) {
		return resp, err
	}
	r2, rerr := rewound(req)
	if rerr != nil {
		return nil, err
	}
	c, pending, gerr := s.pool.get(r2.Context())
	if gerr != nil {
		// Not errDrained: the request was tried once, so it must not move
		// to another pool and be sent again from a read body.
		return nil, err
	}
	defer s.pool.done(c, pending)
	return s.send(c, r2)
}

// send runs req on c. On a connection that only ever carries one request
// at a time (HTTP/1.1 over http), the header timeout is the connection's
// own timer, armed for this request: when it fires it closes the
// connection, which ends this request and no other. That saves the
// per-request context, timer and closure that bound.Guard needs (9
// allocations a call); HTTP/2 and https requests keep the Guard.
func (s *schema) send(c *conn, req *http.Request) (*http.Response, error) {
	if !s.connHeaderTimer || s.headerTimeout <= 0 {
		return c.cc.RoundTrip(req)
	}
	if _, ok := req.Context().Deadline(); ok {
		return c.cc.RoundTrip(req)
	}
	c.headerTimer.Reset(s.headerTimeout)
	resp, err := c.cc.RoundTrip(req)
	if c.headerTimer.Stop() {
		return resp, err
	}
	// The timer fired: the connection is closed, and with it this request.
	if err == nil {
		resp.Body.Close()
	}
	return nil, s.headerTimeoutErr
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

// guardHeaderTimeout is the header bound a bound.Guard enforces: none when
// the connection's own timer does (see send).
func (s *schema) guardHeaderTimeout() time.Duration {
	if s.connHeaderTimer {
		return 0
	}
	return s.headerTimeout
}
