package middleware

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

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
// The first caller starts the shared request; the callers that arrive while
// it runs wait for its result. Each caller waits only as long as its own
// context allows, and gets its context's error when it ends; the shared
// request runs on with the first caller's context values but without its
// cancellation or deadline, and is cancelled only once every caller has
// gone. Once the shared response's headers are in, each caller tells its
// own header bound so (the request path's header timer stops): the shared read of the body runs
// under each caller's body bounds (its deadline, request_timeout), never
// under a header timeout. Each caller gets its own *http.Response: a copy
// with cloned Header and Trailer and its own reader over the body, which is
// read whole once. A failure to read that body is every caller's RoundTrip
// error.
//
// A response is not shared if its body is over 32 MiB or it streams
// (multipart/mixed incremental delivery, text/event-stream): the first
// caller, if still waiting, gets it streaming, and every other caller sends
// its own request.
//
// Each RoundTripper that the middleware returns shares only the requests
// that pass through it: two source schemas never share one.
//
// golang.org/x/sync/singleflight is not used: its callers cannot leave on
// their own context, and the call is not cancelled when they all have.
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
	calls map[sharekey.Key]*call // in flight
}

var _ http.RoundTripper = (*deduper)(nil)

// call is one shared request.
type call struct {
	headers chan struct{}      // closed once the shared request's RoundTrip returned: its headers are in, or it failed
	done    chan struct{}      // closed once the result is set, after headers
	cancel  context.CancelFunc // ends the shared request

	// Guarded by deduper.mu.
	waiters    int  // callers waiting, the first caller included
	leaderGone bool // the first caller has stopped waiting
	finished   bool // the result is set; done is about to close

	// The result, set before done closes.
	err    error
	resp   *http.Response // shareable response, Body nil
	body   []byte         // its body
	stream *http.Response // not shareable: the first caller's, streaming
}

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

	d.mu.Lock()
	cl, inFlight := d.calls[k]
	if !inFlight {
		ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
		cl = &call{headers: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
		d.calls[k] = cl
		// The shared request is a deep copy with its own body: the first
		// caller may leave, and reuse its request and body, while it is
		// still being written.
		shared := c.req.Clone(ctx)
		setBody(shared, c.body)
		go d.run(req.Context(), k, cl, shared)
	}
	cl.waiters++
	waiters := cl.waiters
	d.mu.Unlock()
	if d.joined != nil {
		d.joined(waiters)
	}
	leader := !inFlight
	closeBody(c.req) // the shared request has a copy

	ctx := req.Context()
	// Until the shared response's headers are in, the caller waits under
	// its header bound; from then on, under its body bounds only.
	select {
	case <-cl.headers:
		bound.HeadersIn(ctx)
	case <-ctx.Done():
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if d.leave(k, cl, leader) {
			return nil, ctx.Err()
		}
		<-cl.done // the result came in as ctx ended: take it
	}
	switch {
	case cl.err != nil:
		return nil, cl.err
	case cl.resp != nil:
		return cl.response(req), nil
	case leader:
		cl.stream.Request = req
		return cl.stream, nil
	default: // not shareable: go alone
		return d.next.RoundTrip(c.again())
	}
}

// leave takes a caller whose context ended off cl, and cancels the shared
// request if it was the last one. It reports false if cl's result is
// already set, and the caller must take it instead.
func (d *deduper) leave(k sharekey.Key, cl *call, leader bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cl.finished {
		return false
	}
	cl.waiters--
	if leader {
		cl.leaderGone = true
	}
	if cl.waiters == 0 {
		cl.cancel()
		if d.calls[k] == cl {
			delete(d.calls, k) // a later caller starts afresh
		}
	}
	return true
}

// run sends the shared request req and sets cl's result. leaderCtx is the
// context of the first caller.
func (d *deduper) run(leaderCtx context.Context, k sharekey.Key, cl *call, req *http.Request) {
	resp, err := d.next.RoundTrip(req)
	close(cl.headers)
	var body []byte
	var stream *http.Response
	if err == nil {
		body, stream, err = readShared(req, resp, d.maxBody)
	}

	d.mu.Lock()
	cl.finished = true
	if d.calls[k] == cl {
		delete(d.calls, k)
	}
	handOver := stream != nil && !cl.leaderGone
	d.mu.Unlock()

	switch {
	case err != nil:
		cl.err = err
		cl.cancel()
	case stream != nil && handOver:
		// The first caller reads on: its own cancellation now ends the
		// request, and so does closing the body.
		stop := context.AfterFunc(leaderCtx, cl.cancel)
		stream.Body = &onClose{ReadCloser: stream.Body, close: func() { stop(); cl.cancel() }}
		cl.stream = stream
	case stream != nil:
		stream.Body.Close()
		cl.cancel()
	default:
		resp.Body = nil
		cl.resp, cl.body = resp, body
		cl.cancel()
	}
	close(cl.done)
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

// onClose is a response body that calls close after closing.
type onClose struct {
	io.ReadCloser
	once  sync.Once
	close func()
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.close)
	return err
}
