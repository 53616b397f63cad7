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
	"net/http"
	"slices"
	"strings"
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
// The parts but the body are gathered in a buffer on the stack and the
// body is hashed apart, so that the key allocates only the URL's string
// for a request of ordinary size.
func Of(req *http.Request, body []byte) Key {
	var stack [1024]byte
	b := stack[:0]
	b = appendPart(b, req.Method)
	b = appendPart(b, req.URL.String())
	b = appendPart(b, req.Host)
	bodySum := sha256.Sum256(body)
	b = append(b, bodySum[:]...)
	var buf [24]string // enough for most requests' headers, on the stack
	names := buf[:0]
	for name := range req.Header {
		if !PerCall(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b = binary.BigEndian.AppendUint64(b, uint64(len(names)))
	for _, name := range names {
		values := req.Header[name]
		b = appendPart(b, name)
		b = binary.BigEndian.AppendUint64(b, uint64(len(values)))
		for _, v := range values {
			b = appendPart(b, v)
		}
	}
	return sha256.Sum256(b)
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
