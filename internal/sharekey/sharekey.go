// Package sharekey is the one rule for which source schema requests may
// share an answer: two calls share only if their keys are equal. Dedupe
// (package middleware) keys its in-flight calls by it, and anything else
// that hands one caller's answer to another must key by it too, so that
// two users never share an answer.
//
// A key covers what the source schema would receive: method, URL, Host,
// body, and every header but those that are new for every call and say
// nothing about who asks (PerCall). Where middleware between the keying
// stage and the wire adds such a header (the request path's
// SchemaOptions.AttemptMiddleware: middleware.Token), a Probe keys the
// request as that middleware would send it. The package lives under
// internal/ so that every package of the module can use it and no user
// depends on it.
package sharekey

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Key identifies requests that may share an answer: a SHA-256 over their
// parts.
type Key [sha256.Size]byte

// perCall lists, in canonical form, the request headers left out of a key
// (see PerCall for why).
var perCall = [...]string{
	"Traceparent", // W3C Trace Context: the calling span's id, new per call
	"Tracestate",  // W3C Trace Context: vendor data of that span
	"B3",          // Zipkin B3 single header: trace and span ids
	"X-B3-Traceid",
	"X-B3-Spanid",
	"X-B3-Parentspanid",
	"X-B3-Sampled",
	"X-B3-Flags",
	"X-Request-Id", // a correlation id, new per gateway request
}

// PerCall reports whether header name, in any case, is one that a key
// leaves out: the trace context (Traceparent, Tracestate, B3,
// X-B3-Traceid, X-B3-Spanid, X-B3-Parentspanid, X-B3-Sampled, X-B3-Flags)
// and X-Request-Id. Each is new for every call and says nothing about who
// asks: with them in the key, no two calls would ever share (a tracing
// middleware writes a new span into each). Baggage stays in, since it may
// carry a user's identity. A name put in the map in another case is sent
// as it is, so it is matched without case.
func PerCall(name string) bool {
	for _, n := range perCall {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// Of returns the key of req as it is, with body its whole body (nil:
// none): its method, URL, Host, body and every header but the PerCall
// ones, names and values in order, by name in sorted order. Each part is
// length-prefixed, so that no two different lists of parts hash alike.
//
// The URL is keyed by its fields (keyURL), not by its String, and the
// parts are gathered in a pooled scratch and hashed by a pooled digest:
// the key costs a call no allocation (dedupe keys every query it sees).
func Of(req *http.Request, body []byte) Key {
	return of(req, body, forDedupe, nil)
}

// The purposes a key is taken for, hashed first, so that keys taken for
// different purposes never meet.
const (
	forDedupe = iota + 1
	forCache
	forShared
)

// of is Of for purpose: forDedupe keys every header but the PerCall ones;
// forCache leaves out the cache directives too (Directive); forShared keys
// only the headers names lists (canonical, sorted).
func of(req *http.Request, body []byte, purpose byte, names []string) Key {
	s := scratches.Get().(*scratch)
	s.h.Reset()
	b := append(s.buf[:0], purpose)
	b = appendPart(b, req.Method)
	b = appendURL(b, req.URL)
	b = appendPart(b, req.Host)
	b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	s.h.Write(b)
	s.h.Write(body)
	b = b[:0]
	keyed := s.names[:0]
	if purpose == forShared {
		b, keyed = appendNamed(s, b, req.Header, names, keyed)
	} else {
		for name := range req.Header {
			if !PerCall(name) && (purpose != forCache || !Directive(name)) {
				keyed = append(keyed, name)
			}
		}
		slices.Sort(keyed)
		b = binary.BigEndian.AppendUint64(b, uint64(len(keyed)))
		for _, name := range keyed {
			b = appendValues(b, name, req.Header[name])
			if len(b) >= flushAt {
				s.h.Write(b)
				b = b[:0]
			}
		}
	}
	s.h.Write(b)
	var k Key
	copy(k[:], s.h.Sum(s.sum[:0]))
	clear(keyed) // the pool holds no header of a past request
	s.put(b, keyed)
	return k
}

// appendValues appends a header's name and its values, each
// length-prefixed.
func appendValues(b []byte, name string, values []string) []byte {
	b = appendPart(b, name)
	b = binary.BigEndian.AppendUint64(b, uint64(len(values)))
	for _, v := range values {
		b = appendPart(b, v)
	}
	return b
}

// appendNamed appends, for each of names (canonical), the name and the
// values h holds under it in any case: those of the canonical form first,
// then those of other forms in sorted order. keys is scratch space for
// those forms, returned for the pool.
func appendNamed(s *scratch, b []byte, h http.Header, names []string, keys []string) ([]byte, []string) {
	b = binary.BigEndian.AppendUint64(b, uint64(len(names)))
	for _, name := range names {
		keys = keys[:0]
		for k := range h {
			if k != name && strings.EqualFold(k, name) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		n := len(h[name])
		for _, k := range keys {
			n += len(h[k])
		}
		b = appendPart(b, name)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
		for _, v := range h[name] {
			b = appendPart(b, v)
		}
		for _, k := range keys {
			for _, v := range h[k] {
				b = appendPart(b, v)
			}
		}
		if len(b) >= flushAt {
			s.h.Write(b)
			b = b[:0]
		}
	}
	return b, keys
}

// ForCache returns the key of req, with body its whole body, in the
// response cache's identity scope: what Of keys, less the request's cache
// directives (Directive). Those tell the cache, not the source schema,
// what to do: a request that asks for a fresh answer (Cache-Control:
// no-cache) refreshes the entry that the others read.
func ForCache(req *http.Request, body []byte) Key {
	return of(req, body, forCache, nil)
}

// Shared returns the key of req, with body its whole body, in the response
// cache's shared scope: its method, URL, Host and body, and the values of
// the request headers names lists alone (canonical form, sorted, no
// duplicates: an answer's Vary and response_cache.vary), the names
// themselves included, so that entries keyed by different lists never
// meet.
func Shared(req *http.Request, body []byte, names []string) Key {
	return of(req, body, forShared, names)
}

// Directive reports whether header name, in any case, is a cache directive
// of a request: Cache-Control or Pragma (RFC 9111 5.2, 5.4).
func Directive(name string) bool {
	return strings.EqualFold(name, "Cache-Control") || strings.EqualFold(name, "Pragma")
}

// scratch is the memory Of keys a request in, pooled in scratches: a
// SHA-256 digest, a buffer of parts and the header names to sort. Owned
// by one call of Of at a time.
type scratch struct {
	h     hash.Hash // sha256.New
	buf   []byte
	names []string
	sum   [sha256.Size]byte // where h sums: a Key of Of's own would escape through hash.Hash
}

var scratches = sync.Pool{New: func() any {
	return &scratch{h: sha256.New(), buf: make([]byte, 0, 2*flushAt)}
}}

// flushAt is how many bytes of parts Of gathers before it hashes them:
// the buffer stays near this size whatever the headers' size.
const flushAt = 1024

// maxPooledNames bounds the names a pooled scratch keeps room for: a
// request with more headers does not make every later call hold them.
const maxPooledNames = 256

// put gives s back to the pool with b and names as its buffers, unless
// they grew past what is worth keeping (then the scratch is left to the
// garbage collector).
func (s *scratch) put(b []byte, names []string) {
	if cap(b) > 4*flushAt || cap(names) > maxPooledNames {
		return
	}
	s.buf, s.names = b, names
	scratches.Put(s)
}

// appendURL appends u's fields to b, each length-prefixed, and flags for
// the user info and the booleans. Equal fields make an equal String, so
// two URLs that would be sent apart never key alike; TestKeyURLFields
// fails if url.URL gains a field that this does not cover.
func appendURL(b []byte, u *url.URL) []byte {
	if u == nil {
		return append(b, 0)
	}
	b = append(b, 1, flag(u.ForceQuery), flag(u.OmitHost))
	b = appendPart(b, u.Scheme)
	b = appendPart(b, u.Opaque)
	if u.User == nil {
		b = append(b, 0)
	} else {
		pw, set := u.User.Password()
		b = append(b, 1, flag(set))
		b = appendPart(b, u.User.Username())
		b = appendPart(b, pw)
	}
	b = appendPart(b, u.Host)
	b = appendPart(b, u.Path)
	b = appendPart(b, u.RawPath)
	b = appendPart(b, u.RawQuery)
	b = appendPart(b, u.Fragment)
	return appendPart(b, u.RawFragment)
}

// flag is a boolean as a byte of a key.
func flag(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// appendPart appends s to b with its length in front.
func appendPart(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// DedupeOptions are what the request path gives package middleware's
// Dedupe beyond its public form.
type DedupeOptions struct {
	// Probe, if non-nil, keys each call on its request as the schema's
	// attempt middleware would send it (Probe.Key), and a call it cannot
	// key goes alone. Nil: on the request as Dedupe sees it (Of).
	Probe *Probe
	// Joined, if non-nil, is called each time a caller has joined a call,
	// with the number of callers now waiting on it (tests).
	Joined func(waiters int)
}

// Dedupe is package middleware's Dedupe with opts. Package middleware sets
// it when it is initialised: the deduper is middleware's, and an option
// on its public form would put an internal type in the public API.
var Dedupe func(opts DedupeOptions) func(http.RoundTripper) http.RoundTripper
