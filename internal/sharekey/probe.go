package sharekey

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Probe keys a call on its request as a chain of middleware would send it:
// the request path's SchemaOptions.AttemptMiddleware, which sits inside
// dedupe and may add what tells users apart (middleware.Token's
// Authorization). It runs the chain once over a RoundTripper that takes
// the request and sends nothing, under a context that IsProbe reports, and
// keys what came out with Of. A Probe is safe for concurrent use.
type Probe struct {
	rt http.RoundTripper // immutable: the chain over taker
}

// NewProbe returns a Probe over mws, the first outermost; nil entries are
// skipped. It returns nil if there are none: the request as it is is the
// request as it is sent.
func NewProbe(mws []func(http.RoundTripper) http.RoundTripper) *Probe {
	var rt http.RoundTripper = taker{}
	n := 0
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			rt = mws[i](rt)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return &Probe{rt: rt}
}

// ErrProbed is what a probe's innermost RoundTripper returns to the
// middleware above it: the request was taken for its key, not sent.
// Package middleware's policies count it as a request refused unsent.
var ErrProbed = errors.New("sharekey: request taken for the dedupe key, not sent")

// maxProbedBody is the largest body that a probed middleware may put in
// place of the one it got and still have its request keyed: a larger one
// goes alone, as dedupe does with any body over this size.
const maxProbedBody = 1 << 20

// probeKey is the context key that marks a probe; its value is the probe's
// run.
type probeKey struct{}

// IsProbe reports whether ctx is, or derives from, the context of a
// Probe's run.
func IsProbe(ctx context.Context) bool {
	_, ok := ctx.Value(probeKey{}).(*run)
	return ok
}

// run is one call of Probe.Key: where taker puts what it took.
type run struct {
	body  *probeBody                  // immutable: the body the probe gave (nil: none); taker knows it by identity
	given []byte                      // immutable: its bytes
	use   func(*http.Request, []byte) // immutable: Each's f; nil: Key's run, which keys with Of

	mu     sync.Mutex
	taken  int  // requests taker got; guarded by mu
	keyed  bool // the first was keyed; guarded by mu
	key    Key  // its key; guarded by mu
	closed bool // Key has returned: later requests are not counted; guarded by mu
}

// probeBody is the body a probe gives the chain: the bytes dedupe read.
type probeBody struct{ *bytes.Reader }

func (*probeBody) Close() error { return nil }

// Key returns the key of req, with body its whole body (nil: none), as the
// probe's middleware would send it: it runs them on a shallow copy of req
// with a fresh reader over body and a context that IsProbe reports, and
// keys the request that reached the end of the chain. ok is false, and the
// call must not share, if no request or more than one reached it (a
// middleware failed, answered itself, or sent twice), or one did with a
// body of its own over 1 MiB or that could not be read. req is not
// modified.
func (p *Probe) Key(req *http.Request, body []byte) (k Key, ok bool) {
	return p.run(req, body, nil)
}

// Each runs the probe's middleware as Key does and calls f with the one
// request that reached the end of the chain and its whole body, on the
// goroutine that sent it, before Each returns; f must not keep either. ok
// is false, and f was not called or its result must not be used, where
// Key's ok would be false. The response cache keys a request in several
// scopes at once this way.
func (p *Probe) Each(req *http.Request, body []byte, f func(sent *http.Request, body []byte)) (ok bool) {
	_, ok = p.run(req, body, f)
	return ok
}

// run is Key, and Each with use non-nil.
func (p *Probe) run(req *http.Request, body []byte, use func(*http.Request, []byte)) (k Key, ok bool) {
	r := &run{given: body, use: use}
	preq := req.WithContext(context.WithValue(req.Context(), probeKey{}, r))
	// Never req's own body: the probe must leave it unread.
	preq.Body, preq.GetBody, preq.ContentLength = nil, nil, 0
	if body != nil {
		r.body = &probeBody{bytes.NewReader(body)}
		preq.Body = r.body
		preq.GetBody = func() (io.ReadCloser, error) { return &probeBody{bytes.NewReader(body)}, nil }
		preq.ContentLength = int64(len(body))
	}
	// The error is ErrProbed, wrapped or not, when the request reached
	// the end; whatever the chain returns, taken tells what happened.
	resp, _ := p.rt.RoundTrip(preq)
	if resp != nil && resp.Body != nil {
		resp.Body.Close() // a middleware answered in the probe's place
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.key, r.taken == 1 && r.keyed
}

// taker is a Probe's innermost RoundTripper: it keys the request it gets
// in its run, and sends nothing.
type taker struct{}

func (taker) RoundTrip(req *http.Request) (*http.Response, error) {
	r, _ := req.Context().Value(probeKey{}).(*run)
	if r == nil {
		// A middleware put a context of its own, not derived from the
		// probe's, in place: nothing to key it in.
		closeBody(req)
		return nil, ErrProbed
	}
	body, read := r.bodyOf(req)
	r.mu.Lock()
	first := !r.closed && r.taken == 0
	if !r.closed {
		r.taken++
	}
	r.mu.Unlock()
	if first && read {
		var k Key
		if r.use != nil {
			r.use(req, body)
		} else {
			k = Of(req, body)
		}
		r.mu.Lock()
		r.key, r.keyed = k, true
		r.mu.Unlock()
	}
	closeBody(req)
	return nil, ErrProbed
}

// bodyOf returns the whole body of req, a request that reached the end of
// r's chain: the bytes r gave, if it is still that body; else what it
// reads, up to maxProbedBody (read false past it, or on a read error).
func (r *run) bodyOf(req *http.Request) ([]byte, bool) {
	var body []byte
	switch {
	case req.Body == nil || req.Body == http.NoBody:
	case r.body != nil && req.Body == io.ReadCloser(r.body):
		body = r.given
	default:
		b, err := io.ReadAll(io.LimitReader(req.Body, maxProbedBody+1))
		if err != nil || len(b) > maxProbedBody {
			return nil, false
		}
		body = b
	}
	return body, true
}

// closeBody closes req's body, as a RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
