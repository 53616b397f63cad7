package sockets

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/setting"
)

// Transport is an owned transport for one source schema: an
// http.RoundTripper, safe for concurrent use, that sends only to the
// schema's address. Build it with New; Close it when done.
type Transport struct {
	// All fields are set by New and never change; the pool guards its own
	// state and closed is atomic.
	name  string
	url   *url.URL
	pool  backend.Pool // drained by Close
	desc  backend.Description
	chain http.RoundTripper // decompression (if on) around the sender

	// timed is the pool's own header timer when it bounds every request
	// of the schema; header and request are the schema's bounds.
	timed           backend.HeaderTimer
	header, request time.Duration

	closed atomic.Bool
}

var _ http.RoundTripper = (*Transport)(nil)

// newTransport wraps pool, the schema's, as a Transport.
func newTransport(s *backend.Schema, be backend.Backend, pool backend.Pool) *Transport {
	t := &Transport{
		name: s.Name, url: s.URL, pool: pool, desc: pool.Describe(),
		header: setting.Bound(s.Settings.HeaderTimeout), request: setting.Bound(s.Settings.RequestTimeout),
	}
	if ht := t.desc.Timed; ht != nil && ht.TimesHeaders(s) && t.header > 0 {
		t.timed = ht
	}
	var rt http.RoundTripper = sender{t}
	mws := be.Middleware(s) // the first outermost
	for i := len(mws) - 1; i >= 0; i-- {
		rt = mws[i](rt)
	}
	t.chain = rt
	return t
}

// RoundTrip sends req to the source schema, once, or twice when its first
// try failed on a reused connection before any answer (see the package
// doc). req.URL must be on the schema's scheme, host and port
// (fault.ErrWrongTarget otherwise, unsent); its headers go as they are.
// Without a deadline in req's context, the wait for response headers is
// bounded by header_timeout (a *fault.HeaderTimeoutError); request_timeout,
// when set, bounds the request and its body (a *fault.RequestTimeoutError).
// A 101 Switching Protocols is returned only to a request that asked for
// that protocol, with a writable body that is the connection, then the
// caller's to close; any other upgrade fails with fault.ErrUnaskedUpgrade
// and its connection is closed. Errors name the source schema.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.closed.Load() {
		gqlhttp.CloseBody(req)
		return nil, t.err(fault.ErrClosed)
	}
	if !backend.SameTarget(req.URL, t.url) {
		gqlhttp.CloseBody(req)
		return nil, t.err(fmt.Errorf("%w: request is for %s://%s, source schema %q is at %s://%s", fault.ErrWrongTarget, req.URL.Scheme, req.URL.Host, t.name, t.url.Scheme, t.url.Host))
	}
	c := new(call)
	header := t.header
	if t.timed != nil {
		header = 0 // the pool's own timer bounds it (sender.attempt)
	}
	ctx := c.guard.Begin(req.Context(), bound.Target{Schema: t.name, Method: req.Method, URL: req.URL}, header, t.request)
	c.req = *req.WithContext(ctx)
	resp, err := c.guard.Finish(t.chain.RoundTrip(&c.req))
	if err != nil {
		gqlhttp.CloseBody(req)
		return nil, t.err(err)
	}
	return resp, nil
}

// call is one RoundTrip's bounds and the request it sends, in one
// allocation.
type call struct {
	guard bound.Guard
	req   http.Request
}

// err names the source schema in err, as every error of the transport
// does; an http.Client adds the method and URL around it.
func (t *Transport) err(err error) error {
	return fmt.Errorf("source schema %q: %w", t.name, err)
}

// sender is the chain's innermost RoundTripper: it sends on the pool,
// again when backend.Resend says the request may go again. The root's
// sender (send.go) runs the same loop and also follows a reload
// (backend.Moved); the judgement is backend.Resend's, written once, and
// the loops stay apart so that neither takes a closure per call.
type sender struct{ t *Transport }

func (s sender) RoundTrip(req *http.Request) (*http.Response, error) {
	var tries backend.Tries
	for {
		resp, err := s.attempt(req)
		if err == nil {
			if backend.TurnsOver(resp) {
				rwc, err := backend.Upgraded(req, resp)
				if err != nil {
					return nil, err
				}
				resp.Body = rwc
			}
			return resp, nil
		}
		switch backend.Resend(req, err, &tries) {
		case backend.NoResend:
			return nil, backend.Cause(err) // the pool closed the body
		case backend.Moved:
			// The pool drained before sending: Close ran.
			gqlhttp.CloseBody(req)
			return nil, fault.ErrClosed
		}
		if req, err = backend.Rewind(req); err != nil {
			return nil, err
		}
	}
}

// attempt sends req once, with the pool's own header timer when it has
// one and req has no deadline of its caller's (its request bound's is
// none: bound.CallerDeadline).
func (s sender) attempt(req *http.Request) (*http.Response, error) {
	t := s.t
	if t.timed != nil && !bound.CallerDeadline(req.Context()) {
		return t.timed.RoundTripWithin(req, t.header)
	}
	return t.pool.RoundTrip(req)
}

// Close stops the Transport: idle connections close at once, the others
// when their requests end, and a later RoundTrip fails with
// fault.ErrClosed, unsent. A connection that a 101 answer handed to its
// caller is the caller's to close. Close always returns nil.
func (t *Transport) Close() error {
	if t.closed.CompareAndSwap(false, true) {
		t.pool.Drain()
	}
	return nil
}

// Stats is what a Transport reports of its pool.
type Stats struct {
	// Engine is the engine that speaks HTTP on its connections: "h1" or
	// "nethttp" (engine; HTTP/2, h2c, a proxy and a Dial whose socket h1
	// cannot check always use nethttp).
	Engine string
	// Conns are its open connections, Idle those of them idle.
	Conns, Idle int
	// Addresses are the addresses of the schema's host the pool spreads
	// over; nil when it dials the host by name (a Dial hook, a unix
	// socket, a proxy, an IP literal).
	Addresses []AddressStats
}

// AddressStats is one address of the schema's pool.
type AddressStats struct {
	Address   netip.Addr
	Conns     int  // open connections to it
	Idle      int  // of which idle
	InFlight  int  // requests in flight to it
	Ejected   bool // out of service for now (outlier_detection)
	Ejections int  // its ejection multiplier
	Gone      bool // no longer in DNS's answer; its connections drain
}

// Stats reports the pool's engine, connections and addresses now.
func (t *Transport) Stats() Stats {
	st := Stats{Engine: t.desc.Engine}
	if t.desc.Conns != nil {
		st.Conns, st.Idle = t.desc.Conns()
	}
	if t.desc.Addresses != nil {
		for _, a := range t.desc.Addresses() {
			st.Addresses = append(st.Addresses, AddressStats(a))
		}
	}
	return st
}
