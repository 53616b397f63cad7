package operation

import (
	"encoding/json"

	"github.com/fusiongo/transport/internal/jsonscan"
)

// MaxBodyBytes is the longest request body that Classify reads: a longer
// one is Unknown. A caller that reads a body to classify it reads at most
// MaxBodyBytes+1 bytes and sends a longer body as it is, once: buffering
// it to send it again would cost more than a retry saves.
const MaxBodyBytes = 1 << 20

// Classify returns the kind of operation that a GraphQL-over-HTTP request
// asks a source schema to run, from its method, the query string of its URL
// (URL.RawQuery) and its body (nil or empty: none). It is the one rule by
// which the transport decides what is safe to send twice or to share:
// retry, hedging and deduplication (package middleware) and the canary's
// re-send on legacy.
//
// Every document the request carries counts, wherever a server may read
// it from, and the answer is Query only if every one of them, with every
// operation name, selects a query:
//
//   - a request without a body (a GET with ?query=...&operationName=...)
//     is read from its parameters, as OfParams reads them: a GET that holds
//     a mutation is a Mutation, and is never sent twice;
//   - a request with a body is read from it, as Of reads it: one request
//     object or a batch, as JSON, whatever its Content-Type declares
//     (application/json, application/graphql-response+json in Accept, ...).
//     A body that is not JSON (a form, an application/graphql document) is
//     Unknown;
//   - a request with a body whose URL also has parameters named "query" or
//     "operationName" (in any case) is read as one request object with the
//     members of both, since some servers read the URL's before the body's:
//     with a batch, or a body that is no object, it is Unknown;
//   - a GET or HEAD that carries no document at all (no such parameter, no
//     body) is a Query: it runs a persisted query or none, and GraphQL over
//     HTTP runs nothing but queries on GET. Any other method without a
//     document is Unknown.
//
// A body over MaxBodyBytes, or a query string that url.ParseQuery rejects
// (servers split it differently), is Unknown. The method is compared as
// net/http spells it; "" is GET.
func Classify(method, rawQuery string, body []byte) Kind {
	if len(body) > MaxBodyBytes {
		return Unknown
	}
	p, ok := readParams(rawQuery)
	switch {
	case !ok:
		return Unknown
	case len(body) > 0 && len(p.members) == 0:
		return Of(body)
	case len(body) > 0:
		return mergedKind(p, body)
	case p.document:
		return requestKind(p.object())
	case method == "" || method == "GET" || method == "HEAD":
		return Query
	}
	return Unknown
}

// mergedKind is the kind of a request object with the members of p and
// those of body, which must be one JSON object.
func mergedKind(p params, body []byte) Kind {
	if !json.Valid(body) {
		return Unknown
	}
	start := jsonscan.SkipSpace(body, 0)
	if body[start] != '{' {
		return Unknown
	}
	end := jsonscan.SkipValue(body, start) // just past the closing brace
	obj := make([]byte, 0, len(p.members)+len(body)+1)
	obj = append(append(obj, '{'), p.members...)
	// The body's members, without its braces; a comma between, unless
	// the body is {}.
	if inner := body[jsonscan.SkipSpace(body, start+1) : end-1]; len(inner) > 0 {
		obj = append(append(obj, ','), inner...)
	}
	return requestKind(append(obj, '}'))
}
