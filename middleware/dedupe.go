package middleware

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/sharekey"
	"github.com/fusiongo/transport/operation"
)

// maxSharedBody is the largest response body that Dedupe buffers to share.
const maxSharedBody = 32 << 20

// Dedupe returns a middleware that lets identical queries in flight at the
// same time share one source schema request, as HotChocolate's request
// deduplication does. Mutations, subscriptions and requests whose kind
// operation.Classify cannot tell always go on their own, and so does a request
// with trailers.
//
// Two queries are identical if their method, URL, Host and body are equal,
// and every header of the two requests is, name and values, but for the
// headers that are new for every call and say nothing about who asks: the
// trace context (Traceparent, Tracestate, B3, X-B3-Traceid, X-B3-Spanid,
// X-B3-Parentspanid, X-B3-Sampled, X-B3-Flags) and X-Request-Id, in any
// case. With them in the key, no two calls would ever share (a tracing
// middleware writes a new span into each); Baggage stays in, since it may
// carry a user's identity. So no two users share an answer whatever header
// tells them apart: Authorization, Cookie, a tenant or user header a rule
// forwarded, one the caller set itself. The first caller's trace context
// headers are the ones sent.
//
// Dedupe keys the request as it sees it, so a header that a middleware
// inside it adds (Token in the order this package recommends) is not in
// its key: used on its own, Dedupe needs a TokenFunc whose value depends
// on the caller to run outside it. A transport.Invoker's built-in dedupe
// keys the request as it would be sent, less what the transport itself
// adds: the source schema's transport.SchemaOptions.AttemptMiddleware,
// which runs inside it, first runs once per query as a key probe that
// sends nothing (see IsKeyProbe), and the request that comes out is
// keyed; a query whose probe fails goes alone. There a per-user Token is
// in the key.
//
// The first caller sends its own request, on its own goroutine and
// context, and the callers that arrive with an identical query before that
// request's response headers are in join it and wait. Once the headers are
// in, the query is no longer open to join: a caller that arrives later
// sends its own request. If nobody joined by then, the first caller gets
// the response as it is, streaming, with nothing buffered or copied (and a
// transport.Invoker's PostFunc keeps its pooled memory). If callers
// joined, the first caller reads the body whole, once, for all of them, and
// each caller gets its own *http.Response: a copy with cloned Header and
// Trailer and its own reader over the body. A failure of the shared request
// or of that read is every caller's RoundTrip error.
//
// Each caller waits only as long as its own context allows, and gets its
// context's error when it ends; the others wait on. The shared request is
// the first caller's, under its cancellation and deadline: if the first
// caller leaves (its context ends) before the body is read, its request
// ends, and the callers that joined it start over, as if they had just
// come: one of them sends its own request, the rest join that one. Once
// the shared body is being read, each caller tells its own header bound so
// (the request path's header timer stops): the wait runs under each
// caller's body bounds (its deadline, request_timeout), never under a
// header timeout.
//
// A response is not shared if its body is over 32 MiB or it streams
// (multipart/mixed incremental delivery, text/event-stream): the first
// caller gets it streaming, and every caller that joined sends its own
// request.
//
// Each RoundTripper that the middleware returns shares only the requests
// that pass through it: two source schemas never share one.
//
// golang.org/x/sync/singleflight is not used: its callers cannot leave on
// their own context, and it holds every result until all callers have it.
func Dedupe() Middleware {
	return newDedupe(nil, nil, maxSharedBody)
}

func init() {
	sharekey.Dedupe = func(o sharekey.DedupeOptions) Middleware { return newDedupe(o.Probe, o.Joined, maxSharedBody) }
}

// newDedupe is Dedupe with probe, if non-nil, to key each call on its
// request as the probe's middleware would send it, a hook that is called,
// if non-nil, each time a caller has joined a call, with the number of
// callers now waiting on it, and the largest body to share.
func newDedupe(probe *sharekey.Probe, joined func(waiters int), maxBody int64) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &deduper{wrapped: wrap(next), probe: probe, joined: joined, maxBody: maxBody, calls: make(map[sharekey.Key]*call)}
	}
}

// deduper is the RoundTripper of Dedupe. Each wraps one next RoundTripper
// and shares only its own calls.
type deduper struct {
	wrapped
	probe   *sharekey.Probe   // immutable; nil: keys are taken from the request as it is
	joined  func(waiters int) // immutable
	maxBody int64             // immutable

	mu    sync.Mutex
	calls map[sharekey.Key]*call // in flight, until their response headers are in
}

var _ http.RoundTripper = (*deduper)(nil)

// call is one query in flight that others may join: the first caller's
// own request, sent on its own goroutine and context. The first caller
// owns it; a follower holds it from joining until it returns.
type call struct {
	// headers and done are made by the first follower to join, under
	// deduper.mu: nil while nobody joined, since the first caller never
	// waits on them. headers is closed once the shared response's headers
	// are in and its body is read for the followers; done once the
	// outcome is set.
	headers chan struct{}
	done    chan struct{}

	// Guarded by deduper.mu.
	waiters  int  // callers waiting on the call, the first caller included
	finished bool // the outcome is set; done is about to close

	// The outcome, set by the first caller before done closes; read by
	// the followers after.
	outcome outcome
	err     error          // the shared error (outcome shared)
	resp    *http.Response // the shareable response, Body and Request nil (outcome shared)
	body    []byte         // its body
}

// outcome is what a call's followers do once it has ended.
type outcome int

const (
	// shared: each follower takes the shared error, or its own copy of
	// the shared response.
	shared outcome = iota
	// alone: the response could not be shared (it streams, or its body
	// is too large): each follower sends its own request.
	alone
	// again: the first caller left (its context ended, or its request
	// panicked) before the answer was read: the followers start over,
	// one of them sends its own request and the rest join it.
	again
)

// idleCalls pools the calls that no follower ever joined: no one but
// their first caller ever held them.
var idleCalls = sync.Pool{New: func() any { return new(call) }}

// RoundTrip sends req, or waits for an identical query in flight.
func (d *deduper) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := classify(req)
	if err != nil {
		return nil, err
	}
	if c.kind != operation.Query || len(c.req.Trailer) > 0 || gqlhttp.AsksUpgrade(c.req) {
		// Trailers are not in the key: a request with them goes alone. A
		// protocol upgrade hands its caller a connection, which no one
		// shares.
		return d.next.RoundTrip(c.req)
	}
	k, ok := d.key(c.req, c.body)
	if !ok {
		// The request as it would be sent is unknown (a probed
		// middleware failed): it goes alone, and fails, if it does,
		// as its attempt would.
		return d.next.RoundTrip(c.req)
	}
	return d.join(k, req, c.req, d.next)
}

// join sends out, the request of req keyed k, through send, or waits for
// the call in flight under k and takes its answer: the loop of RoundTrip,
// for any key (the response cache collapses its misses through it, by its
// own key and with a send of its own).
func (d *deduper) join(k sharekey.Key, req, out *http.Request, send http.RoundTripper) (*http.Response, error) {
	for {
		d.mu.Lock()
		cl, inFlight := d.calls[k]
		if !inFlight {
			cl = idleCalls.Get().(*call)
			cl.waiters = 1
			d.calls[k] = cl
			d.mu.Unlock()
			if d.joined != nil {
				d.joined(1)
			}
			return d.lead(k, cl, req, out, send)
		}
		if cl.done == nil {
			cl.headers, cl.done = make(chan struct{}), make(chan struct{})
		}
		cl.waiters++
		waiters := cl.waiters
		d.mu.Unlock()
		if d.joined != nil {
			d.joined(waiters)
		}
		switch resp, err, o := d.follow(cl, req); o {
		case alone:
			return send.RoundTrip(out)
		case shared:
			closeBody(out) // not sent: the answer is the first caller's
			return resp, err
		}
		// again: the first caller left. The key is free, or another
		// follower leads by now.
		if err := req.Context().Err(); err != nil {
			closeBody(out)
			return nil, err
		}
	}
}

// lead sends out through send, the request of req that the first caller
// of cl brings, on the caller's goroutine and context, and takes cl off the map once
// its response's headers are in (or it failed). If no follower waits by
// then, the response is the caller's as it is, streaming; cl goes back to
// the pool if none ever joined. Otherwise the body is read whole and
// every caller gets a copy of the response (share).
func (d *deduper) lead(k sharekey.Key, cl *call, req, out *http.Request, send http.RoundTripper) (*http.Response, error) {
	settled := false
	defer func() {
		if !settled && d.detach(k, cl) {
			// next, or the read of the body, panicked: the key is free,
			// the followers start over, and cl is left to the garbage
			// collector.
			d.end(cl, again)
		}
	}()
	resp, err := send.RoundTrip(out)
	if !d.detach(k, cl) {
		settled = true
		// Every follower that joined, if any, has left. A call that none
		// ever joined was held by no one else: it serves another query.
		if cl.done == nil {
			*cl = call{}
			idleCalls.Put(cl)
		}
		return resp, err
	}
	o, resp, err := d.share(req.Context(), cl, out, resp, err)
	settled = true
	d.end(cl, o)
	if o == shared && err == nil {
		return cl.response(req), nil
	}
	return resp, err
}

// share takes the result of out, the first caller's request of cl on
// ctx, for the followers that wait: the shared error, or the response
// read whole (cl.err, cl.resp and cl.body, outcome shared); or it returns
// outcome alone with the response, streaming, that the first caller gets
// as it is; or, if ctx ended the request, outcome again with its error.
func (d *deduper) share(ctx context.Context, cl *call, out *http.Request, resp *http.Response, err error) (outcome, *http.Response, error) {
	if err == nil && streams(resp) {
		return alone, resp, nil
	}
	if err == nil {
		// The headers are in: from now on the callers wait under their
		// body bounds only, the first caller as it reads for all.
		bound.HeadersIn(ctx)
		close(cl.headers)
		var body []byte
		var stream *http.Response
		body, stream, err = readShared(out, resp, d.maxBody)
		switch {
		case stream != nil:
			return alone, stream, nil
		case err == nil:
			// The followers hold what the response was made of (its
			// Header's strings): if the transport lent its memory to the
			// first caller's call (a PostFunc), that memory must not
			// serve another response.
			if b := backend.BorrowOf(ctx); b != nil {
				b.Forget()
			}
			resp.Body, resp.Request = nil, nil
			cl.resp, cl.body = resp, body
			return shared, nil, nil
		}
	}
	if ctx.Err() != nil {
		// The first caller's own context ended the request: not an
		// answer of the source schema.
		return again, nil, err
	}
	cl.err = err
	return shared, nil, err
}

// detach takes cl off the map, so that a later caller sends its own
// request, and reports whether any follower still waits on it.
func (d *deduper) detach(k sharekey.Key, cl *call) (waiting bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls[k] == cl {
		delete(d.calls, k)
	}
	return cl.waiters > 1
}

// end sets cl's outcome, with its error and response already in place,
// and wakes its followers. cl has followers (its channels are made).
func (d *deduper) end(cl *call, o outcome) {
	d.mu.Lock()
	cl.outcome = o
	cl.finished = true
	d.mu.Unlock()
	close(cl.done)
}

// follow waits for cl's outcome as a follower that came with req. With
// o shared, it returns the caller's own copy of the shared response, or
// the shared error, or the caller's context's error if that ended first;
// otherwise the caller sends its own request (alone) or starts over
// (again).
func (d *deduper) follow(cl *call, req *http.Request) (resp *http.Response, err error, o outcome) {
	ctx := req.Context()
	select {
	case <-cl.headers:
		// The body is read for all: from now on the caller waits under
		// its body bounds, never its header bound.
		bound.HeadersIn(ctx)
		select {
		case <-cl.done:
		case <-ctx.Done():
			if d.leave(cl) {
				return nil, ctx.Err(), shared
			}
			<-cl.done // the outcome came in as ctx ended: take it
		}
	case <-cl.done:
	case <-ctx.Done():
		if d.leave(cl) {
			return nil, ctx.Err(), shared
		}
		<-cl.done
	}
	switch {
	case cl.outcome != shared:
		return nil, nil, cl.outcome
	case cl.err != nil:
		return nil, cl.err, shared
	default:
		return cl.response(req), nil, shared
	}
}

// leave takes a follower whose context ended off cl. It reports false if
// cl's outcome is already set, and the caller must take it instead.
func (d *deduper) leave(cl *call) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cl.finished {
		return false
	}
	cl.waiters--
	return true
}

// readShared reads the body of resp, the response to req, whole if it can
// be shared: it does not stream and has at most maxBody bytes. Otherwise it
// returns resp as stream, with any bytes read put back in front.
func readShared(req *http.Request, resp *http.Response, maxBody int64) (body []byte, stream *http.Response, err error) {
	if streams(resp) {
		return nil, resp, nil
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("%s %s: reading response body: %w", req.Method, redact.Request(req.URL), err)
	}
	if int64(len(body)) > maxBody {
		resp.Body = stitched{Reader: io.MultiReader(bytes.NewReader(body), resp.Body), Closer: resp.Body}
		return nil, resp, nil
	}
	resp.Body.Close()
	return body, nil, nil
}

// streams reports whether resp is a stream of results (GraphQL incremental
// delivery or server-sent events) that its reader must get as it comes.
func streams(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && (mt == "multipart/mixed" || mt == "text/event-stream")
}

// response returns the caller's own copy of the shared response.
func (cl *call) response(req *http.Request) *http.Response {
	r := *cl.resp
	r.Header = cl.resp.Header.Clone()
	r.Trailer = cl.resp.Trailer.Clone()
	r.Body = io.NopCloser(bytes.NewReader(cl.body))
	r.ContentLength = int64(len(cl.body))
	r.Request = req
	return &r
}

// key returns the key of req, with body its whole body, by the one rule
// for sharing: on req as it is (sharekey.Of), or, with a probe, on req as
// the probe's middleware would send it. ok is false if the probe could not
// tell; then req must go alone.
func (d *deduper) key(req *http.Request, body []byte) (k sharekey.Key, ok bool) {
	if d.probe == nil {
		return sharekey.Of(req, body), true
	}
	return d.probe.Key(req, body)
}

// IsKeyProbe reports whether ctx is, or derives from, the context of a
// dedupe key probe. A transport.Invoker with dedupe on runs the source
// schema's attempt middleware (transport.SchemaOptions.AttemptMiddleware)
// once for each query that could be shared, before the query goes on, as
// a probe: the request that comes out of the chain is keyed (see Dedupe)
// and not sent, and the middleware gets an error back, never a response.
// So the key covers what the middleware would put on the attempt, Token's
// Authorization included, and two callers share an answer only if their
// attempts would be alike. A middleware must do to a probe's request what
// it does to an attempt's, and may skip what reaches beyond the request:
// counting, logging, waiting for a turn (this package's RequestLog writes no
// record for it, a RateLimiter takes no turn, and a Breaker counts it
// neither way). A probe that fails, that answers
// itself, or that sends other than one request makes the call go alone;
// a middleware that adds a value new for each request (a nonce) keeps
// every call from sharing. Any other context reports false.
func IsKeyProbe(ctx context.Context) bool {
	return sharekey.IsProbe(ctx)
}
