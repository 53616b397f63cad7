package middleware

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fusiongo/transport/internal/respcache"
	"github.com/fusiongo/transport/internal/sharekey"
)

// maxEntityAnswer bounds the body of an _entities answer that the stage
// reads whole to take apart; a longer one is passed on as it is.
const maxEntityAnswer = 32 << 20

// entityCall is one _entities query in the cache stage: its request taken
// apart, each representation's key body, and what the lookup found.
type entityCall struct {
	s      *cacher
	req    *http.Request // the caller's
	out    *http.Request // the request as the stage got it (classify's), body c.body
	body   []byte
	er     *respcache.EntityRequest
	bodies [][]byte // each representation's key body (EntityRequest.EntityBody)
	seq    respcache.Seq
	whole  respcache.Key // the whole request's identity key (ForCache), for an answer that is not entity-shaped
	// scratch is the call's pooled memory, which holds ec itself; nil for
	// a background refresh, which answers no caller.
	scratch *entityScratch
}

// entities answers an _entities query entity by entity: the
// representations whose entries are fresh are taken out of the request,
// one request with the others goes to the source schema, and the caller
// gets every entity in the order it asked, the fetched answer's errors
// renumbered to its indexes. If every representation hits, nothing is
// sent; if none does, the source schema's answer reaches the caller as it
// is. ok is false if a representation cannot be keyed: then the call is
// the whole-answer path's.
func (s *cacher) entities(req, out *http.Request, body []byte, er *respcache.EntityRequest, noCache bool) (resp *http.Response, err error, ok bool) {
	ctx := req.Context()
	n := len(er.Reps)
	sc := entityScratches.Get().(*entityScratch)
	defer sc.put()
	ec := &sc.ec
	*ec = entityCall{s: s, req: req, out: out, body: body, er: er, scratch: sc}
	if ec.bodies, ok = sc.entityBodies(er); !ok {
		return nil, nil, false
	}
	varies := s.cache.Varies()
	per := 1 + len(varies)
	// The last key is the whole request's (ForCache): a schema whose
	// answers are not entity-shaped has them cached whole, as any query's.
	keys := grow(&sc.keys, n*per+1)
	keyed := true
	if s.probe == nil {
		sc.fillKeys(out, body, varies, keys)
	} else {
		keyed = s.probe.Each(out, body, func(sent *http.Request, _ []byte) { sc.fillKeys(sent, body, varies, keys) })
	}
	if !keyed {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Bypass, Reason: "unkeyed"})
		resp, err = s.next.RoundTrip(out)
		return resp, err, true
	}
	found := grow(&sc.found, len(keys))
	lookFor := keys
	if noCache {
		lookFor = nil
	}
	ec.seq = s.cache.Lookup(ctx, lookFor, found[:len(lookFor)])
	now := s.cache.Now()
	if len(lookFor) > 0 {
		if e := found[n*per]; e != nil && e.Fresh(now) {
			closeBody(out)
			s.cache.Event(ctx, respcache.Event{Kind: respcache.Hit, Reason: "whole"})
			return hit(e, req, now), nil, true
		}
	}
	ec.whole = keys[n*per]
	got, missing, stale := sortFound(grow(&sc.got, n), found, per, now)
	if len(missing) == 0 {
		closeBody(out)
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Hit, Reason: "entities"})
		resp, err = ec.answer(got, nil, nil, now, nil)
		return resp, err, true
	}
	if all := staleWithin(got, stale, missing, now, whileRevalidate); all != nil {
		// RFC 5861, entity by entity: every representation the cache
		// lacks fresh has an entry within its stale-while-revalidate
		// window: answered at once, while one background request (per
		// key) refreshes those.
		ec.revalidate(missing, keys, per)
		closeBody(out)
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Stale, Reason: "stale-while-revalidate"})
		resp, err = ec.answer(all, nil, nil, now, nil)
		return resp, err, true
	}
	if noCache {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Bypass, Reason: "request-no-cache"})
	} else {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.Miss, Reason: "entities"})
	}
	resp, err = ec.fetch(got, stale, missing, keys, per, now)
	return resp, err, true
}

// entityKey returns the key of a representation: a SHA-256 over req, the
// key of the request as sent with no body (sharekey.ForCache, or
// sharekey.Shared in the scope's names), and body, the representation's
// key body (EntityRequest.EntityBody), written one after the other into
// buf (the call's scratch). The request's method, URL and headers are so
// hashed once per call, not once per representation; two keys meet only
// where both the request key and the key body do.
func entityKey(buf *[]byte, req sharekey.Key, body []byte) respcache.Key {
	b := append((*buf)[:0], req[:]...)
	b = append(b, body...)
	*buf = b
	return sha256.Sum256(b)
}

// sortFound sorts what a lookup found for len(got) representations, per
// keys each: the fresh entry of each (into got, nil where none), the
// representations without one (missing), and per representation an entry
// past its lifetime that the store still keeps (stale; nil if there is
// none at all).
func sortFound(got, found []*respcache.Entry, per int, now time.Time) (_ []*respcache.Entry, missing []int, stale []*respcache.Entry) {
	n := len(got)
	clear(got)
	for i := range n {
		for j := range per {
			e := found[i*per+j]
			if e == nil {
				continue
			}
			if e.Fresh(now) {
				got[i] = e
				break
			}
			if stale == nil {
				stale = make([]*respcache.Entry, n)
			}
			if stale[i] == nil {
				stale[i] = e
			}
		}
		if got[i] == nil {
			missing = append(missing, i)
		}
	}
	return got, missing, stale
}

// entityScratch is the memory of one _entities call in the stage, pooled:
// the call, its keys, what the lookup found, the fresh entries, the
// entities of the caller's answer, and the representations' key bodies.
// Owned by the call until it returns; nothing that outlives the call
// keeps any of it (a refresh copies what it needs, the store copies keys
// and stored bytes, an answer's body is its own).
type entityScratch struct {
	ec     entityCall
	keys   []respcache.Key
	found  []*respcache.Entry
	got    []*respcache.Entry
	all    []json.RawMessage
	bodies [][]byte
	bbuf   []byte // the key bodies, one after the other
	kbuf   []byte // entityKey's input
}

var entityScratches = sync.Pool{New: func() any { return new(entityScratch) }}

// maxScratch bounds what a pooled entityScratch keeps: a call with a
// longer list or larger bodies leaves its memory to the garbage collector.
const maxScratch = 1024

// put gives sc back to the pool, holding no entry, request or body.
func (sc *entityScratch) put() {
	if cap(sc.keys) > maxScratch || cap(sc.bbuf) > 64*maxScratch {
		return
	}
	sc.ec = entityCall{}
	clear(sc.found[:cap(sc.found)])
	clear(sc.got[:cap(sc.got)])
	clear(sc.all[:cap(sc.all)])
	clear(sc.bodies[:cap(sc.bodies)])
	entityScratches.Put(sc)
}

// entityBodies returns the key body of each representation of er
// (EntityRequest.EntityBody), in sc's memory; false if one cannot be
// made.
func (sc *entityScratch) entityBodies(er *respcache.EntityRequest) ([][]byte, bool) {
	n := len(er.Reps)
	bodies := grow(&sc.bodies, n)
	b := sc.bbuf[:0]
	var ends [16]int
	at := ends[:0]
	for i := range n {
		var ok bool
		if b, ok = er.AppendEntityBody(b, i); !ok {
			return nil, false
		}
		at = append(at, len(b))
	}
	sc.bbuf = b
	start := 0
	for i, end := range at {
		bodies[i] = b[start:end:end]
		start = end
	}
	return bodies, true
}

// fillKeys writes into keys the call's keys for sent, the request as it
// would be sent, and body, its whole body: per representation its
// identity key and its shared key in each of varies (1+len(varies) keys
// each, in order), and last the whole request's identity key.
func (sc *entityScratch) fillKeys(sent *http.Request, body []byte, varies []respcache.VaryList, keys []respcache.Key) {
	per := 1 + len(varies)
	bodies := sc.ec.bodies
	keys[len(bodies)*per] = sharekey.ForCache(sent, body)
	id := sharekey.ForCache(sent, nil)
	for i, b := range bodies {
		keys[i*per] = entityKey(&sc.kbuf, id, b)
	}
	for v, names := range varies {
		shared := sharekey.Shared(sent, nil, names)
		for i, b := range bodies {
			keys[i*per+1+v] = entityKey(&sc.kbuf, shared, b)
		}
	}
}

// grow returns *s with n elements, reusing its memory if it has room.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return *s
}

// eachSent calls f with the request as it would be sent: req itself, or,
// with a probe, the request that comes out of the attempt middleware;
// false if the probe could not tell.
func (s *cacher) eachSent(req *http.Request, body []byte, f func(sent *http.Request)) bool {
	if s.probe == nil {
		f(req)
		return true
	}
	return s.probe.Each(req, body, func(sent *http.Request, _ []byte) { f(sent) })
}

// fetch sends the representations at missing (all, or the ones the cache
// lacks), stores the entities of the answer that may be stored, and
// answers the caller: if the source schema fails the call and stale (nil:
// none) holds an entry within its stale-if-error window for each of
// missing, from the entries.
func (ec *entityCall) fetch(got, stale []*respcache.Entry, missing []int, keys []respcache.Key, per int, now time.Time) (*http.Response, error) {
	s := ec.s
	whole := len(missing) == len(got)
	resp, err := ec.send(missing)
	if stale != nil && schemaFailed(ec.req.Context(), resp, err) {
		if all := staleWithin(got, stale, missing, s.cache.Now(), ifError); all != nil {
			// RFC 5861 stale-if-error, entity by entity: every entity
			// the caller asked for has an entry that may answer.
			if resp != nil {
				drain(resp)
			}
			s.cache.Event(ec.req.Context(), respcache.Event{Kind: respcache.Stale, Reason: "stale-if-error"})
			return ec.answer(all, nil, nil, now, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEntityAnswer+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	plan := s.cache.Policy().Plan(resp)
	ans, parsed := respcache.ParseEntityAnswer(raw, len(missing))
	if !parsed || len(raw) > maxEntityAnswer || resp.StatusCode != http.StatusOK {
		if whole {
			// Not an entity answer: the caller gets it as it is, and it
			// is stored whole, as any query's answer.
			ec.storeWhole(resp, raw, plan, now)
			return withBody(resp, raw), nil
		}
		// The answer to the shorter list cannot be merged: the caller's
		// whole request goes, and its answer is the caller's.
		s.cache.Event(ec.req.Context(), respcache.Event{Kind: respcache.NotStored, Reason: "entities-shape"})
		full := ec.out.Clone(ec.out.Context())
		full.Body = io.NopCloser(bytes.NewReader(ec.body))
		full.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(ec.body)), nil }
		full.ContentLength = int64(len(ec.body))
		return s.next.RoundTrip(full)
	}
	ec.store(resp, plan, ans, missing, keys, per, now)
	if whole {
		return withBody(resp, raw), nil
	}
	return ec.answer(got, ans, missing, now, resp)
}

// send sends the representations at reps (all of ec's, or some) through
// the rest of the pipeline: ec.out itself if they are all, else a copy
// whose variables hold only those. Identical requests in flight share one
// answer, as misses do.
func (ec *entityCall) send(reps []int) (*http.Response, error) {
	send, sendBody := ec.out, ec.body
	if len(reps) < len(ec.er.Reps) {
		b, err := ec.er.Only(reps)
		if err != nil {
			return nil, err
		}
		sendBody = b
		send = ec.out.Clone(ec.out.Context())
		send.Body = io.NopCloser(bytes.NewReader(b))
		send.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		send.ContentLength = int64(len(b))
		send.Header.Del("Content-Length")
		closeBody(ec.out) // not sent: its bytes are ec.body
	}
	return ec.s.flights.join(sharekey.ForCache(send, sendBody), ec.req, send, ec.s.next)
}

// revalidate refreshes in the background the entities of the
// representations at missing (keyed by keys, per keys each), whose
// entries are stale within their stale-while-revalidate window: one
// request with those of them that no other refresh holds (by their
// identity keys, Cache.RefreshEach), whose entity answers are stored as a
// miss's are. As the whole-answer refresh (cacher.revalidate), it carries
// copies of the caller's request and body, and none of its context.
func (ec *entityCall) revalidate(missing []int, keys []respcache.Key, per int) {
	s := ec.s
	ids := make([]respcache.Key, len(missing))
	for j, i := range missing {
		ids[j] = keys[i*per]
	}
	body := bytes.Clone(ec.body)
	keys = slices.Clone(keys) // the call's scratch: reused once it returns
	out := ec.out.Clone(context.Background())
	out.Trailer = nil
	s.cache.RefreshEach(ids, func(ctx context.Context, claimed []int) {
		reason := "failed"
		defer func() { s.cache.Event(ctx, respcache.Event{Kind: respcache.Refreshed, Reason: reason}) }()
		er, ok := respcache.ParseValidEntityRequest(body)
		if !ok {
			return
		}
		r := out.WithContext(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
		rc := &entityCall{s: s, req: r, out: r, body: body, er: er, bodies: make([][]byte, len(er.Reps)), seq: s.cache.Lookup(ctx, nil, nil)}
		for i := range rc.bodies {
			if rc.bodies[i], ok = er.EntityBody(i); !ok {
				return
			}
		}
		reps := make([]int, len(claimed))
		for j, c := range claimed {
			reps[j] = missing[c]
		}
		resp, err := rc.send(reps)
		if err != nil {
			return
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEntityAnswer+1))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(raw) > maxEntityAnswer {
			return
		}
		ans, parsed := respcache.ParseEntityAnswer(raw, len(reps))
		if !parsed {
			s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: "entities-shape"})
			return
		}
		rc.store(resp, s.cache.Policy().Plan(resp), ans, reps, keys, per, s.cache.Now())
		reason = ""
	})
}

// whileRevalidate and ifError are an entry's two stale windows.
func whileRevalidate(e *respcache.Entry) time.Duration { return e.StaleWhileRevalidate }
func ifError(e *respcache.Entry) time.Duration         { return e.StaleIfError }

// staleWithin returns got with, at each of missing, its stale entry, if
// every one is within the stale window at now that window gives (past its
// lifetime by less); nil otherwise, and nil if stale is.
func staleWithin(got, stale []*respcache.Entry, missing []int, now time.Time, window func(*respcache.Entry) time.Duration) []*respcache.Entry {
	if stale == nil {
		return nil
	}
	for _, i := range missing {
		if e := stale[i]; e == nil || e.Age(now) >= e.Lifetime+window(e) {
			return nil
		}
	}
	all := make([]*respcache.Entry, len(got))
	copy(all, got)
	for _, i := range missing {
		all[i] = stale[i]
	}
	return all
}

// storeWhole stores raw, the whole answer resp to a request that was not
// answered entity by entity, under the request's whole key (its identity
// scope: a shared answer is kept for identical requests alone), by the
// rules of any query's answer.
func (ec *entityCall) storeWhole(resp *http.Response, raw []byte, plan respcache.Plan, now time.Time) {
	s, ctx := ec.s, ec.req.Context()
	if plan.Store && len(resp.Trailer) > 0 {
		plan = respcache.Plan{Reason: "trailers"}
	}
	if plan.Store && len(raw) > s.cache.Policy().MaxEntryBytes {
		plan = respcache.Plan{Reason: "too-large"}
	}
	tags, ok := respcache.CheckBody(raw)
	if plan.Store && !ok {
		plan = respcache.Plan{Reason: "errors"}
	}
	if !plan.Store {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: plan.Reason})
		return
	}
	e := &respcache.Entry{
		Status: resp.StatusCode, Header: storedHeader(resp.Header), Body: bytes.Clone(raw), Date: now,
		InitialAge: plan.InitialAge, Lifetime: plan.Lifetime,
		StaleWhileRevalidate: plan.StaleWhileRevalidate, StaleIfError: plan.StaleIfError,
		// In the identity scope only: the entity path looks the whole key
		// up in it alone.
		Tags: mergeTags(plan.Tags, tags),
	}
	s.cache.Put(ctx, ec.whole, e, e.Lifetime-e.InitialAge+max(e.StaleWhileRevalidate, e.StaleIfError), ec.seq)
}

// store stores each fetched entity that no error points into, under the
// key of its representation in the scope the answer's plan gives.
func (ec *entityCall) store(resp *http.Response, plan respcache.Plan, ans *respcache.EntityAnswer, missing []int, keys []respcache.Key, per int, now time.Time) {
	s := ec.s
	ctx := ec.req.Context()
	if plan.Store && len(resp.Trailer) > 0 {
		plan = respcache.Plan{Reason: "trailers"}
	}
	if !plan.Store {
		s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: plan.Reason})
		return
	}
	var shared []respcache.Key
	if plan.Shared {
		shared = make([]respcache.Key, len(ec.bodies))
		if !s.eachSent(ec.out, ec.body, func(sent *http.Request) {
			var buf []byte
			k := sharekey.Shared(sent, nil, plan.VaryNames)
			for i, b := range ec.bodies {
				shared[i] = entityKey(&buf, k, b)
			}
		}) {
			s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: "unkeyed"})
			return
		}
	}
	header := storedHeader(resp.Header)
	header.Del("Content-Length")
	tags := mergeTags(plan.Tags, ans.Tags)
	for j, i := range missing {
		if ans.Failed[j] {
			s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: "entity-error"})
			continue
		}
		if len(ans.Entities[j]) > s.cache.Policy().MaxEntryBytes {
			s.cache.Event(ctx, respcache.Event{Kind: respcache.NotStored, Reason: "too-large"})
			continue
		}
		e := &respcache.Entry{
			Status:               http.StatusOK,
			Header:               header,
			Body:                 bytes.Clone(ans.Entities[j]),
			Date:                 now,
			InitialAge:           plan.InitialAge,
			Lifetime:             plan.Lifetime,
			StaleWhileRevalidate: plan.StaleWhileRevalidate,
			StaleIfError:         plan.StaleIfError,
			Tags:                 tags,
			Shared:               plan.Shared,
			VaryNames:            plan.VaryNames,
		}
		k := keys[i*per]
		if plan.Shared {
			k = shared[i]
		}
		ttl := e.Lifetime - e.InitialAge + max(e.StaleWhileRevalidate, e.StaleIfError)
		s.cache.Put(ctx, k, e, ttl, ec.seq)
	}
}

// answer returns the caller's answer: every entity in its order, from got
// (the entries that hit) and from ans (the fetched answer, for the
// positions at; nil if nothing was sent). Its headers are the fetched
// answer's, or the first entry's, with the Age of the oldest entry used.
func (ec *entityCall) answer(got []*respcache.Entry, ans *respcache.EntityAnswer, at []int, now time.Time, fetched *http.Response) (*http.Response, error) {
	var all []json.RawMessage
	if ec.scratch != nil {
		all = grow(&ec.scratch.all, len(got))
	} else {
		all = make([]json.RawMessage, len(got))
	}
	var age time.Duration
	for i, e := range got {
		if e != nil {
			all[i] = e.Body
			age = max(age, e.Age(now))
		}
	}
	for j, i := range at {
		all[i] = ans.Entities[j]
	}
	if fetched == nil {
		// Every entity from the cache: a hit's response, with its
		// memory pooled and lent when the call borrows its answer.
		return mergedHit(got[0], all, age, ec.req)
	}
	body, err := respcache.MergeEntities(all, ans, at)
	if err != nil {
		return nil, err
	}
	h := fetched.Header.Clone()
	h.Del("Age")
	if age > 0 {
		h.Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        statusText(http.StatusOK),
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       ec.req,
	}, nil
}

// withBody returns resp with raw, its body read whole, as its body again.
func withBody(resp *http.Response, raw []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	return resp
}
