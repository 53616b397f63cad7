package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/respcache"
	"github.com/fusiongo/transport/internal/sharekey"
	"github.com/fusiongo/transport/operation"
)

// The response cache's stage lives here, unexported, for two things of
// this package's: classify, which every stage that reads a body shares,
// and the deduper, whose machinery collapses concurrent misses of one key
// into one request. The request path builds it through respcache.Stage.
func init() {
	respcache.Stage = func(c *respcache.Cache, probe *sharekey.Probe, joined func(int)) Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return &cacher{wrapped: wrap(next), cache: c, probe: probe, flights: newDedupe(nil, joined, maxSharedBody)(next).(*deduper)}
		}
	}
}

// cacher is the cache stage of one route: a hit is answered here; a miss
// goes on through the rest of the pipeline, once for all the callers of
// one key in flight, and its answer is stored if the policy allows.
type cacher struct {
	wrapped
	cache   *respcache.Cache // immutable; the schema's, shared by its routes
	probe   *sharekey.Probe  // immutable; nil: requests are keyed as they are
	flights *deduper         // immutable: collapses concurrent misses by identity key (join)
}

// maxKeys is how many keys a lookup asks for: the identity scope's and
// one per vary list the cache remembers.
const maxKeys = 1 + 4

// RoundTrip answers req from the cache, or sends it and stores the answer.
func (s *cacher) RoundTrip(req *http.Request) (*http.Response, error) {
	if respcache.Skipped(req.Context()) {
		return s.next.RoundTrip(req)
	}
	c, err := classify(req)
	if err != nil {
		return nil, err
	}
	if c.kind != operation.Query || len(c.req.Trailer) > 0 || gqlhttp.AsksUpgrade(c.req) {
		// Only a query's answer is stored; trailers are not in the key;
		// an upgrade hands its caller a connection.
		return s.next.RoundTrip(c.req)
	}
	ctx := req.Context()
	asked := respcache.ParseRequest(c.req.Header)
	if asked.NoStore {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Bypass, Reason: "request-no-store"})
		return s.next.RoundTrip(c.req)
	}
	if !s.cache.Shadow() {
		if er, isEntities := respcache.ParseValidEntityRequest(c.body); isEntities {
			if resp, err, ok := s.entities(req, c.req, c.body, er, asked.NoCache); ok {
				return resp, err
			}
		}
	}
	return s.cached(req, c, asked.NoCache)
}

// cached looks the call up and answers it: fresh, stale within
// stale-while-revalidate, or sent (once for all the callers of its key in
// flight) and then, if the schema fails it, stale within stale-if-error.
// noCache: the request asked for no lookup; its answer may be stored.
func (s *cacher) cached(req *http.Request, c classified, noCache bool) (*http.Response, error) {
	ctx := req.Context()
	sc := lookups.Get().(*lookup)
	defer sc.put()
	varies := s.cache.Varies()
	keys := sc.keys[:1+len(varies)]
	if !s.keysOf(c.req, c.body, varies, keys) {
		// The request as it would be sent is unknown (a probed attempt
		// middleware failed): it goes alone, uncached, as dedupe does.
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Bypass, Reason: "unkeyed"})
		return s.next.RoundTrip(c.req)
	}
	n := len(keys)
	if noCache {
		n = 0 // sent, and its answer may refresh the entry
	}
	found := sc.found[:n]
	seq := s.cache.Lookup(ctx, keys[:n], found)
	identity := keys[0]
	// stale is an entry past its lifetime that the store still keeps:
	// within its stale windows (the store keeps nothing past them).
	var stale *respcache.Entry
	if s.cache.Shadow() {
		return s.shadowed(req, c.req, c.body, found, identity, seq)
	}
	if n > 0 {
		now := s.cache.Now()
		for _, e := range found {
			switch {
			case e == nil:
			case e.Fresh(now):
				closeBody(c.req) // not sent
				s.cache.Event(ctx, respcache.Event{Kind: respcache.Hit})
				return hit(e, req, now), nil
			case stale == nil:
				stale = e
			}
		}
		if stale != nil && stale.Age(now) < stale.Lifetime+stale.StaleWhileRevalidate {
			// RFC 5861: answered at once, while one background request
			// (per key, whatever the number of callers) refreshes it.
			s.revalidate(identity, c.req, c.body)
			closeBody(c.req)
			s.cache.Event(ctx, respcache.Event{Kind: respcache.Stale, Reason: "stale-while-revalidate"})
			return hit(stale, req, now), nil
		}
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Miss})
	} else {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Bypass, Reason: "request-no-cache"})
	}
	m := &miss{s: s, req: c.req, body: c.body, identity: identity, seq: seq}
	resp, err := s.flights.join(identity, req, c.req, m)
	if stale != nil && schemaFailed(ctx, resp, err) {
		now := s.cache.Now()
		if stale.Age(now) < stale.Lifetime+stale.StaleIfError {
			// RFC 5861 stale-if-error: the schema failed the call (a
			// connection error, a timeout, a 5xx, the breaker, the rate
			// limit or the pending bound refusing it).
			if resp != nil {
				drain(resp)
			}
			s.cache.Event(ctx, respcache.Event{Kind: respcache.Stale, Reason: "stale-if-error"})
			return hit(stale, req, now), nil
		}
	}
	return resp, err
}

// shadowed sends a call of a cache in shadow mode: every call is sent, on
// its own (no miss collapses into another's), and gets its fresh answer,
// which is stored as it would be; if the lookup found a fresh entry, the
// fresh answer is compared with it once read whole.
func (s *cacher) shadowed(req, out *http.Request, body []byte, found []*respcache.Entry, identity respcache.Key, seq respcache.Seq) (*http.Response, error) {
	ctx := req.Context()
	now := s.cache.Now()
	var fresh *respcache.Entry
	for _, e := range found {
		if e != nil && e.Fresh(now) {
			fresh = e
			break
		}
	}
	if fresh != nil {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Hit, Reason: "shadow"})
	} else if len(found) > 0 {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Miss, Reason: "shadow"})
	}
	m := &miss{s: s, req: out, body: body, identity: identity, seq: seq, compare: fresh}
	return m.RoundTrip(out)
}

// schemaFailed reports whether a call's outcome is its source schema's
// failure: an error that is not the caller's own context ending, or a 5xx.
func schemaFailed(ctx context.Context, resp *http.Response, err error) bool {
	if err != nil {
		return ctx.Err() == nil
	}
	return resp.StatusCode >= 500
}

// revalidate refreshes the entry of identity key k in the background, with
// a copy of req and its body: one refresh per key at a time, through the
// rest of the pipeline (retry, hedge, breaker, rate limit, the pool's
// bounds), joined by the callers that miss meanwhile. The copy carries
// none of the caller's context: not its cancellation, and not its
// per-call state (bounds, lent memory), which the caller's call reuses
// once it returns; a middleware further in that reads a value of the
// caller's context finds none, and the refresh fails if it needs one
// (then the stale entry stays, until its window ends).
func (s *cacher) revalidate(k respcache.Key, req *http.Request, body []byte) {
	body = bytes.Clone(body)
	out := req.Clone(context.Background())
	out.Trailer = nil
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	s.cache.Refresh(k, func(ctx context.Context) {
		r := out.WithContext(ctx)
		// The sequence is the store's now: an invalidation from here on
		// keeps this answer out.
		seq := s.cache.Lookup(ctx, nil, nil)
		m := &miss{s: s, req: r, body: body, identity: k, seq: seq}
		resp, err := s.flights.join(k, r, r, m)
		reason := ""
		if err != nil || resp.StatusCode != http.StatusOK {
			reason = "failed"
		}
		if err == nil {
			// Read whole: the capture stores the answer at its end.
			io.Copy(io.Discard, io.LimitReader(resp.Body, int64(s.cache.Policy().MaxEntryBytes)+1))
			resp.Body.Close()
		}
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Refreshed, Reason: reason})
	})
}

// lookup is the memory of one call's lookup, pooled: its keys and what the
// store found under them (a slice handed to the Store interface escapes).
type lookup struct {
	keys  [maxKeys]respcache.Key
	found [maxKeys]*respcache.Entry
}

var lookups = sync.Pool{New: func() any { return new(lookup) }}

// put gives l back to the pool, holding no entry.
func (l *lookup) put() {
	clear(l.found[:])
	lookups.Put(l)
}

// keysOf writes into keys the identity key of req, with body its whole
// body, and its shared key for each of varies, in order; false if a probe
// could not tell how req would be sent.
func (s *cacher) keysOf(req *http.Request, body []byte, varies []respcache.VaryList, keys []respcache.Key) bool {
	if s.probe == nil {
		fillKeys(req, body, varies, keys)
		return true
	}
	return s.probe.Each(req, body, func(sent *http.Request, body []byte) { fillKeys(sent, body, varies, keys) })
}

// fillKeys writes the keys of keysOf for sent, the request as it would be
// sent.
func fillKeys(sent *http.Request, body []byte, varies []respcache.VaryList, keys []respcache.Key) {
	keys[0] = sharekey.ForCache(sent, body)
	for i, names := range varies {
		keys[1+i] = sharekey.Shared(sent, body, names)
	}
}

// sharedKey returns the shared-scope key of req keyed by names; false if a
// probe could not tell.
func (s *cacher) sharedKey(req *http.Request, body []byte, names []string) (k respcache.Key, ok bool) {
	if s.probe == nil {
		return sharekey.Shared(req, body, names), true
	}
	ok = s.probe.Each(req, body, func(sent *http.Request, body []byte) { k = sharekey.Shared(sent, body, names) })
	return k, ok
}

// miss sends one missed call on through the pipeline (as the send of the
// flight its callers share) and wraps a storable answer's body so that
// the answer is stored once read whole.
type miss struct {
	s        *cacher
	req      *http.Request // the call's request; its body bytes are body
	body     []byte
	identity respcache.Key
	seq      respcache.Seq    // the store's invalidation sequence at the lookup
	compare  *respcache.Entry // shadow mode: the fresh entry the lookup found, to compare the answer with; nil: none
}

func (m *miss) RoundTrip(out *http.Request) (*http.Response, error) {
	resp, err := m.s.next.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	plan := m.s.cache.Policy().Plan(resp)
	if plan.Store && len(resp.Trailer) > 0 {
		// A hit has no trailers to give: an answer that announces them
		// is not stored.
		plan = respcache.Plan{Reason: "trailers"}
	}
	if !plan.Store {
		m.s.cache.Event(out.Context(), respcache.Event{Kind: respcache.NotStored, Reason: plan.Reason})
		if m.compare == nil {
			return resp, nil
		}
	}
	resp.Body = &capture{rc: resp.Body, m: m, ctx: out.Context(), resp: resp, plan: plan, date: m.s.cache.Now(),
		max: max(m.s.cache.Policy().MaxEntryBytes, len(m.compare.BodyOrNil()))}
	return resp, nil
}

// capture is a storable answer's body as its reader reads it: it keeps a
// copy of the bytes (the transport's may be lent memory) and stores the
// answer when the last byte is read. A body closed before its end, or over
// the entry bound, is not stored.
type capture struct {
	rc   io.ReadCloser
	m    *miss
	ctx  context.Context
	resp *http.Response // its Header is read at the end, before the reader returns
	plan respcache.Plan
	date time.Time
	max  int

	// Owned by the reader (one goroutine at a time, as any body).
	buf  []byte
	over bool // past max: nothing is kept
	done bool // stored, or given up
}

func (b *capture) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if !b.done && !b.over {
		if len(b.buf)+n > b.max {
			b.over, b.buf = true, nil
			if b.plan.Store {
				b.m.s.cache.Event(b.ctx, respcache.Event{Kind: respcache.NotStored, Reason: "too-large"})
			}
			if b.m.compare != nil {
				// Longer than the entry and max_entry_bytes: it differs
				// in length at least, compared on what fits.
				b.m.s.cache.CompareShadow(b.ctx, b.m.compare, b.date, b.resp.StatusCode, nil)
			}
		} else {
			b.buf = append(b.buf, p[:n]...)
		}
	}
	if err == io.EOF && !b.done {
		b.done = true
		if !b.over {
			if b.m.compare != nil {
				b.m.s.cache.CompareShadow(b.ctx, b.m.compare, b.date, b.resp.StatusCode, b.buf)
			}
			if b.plan.Store {
				b.store()
			}
		}
	}
	return n, err
}

func (b *capture) Close() error {
	b.done = true
	return b.rc.Close()
}

// store stores the answer read whole.
func (b *capture) store() {
	cache := b.m.s.cache
	tags, ok := respcache.CheckBody(b.buf)
	if !ok {
		cache.Event(b.ctx, respcache.Event{Kind: respcache.NotStored, Reason: "errors"})
		return
	}
	e := &respcache.Entry{
		Status:               b.resp.StatusCode,
		Header:               storedHeader(b.resp.Header),
		Body:                 b.buf,
		Date:                 b.date,
		InitialAge:           b.plan.InitialAge,
		Lifetime:             b.plan.Lifetime,
		StaleWhileRevalidate: b.plan.StaleWhileRevalidate,
		StaleIfError:         b.plan.StaleIfError,
		Tags:                 mergeTags(b.plan.Tags, tags),
		Shared:               b.plan.Shared,
		VaryNames:            b.plan.VaryNames,
	}
	b.buf = nil
	k := b.m.identity
	if e.Shared {
		var ok bool
		if k, ok = b.m.s.sharedKey(b.m.req, b.m.body, e.VaryNames); !ok {
			cache.Event(b.ctx, respcache.Event{Kind: respcache.NotStored, Reason: "unkeyed"})
			return
		}
	}
	ttl := e.Lifetime - e.InitialAge + max(e.StaleWhileRevalidate, e.StaleIfError)
	cache.Put(b.ctx, k, e, ttl, b.m.seq)
}

// mergeTags returns a's tags and then b's, each once.
func mergeTags(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append([]string(nil), a...)
	for _, t := range b {
		seen := false
		for _, o := range out {
			if o == t {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, t)
		}
	}
	return out
}

// unstored are the response headers an entry leaves out: the hop-by-hop
// ones (RFC 9110 7.6.1), and Age, which a hit sets anew.
var unstored = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Age": true,
}

// storedHeader returns a deep copy of h without the unstored headers: the
// strings of a lent response are memory the transport reuses.
func storedHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if unstored[http.CanonicalHeaderKey(k)] {
			continue
		}
		c := make([]string, len(vs))
		for i, v := range vs {
			c[i] = string([]byte(v))
		}
		out[string([]byte(k))] = c
	}
	return out
}

// hit returns the caller's own response for e at now: the stored status,
// a copy of the headers with Age set, and a reader over the stored body.
// A call that borrows its answer (PostFunc) gets pooled memory, given back
// when the call returns it (backend.Borrow).
func hit(e *respcache.Entry, req *http.Request, now time.Time) *http.Response {
	h, b := hitResponseFor(req)
	h.fill(e.Status, e.Header, e.Body, e.Age(now), req, false)
	if b != nil {
		b.Keep(h)
	}
	return &h.resp
}

// mergedHit returns the caller's response for an _entities call answered
// from the cache entity by entity: first's status and headers, a body
// holding entities (respcache.AppendMergedEntities), its Content-Length,
// and Age age (the oldest entry's). Pooled and lent as hit's.
func mergedHit(first *respcache.Entry, entities []json.RawMessage, age time.Duration, req *http.Request) (*http.Response, error) {
	h, b := hitResponseFor(req)
	size := 32
	for _, e := range entities {
		size += len(e) + 1
	}
	if cap(h.own) < size {
		h.own = make([]byte, 0, size)
	}
	body, err := respcache.AppendMergedEntities(h.own[:0], entities, nil, nil)
	if err != nil {
		return nil, err
	}
	h.own = body
	h.fill(first.Status, first.Header, body, age, req, true)
	if b != nil {
		b.Keep(h)
	}
	return &h.resp, nil
}

// hitResponseFor returns the memory of a hit's response to req: pooled if
// the call borrows its answer (b, which must Keep it once filled), else
// new.
func hitResponseFor(req *http.Request) (*hitResponse, *backend.Borrow) {
	b := backend.BorrowOf(req.Context())
	if b != nil {
		return hitResponses.Get().(*hitResponse), b
	}
	return new(hitResponse), nil
}

// hitResponse is the memory of one hit's response, in one allocation (or
// none, pooled, when lent): the response, its body reader, and room for
// its header values.
type hitResponse struct {
	resp   http.Response
	body   hitBody
	header http.Header // reused when pooled
	values []string    // the header values' backing array; reused when pooled
	room   [8]string   // values' first backing array
	own    []byte      // a merged _entities answer's body (mergedHit); reused when pooled
}

var hitResponses = sync.Pool{New: func() any { return new(hitResponse) }}

// fill makes h the response to req with status, a copy of header with Age
// age (and, withLength, Content-Length), and body.
func (h *hitResponse) fill(status int, header http.Header, body []byte, age time.Duration, req *http.Request, withLength bool) {
	n := 2
	for _, vs := range header {
		n += len(vs)
	}
	if h.values == nil {
		h.values = h.room[:0]
	}
	values := h.values[:0]
	if cap(values) < n {
		values = make([]string, 0, n)
	}
	if h.header == nil {
		h.header = make(http.Header, len(header)+2)
	}
	for k, vs := range header {
		at := len(values)
		values = append(values, vs...)
		h.header[k] = values[at:len(values):len(values)]
	}
	values = append(values, strconv.FormatInt(int64(age/time.Second), 10))
	h.header["Age"] = values[len(values)-1:]
	if withLength {
		values = append(values, strconv.Itoa(len(body)))
		h.header["Content-Length"] = values[len(values)-1:]
	}
	h.values = values
	h.body.Reset(body)
	h.resp = http.Response{
		Status:        statusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h.header,
		Body:          &h.body,
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Return takes a lent hit's memory back (backend.Lent): the call has let
// go of the response.
func (h *hitResponse) Return() {
	if cap(h.values) > 64 || len(h.header) > 64 {
		return // grown past what is worth keeping: left to the garbage collector
	}
	clear(h.header)
	clear(h.values[:cap(h.values)])
	h.body.Reset(nil)
	if cap(h.own) > maxOwn {
		h.own = nil
	}
	h.resp = http.Response{}
	hitResponses.Put(h)
}

// maxOwn bounds the merged answer's memory a pooled hitResponse keeps.
const maxOwn = 64 << 10

// hitBody is a hit's body: a reader over the entry's bytes, which no
// one writes.
type hitBody struct{ bytes.Reader }

func (*hitBody) Close() error { return nil }

// statusText is the Status of a response with code.
func statusText(code int) string {
	if code == http.StatusOK {
		return "200 OK"
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
