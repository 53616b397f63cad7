package middleware

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/fusiongo/transport/internal/jsonscan"
	"github.com/fusiongo/transport/operation"
)

// apqRequest is where the members of a GraphQL request object that
// persisted queries rewrite stand in its body.
type apqRequest struct {
	query [2]int // the "query" member, from its key to the end of its value
	text  []byte // its value: a JSON string, quotes included
	// ext is the "extensions" member's value, an object without a
	// persistedQuery ([0, 0]: none); extEmpty, that it has no member.
	ext      [2]int
	extEmpty bool
	// name and vars are the values of "operationName" and "variables";
	// nil when absent.
	name, vars []byte
}

// The members of a request object that persisted queries rewrite, each a
// bit of readRequest's mask.
const (
	memberQuery = 1 << iota
	memberName
	memberVars
	memberExt
)

// readRequest finds the members of body, a JSON request object, that
// persisted queries rewrite; it walks the object's frame, not the values
// (jsonscan.Members). ok is false for a body they leave alone: not an
// object, or one whose frame breaks; a
// member other than "query", "operationName", "variables" and
// "extensions" (spelt exactly, without escapes), or one of them twice, so
// that no server reads a query the hash does not name; "query" that is no
// string, or no longer than the extension that would replace it;
// "extensions" that is no object, or has a persistedQuery already.
func readRequest(body []byte) (d apqRequest, ok bool) {
	seen := 0
	ok = jsonscan.Members(body, func(key, value []byte) bool {
		var bit int
		switch string(key) {
		case `"query"`:
			bit = memberQuery
			at := jsonscan.Offset(body, key)
			d.query = [2]int{at, jsonscan.Offset(body, value) + len(value)}
			d.text = value
		case `"operationName"`:
			bit, d.name = memberName, value
		case `"variables"`:
			bit, d.vars = memberVars, value
		case `"extensions"`:
			bit = memberExt
			if !d.readExtensions(body, value) {
				return false
			}
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	return d, ok && seen&memberQuery != 0 && d.text[0] == '"' && len(d.text) > 1 && d.query[1]-d.query[0] > hashMemberLen
}

// readExtensions records value, the "extensions" member of body, if it is
// an object without a persistedQuery member.
func (d *apqRequest) readExtensions(body, value []byte) bool {
	if value[0] != '{' {
		return false
	}
	d.extEmpty = true
	ok := jsonscan.Members(value, func(key, _ []byte) bool {
		d.extEmpty = false
		return !bytes.EqualFold(key, []byte(`"persistedQuery"`))
	})
	at := jsonscan.Offset(body, value)
	d.ext = [2]int{at, at + len(value)}
	return ok
}

// cut is the part of body to take out to remove its "query" member: the
// member and the comma after it, or before it when it is the last one.
func (d *apqRequest) cut(body []byte) (from, to int) {
	from, to = d.query[0], d.query[1]
	if next := jsonscan.SkipSpace(body, to); body[next] == ',' {
		return from, jsonscan.SkipSpace(body, next+1)
	}
	for from > 0 && body[from-1] != ',' {
		from-- // white space, back to the comma of the member before
	}
	return from - 1, to
}

// edit replaces body[at:end] with the concatenation of ins.
type edit struct {
	at, end int
	ins     [][]byte
}

// splice returns a new slice: body with edits applied, in order (they do
// not overlap), in one allocation of the result's length.
func splice(body []byte, edits ...edit) []byte {
	n := len(body)
	for _, e := range edits {
		n -= e.end - e.at
		for _, b := range e.ins {
			n += len(b)
		}
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		out = append(out, body[last:e.at]...)
		for _, b := range e.ins {
			out = append(out, b...)
		}
		last = e.end
	}
	return append(out, body[last:]...)
}

var comma = []byte{','}

// spliceHashOnly returns body with its query replaced by the
// persistedQuery extension of h: where "query" stood when there is no
// "extensions", else inside "extensions", with "query" taken out.
func spliceHashOnly(body []byte, d apqRequest, h *queryHash) []byte {
	if d.ext == [2]int{} {
		return splice(body, edit{at: d.query[0], end: d.query[1], ins: [][]byte{h.member}})
	}
	ins := edit{at: d.ext[0] + 1, end: d.ext[0] + 1, ins: [][]byte{h.persistedQuery(), comma}}
	if d.extEmpty {
		ins.ins = ins.ins[:1]
	}
	from, to := d.cut(body)
	if from < ins.at {
		return splice(body, edit{at: from, end: to}, ins)
	}
	return splice(body, ins, edit{at: from, end: to})
}

// spliceWithHash returns body with the persistedQuery extension of h
// added: after "query" when there is no "extensions", else inside it.
func spliceWithHash(body []byte, d apqRequest, h *queryHash) []byte {
	if d.ext == [2]int{} {
		return splice(body, edit{at: d.query[1], end: d.query[1], ins: [][]byte{comma, h.member}})
	}
	ins := [][]byte{h.persistedQuery(), comma}
	if d.extEmpty {
		ins = ins[:1]
	}
	return splice(body, edit{at: d.ext[0] + 1, end: d.ext[0] + 1, ins: ins})
}

// persistedCall is what PersistedQueries allocates for one request it
// rewrote, besides its body's bytes: the request, its body, and the kind
// of the request it was made from, which the body and its copies tell.
type persistedCall struct {
	req  http.Request  // the request sent; owned by the pipeline below, as any request
	body persistedBody // req's body; read by whoever sends req
	kind lazyKind      // told once, to req's body and its copies (safe for concurrent use)
}

// newPersisted returns c's request with body as its body: a POST that
// tells c's operation kind, which body, holding a hash, may not.
func newPersisted(c classified, body []byte) *http.Request {
	call := &persistedCall{req: *c.req, body: persistedBody{sent: body}}
	call.kind.from = c
	call.body.kind = &call.kind
	call.body.r.Reset(body)
	out := &call.req
	out.Body = &call.body
	out.GetBody = call.body.again
	out.ContentLength = int64(len(body))
	return out
}

// lazyKind is the operation kind of a request, told when first asked:
// most calls go through no stage that asks. Safe for concurrent use (a
// hedge's copy of the body may ask from its own goroutine).
type lazyKind struct {
	once sync.Once
	from classified // the request the kind is of, with its body; read-only
	kind operation.Kind
}

func (k *lazyKind) get() operation.Kind {
	k.once.Do(func() { k.kind = kindOf(k.from.req, k.from.body) })
	return k.kind
}

// persistedBody is a request body that PersistedQueries rewrote. Its
// bytes are handed over unread (UnreadBytes), to Compress and to classify,
// and it tells the operation kind of the request it was made from
// (kindMemo), since the hash in its place cannot: so Retry and Hedge
// further in treat a query by its hash as the query it is.
type persistedBody struct {
	r    bytes.Reader // the read position; owned by the body's one reader
	sent []byte       // never written
	kind *lazyKind    // the call's
}

func (b *persistedBody) Read(p []byte) (int, error)         { return b.r.Read(p) }
func (b *persistedBody) WriteTo(w io.Writer) (int64, error) { return b.r.WriteTo(w) }
func (b *persistedBody) Close() error                       { return nil }

// UnreadBytes hands the body over without reading it.
func (b *persistedBody) UnreadBytes() []byte { return b.sent }

// OperationKind returns the kind of the request the body was made from.
func (b *persistedBody) OperationKind() (operation.Kind, bool) { return b.kind.get(), true }

// SetOperationKind does nothing: the kind is known.
func (b *persistedBody) SetOperationKind(operation.Kind) {}

// again is the request's GetBody: the same bytes, from the start.
func (b *persistedBody) again() (io.ReadCloser, error) {
	n := &persistedBody{sent: b.sent, kind: b.kind}
	n.r.Reset(b.sent)
	return n, nil
}

// getRequest returns req, a query, as a GET with h's extension, and d's
// operationName and variables, in its URL's query string, or nil if the
// URL would be longer than maxURL or d has extensions of its own. The
// variables go as they are in the body, escaped for the URL.
func getRequest(req *http.Request, d apqRequest, h *queryHash, maxURL int) *http.Request {
	if d.ext != [2]int{} {
		return nil
	}
	var q strings.Builder
	if req.URL.RawQuery != "" {
		q.WriteString(req.URL.RawQuery)
		q.WriteByte('&')
	}
	if d.name != nil && string(d.name) != "null" {
		var name string
		if json.Unmarshal(d.name, &name) != nil {
			return nil
		}
		q.WriteString("operationName=" + url.QueryEscape(name) + "&")
	}
	if d.vars != nil && string(d.vars) != "null" {
		q.WriteString("variables=" + url.QueryEscape(string(d.vars)) + "&")
	}
	q.WriteString("extensions=" + h.getExtensions)
	u := *req.URL
	u.RawQuery, u.ForceQuery = q.String(), false
	if len(u.Scheme)+len("://")+len(u.Host)+len(u.EscapedPath())+len("?")+len(u.RawQuery) > maxURL {
		return nil
	}
	out := new(http.Request)
	*out = *req
	out.Method, out.URL = http.MethodGet, &u
	setBody(out, nil)
	out.Header = req.Header.Clone()
	delete(out.Header, "Content-Type") // no body
	return out
}
