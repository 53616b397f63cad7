package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/middleware"
	"github.com/fusiongo/transport/operation"
)

// entryOf returns the entry of source schema name in the state in force.
func (inv *Transport) entryOf(name string) (*entry, error) {
	st := inv.state.Load()
	if st == nil {
		return nil, fmt.Errorf("source schema %q: %w", name, fault.ErrClosed)
	}
	e, ok := st.schemas[name]
	if !ok {
		return nil, fmt.Errorf("source schema %q: %w", name, fault.ErrUnknownSchema)
	}
	return e, nil
}

// lookup returns the route of source schema name in the state in force:
// the serving one, or the shadow or canary candidate.
func (inv *Transport) lookup(name string, candidate bool) (*route, error) {
	e, err := inv.entryOf(name)
	if err != nil {
		return nil, err
	}
	if candidate {
		if e.candidate == nil {
			return nil, fmt.Errorf("source schema %q: not shadowed: %w", name, fault.ErrUnknownSchema)
		}
		return e.candidate, nil
	}
	return e.primary, nil
}

// lookupLike returns the route of r's schema in the state in force that
// plays r's part: the serving one, the candidate, or the alt.
func (inv *Transport) lookupLike(r *route) (*route, error) {
	if !r.alt {
		return inv.lookup(r.name, r.candidate)
	}
	e, err := inv.entryOf(r.name)
	if err != nil {
		return nil, err
	}
	if e.alt == nil {
		return nil, fmt.Errorf("source schema %q: no route on the %s path: %w", r.name, r.path, fault.ErrUnknownSchema)
	}
	return e.alt, nil
}

// Do sends req for source schema name; see Invoker.Do.
func (inv *Transport) Do(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		gqlhttp.CloseBody(req)
		return nil, fmt.Errorf("source schema %q: nil request or URL", name)
	}
	var e *entry
	if inv.rollout != nil {
		r, re, err := inv.rolloutRoute(ctx, name, nil, req.URL.RawQuery) // rollout.go
		if err != nil {
			gqlhttp.CloseBody(req)
			return nil, err
		}
		if r != nil {
			return r.do(ctx, req)
		}
		e = re
	}
	if inv.canary != nil {
		return inv.canaryDo(ctx, name, req) // canary.go
	}
	r, err := inv.lookup(name, false)
	if err != nil {
		gqlhttp.CloseBody(req)
		return nil, err
	}
	inv.countStartup(e, r.path)
	if inv.shadow != nil {
		return inv.shadow.Do(ctx, name, req)
	}
	return r.do(ctx, req)
}

// Post sends body to source schema name's URL; see Invoker.Post.
func (inv *Transport) Post(ctx context.Context, name string, body []byte) (*http.Response, error) {
	var e *entry
	if inv.rollout != nil {
		r, re, err := inv.rolloutRoute(ctx, name, body, "") // rollout.go
		if err != nil {
			return nil, err
		}
		if r != nil {
			return r.post(ctx, body)
		}
		e = re
	}
	return inv.postStartup(ctx, name, body, e)
}

// postStartup is Post as the startup switch routes it; e is the schema's
// entry when the runtime rollout looked it up (to count the path taken),
// else nil.
func (inv *Transport) postStartup(ctx context.Context, name string, body []byte, e *entry) (*http.Response, error) {
	if inv.canary != nil {
		return inv.canaryPost(ctx, name, body) // canary.go
	}
	r, err := inv.lookup(name, false)
	if err != nil {
		return nil, err
	}
	inv.countStartup(e, r.path)
	if inv.shadow != nil {
		return inv.shadow.Post(ctx, name, body)
	}
	return r.post(ctx, body)
}

// role is one side of a shadowed source schema, for package shadow: the
// serving route or the candidate, looked up in the state in force.
type role struct {
	inv       *Transport
	candidate bool
}

func (ro role) Do(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	r, err := ro.inv.lookup(name, ro.candidate)
	if err != nil {
		gqlhttp.CloseBody(req)
		return nil, err
	}
	return r.do(ctx, req)
}

func (ro role) Post(ctx context.Context, name string, body []byte) (*http.Response, error) {
	r, err := ro.inv.lookup(name, ro.candidate)
	if err != nil {
		return nil, err
	}
	return r.post(ctx, body)
}

// do sends a request the caller built. On a backend without a front, the
// header rules apply here, once, and the request must go to the schema's
// own address. req itself is never modified.
func (r *route) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	t := bound.Target{Schema: r.name, Method: req.Method, URL: req.URL}
	h := req.Header
	if !r.front {
		if !backend.SameTarget(req.URL, r.url) {
			gqlhttp.CloseBody(req)
			return nil, t.Err(fmt.Errorf("%w: request is for %s://%s, source schema %q is at %s", fault.ErrWrongTarget, req.URL.Scheme, req.URL.Host, r.name, r.target))
		}
		var err error
		if h, err = r.rules.Apply(ctx, req.Header, false); err != nil {
			gqlhttp.CloseBody(req)
			return nil, t.Err(err)
		}
		if h == nil {
			h = http.Header{}
		}
	}
	c := new(doCall)
	ctx = c.guard.Begin(ctx, t, r.guardHeaderTimeout(), r.requestTimeout)
	// The request sent is a copy of the caller's, in c: WithContext's own
	// copy stays on the stack.
	c.req = *req.WithContext(ctx)
	out := &c.req
	out.Header = h
	resp, err := c.guard.Finish(r.entry.RoundTrip(out))
	if err != nil {
		gqlhttp.CloseBody(req)
	}
	return result(t, resp, err)
}

// post sends body to the schema's URL as a GraphQL-over-HTTP POST. The
// body reaches net/http as a *bytes.Reader, so the headers and a small
// body leave in one write (golang/go#22088; see internal/gqlhttp).
func (r *route) post(ctx context.Context, body []byte) (*http.Response, error) {
	c := new(postCall)
	return r.postOn(ctx, c, gqlhttp.Header(r.rules.Len()), c.getBody, body)
}

// postOn sends a Post as c, which is zero but for what a lent call keeps
// (lentCall), with h, a header map that gqlhttp.Header or ResetHeader
// made, and getBody, c's getBody as a func value.
func (r *route) postOn(ctx context.Context, c *postCall, h http.Header, getBody func() (io.ReadCloser, error), body []byte) (*http.Response, error) {
	t := bound.Target{Schema: r.name, Method: http.MethodPost, URL: r.url}
	if !r.front {
		var err error
		if h, err = r.rules.Apply(ctx, h, true); err != nil {
			return nil, t.Err(err)
		}
	}
	ctx = c.guard.Begin(ctx, t, r.guardHeaderTimeout(), r.requestTimeout)
	// The request lives in c: WithContext's copy stays on the stack.
	c.req = *r.postTemplate.WithContext(ctx)
	req := &c.req
	req.Header = h
	c.body.Reset(body)
	c.raw = body
	if r.anyBody || (r.compressMin > 0 && len(body) >= r.compressMin) ||
		(r.apq != nil && len(body) >= middleware.PersistedQueryMinBody && r.apq.On()) {
		// A body to compress, or to send by its hash, goes as postBody
		// too: Compress and PersistedQueries take its bytes where they
		// lie (middleware.UnreadBytes), with no copy.
		req.Body = (*postBody)(c)
	} else {
		// A NopCloser around a *bytes.Reader is what net/http knows to be
		// in memory: the headers and a small body leave in one write
		// (golang/go#22088).
		req.Body = io.NopCloser(&c.body)
	}
	req.ContentLength = int64(len(body))
	// GetBody is always set: a Post can be sent again whenever
	// backend.Resend allows.
	req.GetBody = getBody
	resp, err := c.guard.Finish(r.entry.RoundTrip(req))
	return result(t, resp, err)
}

// postCall is what the request path allocates for one Post besides the
// header and GetBody: the guard of its bounds, its body reader and the
// request, in one allocation.
type postCall struct {
	guard bound.Guard
	body  bytes.Reader // set once, before the request is sent
	raw   []byte       // the caller's body, that body reads
	req   http.Request
	// kind is the operation kind of the call's request, once a stage told
	// it (dedupe, retry and hedge each ask; the first one's answer serves
	// the others): kindSet says it is. Owned by the call's goroutine,
	// which every stage that classifies runs on.
	kind    operation.Kind
	kindSet bool
}

// doCall is what the request path allocates for one Do besides the header:
// the guard of its bounds and the request it sends, in one allocation.
type doCall struct {
	guard bound.Guard
	req   http.Request
}

// postBody is a Post's body as a pool that writes any body in one
// write gets it (backend.Description.WritesAnyBody): the call's reader,
// with no allocation.
type postBody postCall

func (b *postBody) Read(p []byte) (int, error)         { return b.body.Read(p) }
func (b *postBody) WriteTo(w io.Writer) (int64, error) { return b.body.WriteTo(w) }
func (b *postBody) Close() error                       { return nil }

// UnreadBytes hands the body's bytes to middleware.Compress, which encodes
// them without reading the body, and to the stages that classify it.
func (b *postBody) UnreadBytes() []byte { return b.raw }

// OperationKind returns the kind of operation a stage found in this
// request, if one did: the request and its body do not change in flight,
// so one classification serves every stage (middleware's classify).
func (b *postBody) OperationKind() (operation.Kind, bool) { return b.kind, b.kindSet }

// SetOperationKind records the kind a stage found.
func (b *postBody) SetOperationKind(k operation.Kind) { b.kind, b.kindSet = k, true }

// getBody is the request's GetBody: a fresh reader over the same bytes.
// It reads them with ReadAt, which leaves c.body's position alone, so an
// earlier attempt may still be reading c.body.
func (c *postCall) getBody() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(&c.body, 0, c.body.Size())), nil
}

// guardHeaderTimeout is the header bound the request path's bound.Guard
// enforces: none when the pool's own timer does (see route.attempt).
func (r *route) guardHeaderTimeout() time.Duration {
	if r.timed != nil {
		return 0
	}
	return r.headerTimeout
}

// result names the source schema in an error. An http.Client's errors are
// *url.Error already (its URL, which keeps the query and the user name,
// is set to what outputs show: redact.Request); another error is wrapped
// the same way, so that every error reads alike: source schema "x": Post
// "url": cause.
func result(t bound.Target, resp *http.Response, err error) (*http.Response, error) {
	if err == nil {
		return resp, nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if t.URL != nil {
			ue.URL = redact.Request(t.URL) // the error is this call's own
		}
		return nil, fmt.Errorf("source schema %q: %w", t.Schema, err)
	}
	return nil, t.Err(err)
}

// sender is the innermost RoundTripper of a route's pipeline: it sends on
// the route's pool, again when backend.Resend says the request may go
// again.
type sender struct{ r *route }

func (s sender) RoundTrip(req *http.Request) (*http.Response, error) {
	r := s.r
	var tries backend.Tries
	for {
		resp, err := r.attempt(req)
		if err == nil {
			if backend.TurnsOver(resp) {
				return r.upgraded(req, resp)
			}
			return resp, nil
		}
		switch backend.Resend(req, err, &tries) {
		case backend.NoResend:
			return nil, backend.Cause(err) // the pool closed the body

		case backend.Moved:
			// Nothing was sent: the same request follows its schema to the
			// pool of the configuration in force.
			next, lerr := r.inv.lookupLike(r)
			if lerr != nil {
				gqlhttp.CloseBody(req)
				return nil, errors.Unwrap(lerr)
			}
			if next.pool == r.pool {
				gqlhttp.CloseBody(req)
				return nil, fault.ErrClosed // drained, not replaced
			}
			moved, merr := r.moveTo(next, req)
			if merr != nil {
				gqlhttp.CloseBody(req)
				return nil, merr
			}
			if !next.anyBody {
				// A PostFunc call whose memory is pooled (route.lends)
				// goes on to a pool that may read its body after
				// RoundTrip returns: its memory must not be reused.
				if b := backend.BorrowOf(req.Context()); b != nil {
					b.Spoil()
				}
			}
			r, req = next, moved
			continue
		}
		if req, err = backend.Rewind(req); err != nil {
			return nil, err
		}
	}
}

// attempt sends req once on r's pool, with the pool's own header timer
// when it has one and req has no deadline of its caller's (its request
// bound's is none: bound.CallerDeadline).
func (r *route) attempt(req *http.Request) (*http.Response, error) {
	if !r.anyBody {
		req = inMemory(req)
	}
	if r.timed != nil && !bound.CallerDeadline(req.Context()) {
		return r.timed.RoundTripWithin(req, r.headerTimeout)
	}
	return r.pool.RoundTrip(req)
}

// inMemory returns req as a pool that is not WritesAnyBody (net/http's
// transports) sends it best: a body whose bytes are in memory
// (middleware.UnreadBytes: a Post's that a stage asked for, persisted
// queries' rewritten one) as a NopCloser around a *bytes.Reader, which
// net/http writes with the head in one write, where a body of another type
// costs a second (golang/go#22088). That costs the attempt 2 allocations,
// the copy of the request and the NopCloser; req's own body, which is not
// read, is closed. Any other request is returned as it is.
func inMemory(req *http.Request) *http.Request {
	ub, ok := req.Body.(middleware.UnreadBytes)
	if !ok {
		return req
	}
	m := &memoryAttempt{req: *req}
	m.body.Reset(ub.UnreadBytes())
	m.req.Body = io.NopCloser(&m.body)
	req.Body.Close()
	return &m.req
}

// memoryAttempt is what inMemory allocates for one attempt besides the
// NopCloser: the request and the reader of its bytes.
type memoryAttempt struct {
	req  http.Request
	body bytes.Reader
}

// upgraded takes a response that hands the connection over: judged by
// backend.Upgraded, the connection is then the caller's, counted by the
// invoker so that Close closes it.
func (r *route) upgraded(req *http.Request, resp *http.Response) (*http.Response, error) {
	rwc, err := backend.Upgraded(req, resp)
	if err != nil {
		return nil, err
	}
	resp.Body = r.inv.upgrades.add(rwc)
	return resp, nil
}

// moveTo returns req, which r's pool was drained before sending, as
// it goes to next, the schema's route in the configuration now in force:
// never the old request on a new address.
//
//   - A Post, and a Do for r's URL itself, takes next's URL and Host.
//   - Another Do keeps its URL if it points at next's scheme, host and
//     port, as a Do sent after the reload would.
//   - The request carries r's header rules and went through the
//     middleware: to the same address as before it goes as it is, as it
//     would have a moment earlier; to a new address only if next's rules
//     are equal.
//
// Any other request fails, unsent, with an error that names the schema and
// wraps fault.ErrReloaded. Its bounds stay those the call began with.
func (r *route) moveTo(next *route, req *http.Request) (*http.Request, error) {
	out := req
	if req.URL.String() == r.url.String() && (req.Host == "" || req.Host == r.postTemplate.Host) {
		out = new(http.Request)
		*out = *req
		out.URL, out.Host = next.url, next.postTemplate.Host
	} else if !backend.SameTarget(req.URL, next.url) {
		return nil, fmt.Errorf("source schema %q: %w to %s before the request for %s was sent; it was not sent", r.name, fault.ErrReloaded, redact.Request(next.url), redact.Request(req.URL))
	}
	if !backend.SameTarget(r.url, next.url) && !r.rules.Equal(next.rules) {
		return nil, fmt.Errorf("source schema %q: %w to %s with other header rules before the request was sent; it was not sent", r.name, fault.ErrReloaded, redact.Request(next.url))
	}
	return out, nil
}
