package middleware

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/operation"
)

// classified is a request read for its operation kind.
type classified struct {
	// req is the request to send in the caller's place. If body is non-nil,
	// req.GetBody returns a fresh reader over it, so req can be sent again.
	req *http.Request
	// body is the whole body, or nil if there is none or it was over
	// operation.MaxBodyBytes (then kind is Unknown).
	body []byte
	kind operation.Kind
	// again is the body that a stage further out made (Compress's
	// compressed body, PersistedQueries' rewritten one), or nil: each copy
	// sent again carries a fresh one of its own kind, so that Hedge
	// further in still reads the operation kind the body carries, which
	// its bytes may not tell (a compressed body; a hash in place of the
	// query).
	again replayable
	// inPlace: body is req's own, handed over unread (UnreadBytes), so
	// the kind it remembers (kindMemo) serves.
	inPlace bool
}

// replayable is a request body that a stage made and that gives itself
// again: a fresh reader over the same bytes, of its own type, carrying
// what it carries.
type replayable interface {
	io.ReadCloser
	again() (io.ReadCloser, error)
}

// classify reads req's body, at most operation.MaxBodyBytes of it, and
// returns the kind of operation req runs by operation.Classify: its
// method, its URL's query string and its body, so that a GET with ?query=
// is told as a POST is. It never modifies req. It reads the body as
// bodyOf does.
func classify(req *http.Request) (classified, error) {
	c, err := bodyOf(req)
	if err != nil {
		return c, err
	}
	switch eb, _ := c.again.(*encodedBody); {
	case eb != nil:
		// Compress further out sent it compressed: the bytes to send again
		// are the compressed ones, the kind is the uncompressed body's.
		c.kind = eb.kind(c.req)
	case c.inPlace:
		c.kind = rememberedKind(c.req, c.body)
	case c.body != nil || c.req.Body == nil || c.req.Body == http.NoBody:
		c.kind = kindOf(c.req, c.body)
	}
	return c, nil
}

// bodyOf reads req's body, at most operation.MaxBodyBytes of it, for a
// stage that sends it on (and maybe again), without telling its kind. It
// never modifies req.
//
// A body that hands over its unread bytes (UnreadBytes) and can be had
// again (GetBody) is taken where it lies (inPlace). Otherwise, with
// req.GetBody, the body is read from a fresh copy and req is sent as it
// is. Without it, req.Body is read (and closed, if read whole) and the
// returned request is a shallow copy that carries the bytes; a body over
// the limit is stitched back together so that the next handler reads
// every byte (and the result's body is nil).
func bodyOf(req *http.Request) (classified, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return classified{req: req}, nil
	}
	if eb, ok := req.Body.(*encodedBody); ok {
		return classified{req: req, body: eb.sent, again: eb}, nil
	}
	if ub, ok := req.Body.(UnreadBytes); ok && req.GetBody != nil {
		// The body's bytes are in memory, unread (a transport.Invoker's
		// Post, or PersistedQueries' rewritten body): no copy; GetBody
		// gives them again for a retry.
		if body := ub.UnreadBytes(); len(body) <= operation.MaxBodyBytes {
			rb, _ := req.Body.(replayable)
			return classified{req: req, body: body, again: rb, inPlace: true}, nil
		}
		return classified{req: req}, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			closeBody(req)
			return classified{}, fmt.Errorf("%s %s: rewinding request body: %w", req.Method, redact.Request(req.URL), err)
		}
		body, whole, err := readUpTo(rc)
		rc.Close()
		if err != nil {
			closeBody(req)
			return classified{}, fmt.Errorf("%s %s: reading request body: %w", req.Method, redact.Request(req.URL), err)
		}
		if !whole {
			return classified{req: req}, nil
		}
		return classified{req: req, body: body}, nil
	}
	body, whole, err := readUpTo(req.Body)
	if err != nil {
		closeBody(req)
		return classified{}, fmt.Errorf("%s %s: reading request body: %w", req.Method, redact.Request(req.URL), err)
	}
	out := *req
	if !whole {
		out.Body = stitched{Reader: io.MultiReader(bytes.NewReader(body), req.Body), Closer: req.Body}
		return classified{req: &out}, nil
	}
	req.Body.Close()
	setBody(&out, body)
	return classified{req: &out, body: body}, nil
}

// kindMemo is a request body that keeps the operation kind of its request
// once a stage told it, as the root package's Post body does: the request
// and its body do not change in flight, so dedupe, retry and hedge parse
// the body once between them.
type kindMemo interface {
	OperationKind() (operation.Kind, bool)
	SetOperationKind(operation.Kind)
}

// rememberedKind is kindOf(req, body), from req's body's memo when it has
// one (kindMemo).
func rememberedKind(req *http.Request, body []byte) operation.Kind {
	m, ok := req.Body.(kindMemo)
	if !ok {
		return kindOf(req, body)
	}
	if k, ok := m.OperationKind(); ok {
		return k
	}
	k := kindOf(req, body)
	m.SetOperationKind(k)
	return k
}

// kindOf is the kind of operation of req with body (nil: none).
func kindOf(req *http.Request, body []byte) operation.Kind {
	var rawQuery string
	if req.URL != nil {
		rawQuery = req.URL.RawQuery
	}
	return operation.Classify(req.Method, rawQuery, body)
}

// readUpTo reads r until EOF or past operation.MaxBodyBytes. whole reports
// whether body is all of r.
func readUpTo(r io.Reader) (body []byte, whole bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, operation.MaxBodyBytes+1))
	return body, err == nil && len(body) <= operation.MaxBodyBytes, err
}

// setBody makes body the body of r, readable again through GetBody. An
// empty body is http.NoBody, which every engine sends as no body: an
// empty reader of length 0 would read as one of unknown length (a GET
// sent chunked).
func setBody(r *http.Request, body []byte) {
	if len(body) == 0 {
		r.Body = http.NoBody
		r.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		r.ContentLength = 0
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
}

// resend returns a shallow copy of c.req with a fresh reader over its
// body, for sending it once more; c must carry its whole body, or none (a
// GET). A body a stage made (c.again: compressed, or rewritten for
// persisted queries) stays one of its kind (its GetBody, the operation
// kind it carries, its length), so that a retry of such a query is hedged
// as the first try would be.
func (c classified) resend() *http.Request {
	out := *c.req
	if c.again != nil {
		out.Body, _ = c.again.again()
		out.GetBody = c.again.again
		out.ContentLength = int64(len(c.body))
		return &out
	}
	setBody(&out, c.body)
	return &out
}

// closeBody closes req's body, as a RoundTripper must even when it fails.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// stitched is a request body whose first bytes were read ahead.
type stitched struct {
	io.Reader
	io.Closer
}

// drain reads a little of a discarded response body and closes it, so that
// its connection can be reused when the rest is short.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	resp.Body.Close()
}

// drainLimit bounds how much of a discarded body is read, as
// go-retryablehttp's respReadLimit does.
const drainLimit = 4096
