// Package operation classifies GraphQL-over-HTTP requests by the kind of
// operation they run. Classify is the rule for a whole request: its method,
// the query string of its URL and its body (at most MaxBodyBytes), a GET
// with ?query= as well as a POST of JSON. It is built on two readings: Of
// reads a JSON request body, either one request object ({"query": "...",
// "operationName": "..."}) or a batch of them, and tells whether it is a
// query, a mutation or a subscription, selecting the operation by
// operationName as a server does, or Unknown when that cannot be told for
// sure, for instance because servers that read the members differently
// would run different operations; OfParams does the same for the URL
// parameters of a GET request.
//
// Retry, hedging and deduplication (package middleware) and the canary's
// re-send on legacy (package transport) decide by Classify what is safe to
// send twice or to share; the comparison recorder (package compare) and
// shadow mode (package shadow) use Of and OfParams. It is a leaf package:
// it imports only the standard library and internal/jsonscan (its JSON
// walk, a leaf too), so that any package can classify an operation
// without depending on the others.
package operation

import (
	"bytes"
	"encoding/json"

	"github.com/fusiongo/transport/internal/jsonscan"
)

// Kind is the kind of GraphQL operation that a source schema request runs.
// The zero value is Unknown, which callers treat as unsafe to repeat or
// share.
type Kind int

// The kinds of operation. Only Query is retried or shared.
const (
	Unknown Kind = iota
	Query
	Mutation
	Subscription
)

// String returns the GraphQL keyword of k, or "unknown".
func (k Kind) String() string {
	switch k {
	case Query:
		return "query"
	case Mutation:
		return "mutation"
	case Subscription:
		return "subscription"
	}
	return "unknown"
}

// Of returns the kind of operation that body, a GraphQL-over-HTTP JSON
// request, asks a source schema to run: Query only if every server that
// reads it as described here runs a query.
//
// body is either one request object ({"query": "...", "operationName":
// "..."}) or a batch, a JSON array of them; a batch is a Query if every
// entry is, and Unknown otherwise. The document is read just far enough to
// find its operation definitions: the one named by operationName, or the
// only one if operationName is absent, null or empty. A shorthand selection
// set ("{ a }") is a query.
//
// Servers differ in the members they read. A Go server decodes the body
// with encoding/json, which matches a member name to "query" or
// "operationName" without case once unescaped ("Query", "QUERY",
// "\u0051uery", "operationname"), lets the last match win and skips a
// null; encoding/json/v2, when it matches without case, also ignores '_'
// and '-'; a JavaScript server matches names exactly and keeps the last;
// other parsers keep the first. So Of takes every member whose name
// matches "query" in any of these ways as a document, and every member
// whose name matches "operationName" as a name (null or "" meaning none),
// adds none to the names unless a member is named exactly "operationName",
// and selects an operation for every document with every name. It returns
// a kind only if every selection is an operation of that kind.
//
// Unknown is returned whenever the answer is not certain: invalid JSON or
// GraphQL; no member named exactly "query" (a persisted-query request, or
// a document that only a case-insensitive reading finds); a member read as
// "query" that is not a string, null included, or one read as
// "operationName" that is neither a string nor null; more than 8 members
// read as either; selections of different kinds, or a selection that
// fails (several operations and no name, a name that matches no operation
// or more than one); an empty batch.
func Of(body []byte) Kind {
	// Once the body is known to be valid JSON, the walk over it (json.go)
	// can skip values without checking them, at a fraction of
	// encoding/json's cost for the variables.
	if !json.Valid(body) {
		return Unknown
	}
	i := jsonscan.SkipSpace(body, 0)
	if body[i] != '[' {
		return requestKind(body[i:])
	}
	n := 0
	all := jsonscan.Elements(body[i:], func(entry []byte) bool {
		n++
		return requestKind(entry) == Query
	})
	if !all || n == 0 {
		return Unknown
	}
	return Query
}

// maxCandidates bounds the members of one request object that are read as
// "query", and those read as "operationName": past it, the combinations
// are not tried and the answer is Unknown.
const maxCandidates = 8

// docBufSize is how much of an escaped document is unescaped on the
// stack; a longer one goes to the heap.
const docBufSize = 1024

// requestKind returns the kind of one request object, valid JSON, as Of
// documents it.
func requestKind(obj []byte) Kind {
	var queries, names [maxCandidates][]byte // member values as in obj
	var nq, nn int
	var exactQuery, exactName bool
	ok := jsonscan.Members(obj, func(key, value []byte) bool {
		role, exact := memberRole(key)
		switch role {
		case roleQuery:
			if value[0] != '"' || nq == maxCandidates {
				return false
			}
			queries[nq] = value
			nq++
			exactQuery = exactQuery || exact
		case roleName:
			if value[0] != '"' && value[0] != 'n' || nn == maxCandidates { // a string or null
				return false
			}
			names[nn] = value
			nn++
			exactName = exactName || exact
		}
		return true // variables, extensions, persisted-query ids
	})
	if !ok || !exactQuery {
		return Unknown
	}
	var docBuf [docBufSize]byte
	var opsBuf [8]definition
	kind := Unknown
	for i, q := range queries[:nq] {
		if seen(queries[:i], q) {
			continue
		}
		doc := unquote(docBuf[:0], q)
		ops, ok := scanOperations(doc, opsBuf[:0])
		if !ok {
			return Unknown
		}
		// The names: each member's, and none if some reading finds none.
		for j := 0; j <= nn; j++ {
			var name []byte
			switch {
			case j < nn && seen(names[:j], names[j]):
				continue
			case j < nn && names[j][0] == '"':
				name = unquote(nil, names[j])
			case j < nn: // null: none
			case exactName:
				continue
			}
			k := selectOperation(doc, ops, name)
			if k == Unknown || kind != Unknown && k != kind {
				return Unknown
			}
			kind = k
		}
	}
	return kind
}

// seen reports whether v is among earlier.
func seen(earlier [][]byte, v []byte) bool {
	for _, e := range earlier {
		if bytes.Equal(e, v) {
			return true
		}
	}
	return false
}

// definition is an operation definition found in a document.
type definition struct {
	kind      Kind
	name, end int // where its name is in the document; empty if anonymous
}

// selectOperation returns the kind of the operation that a server runs for
// name, as the GraphQL spec's GetOperation does, or Unknown if it is
// ambiguous or missing.
func selectOperation(doc []byte, ops []definition, name []byte) Kind {
	if len(name) == 0 {
		if len(ops) == 1 {
			return ops[0].kind
		}
		return Unknown
	}
	kind, found := Unknown, 0
	for _, op := range ops {
		if bytes.Equal(doc[op.name:op.end], name) {
			kind = op.kind
			found++
		}
	}
	if found != 1 {
		return Unknown
	}
	return kind
}

// scanOperations appends the operation definitions of an executable
// GraphQL document to ops. It follows the lexical grammar (ignored tokens,
// strings, block strings, comments) and the shape of each top-level
// definition, but does not look inside selection sets beyond balancing
// brackets. Anything that is not an operation or fragment definition makes
// it fail.
func scanOperations(doc []byte, ops []definition) ([]definition, bool) {
	s := scanner{src: doc}
	for {
		s.skipIgnored()
		if s.eof() {
			return ops, true
		}
		if s.peek() == '{' { // shorthand query
			if !s.skipGroup() {
				return nil, false
			}
			ops = append(ops, definition{kind: Query})
			continue
		}
		var op definition
		switch string(s.name()) {
		case "query":
			op.kind = Query
		case "mutation":
			op.kind = Mutation
		case "subscription":
			op.kind = Subscription
		case "fragment":
			if !s.skipToSelectionSet() {
				return nil, false
			}
			continue
		default: // type system definitions or no valid token
			return nil, false
		}
		s.skipIgnored()
		op.name = s.pos
		s.name()
		op.end = s.pos
		if !s.skipToSelectionSet() {
			return nil, false
		}
		ops = append(ops, op)
	}
}

// scanner reads a GraphQL document byte by byte; every token that matters
// for finding definitions is ASCII.
type scanner struct {
	src []byte
	pos int
}

func (s *scanner) eof() bool  { return s.pos >= len(s.src) }
func (s *scanner) peek() byte { return s.src[s.pos] }

// skipIgnored skips white space, line terminators, commas, comments and the
// byte order mark (GraphQL spec, "Ignored Tokens").
func (s *scanner) skipIgnored() {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			s.pos++
		case c == '#':
			s.skipComment()
		case len(s.src)-s.pos >= 3 && string(s.src[s.pos:s.pos+3]) == "\uFEFF":
			s.pos += 3
		default:
			return
		}
	}
}

// skipComment skips from '#' to the end of the line.
func (s *scanner) skipComment() {
	for !s.eof() && s.peek() != '\n' && s.peek() != '\r' {
		s.pos++
	}
}

// name reads a Name token (/[_A-Za-z][_0-9A-Za-z]*/) and returns it, or
// nothing if none starts here.
func (s *scanner) name() []byte {
	start := s.pos
	for !s.eof() {
		c := s.peek()
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || s.pos > start && '0' <= c && c <= '9' {
			s.pos++
			continue
		}
		break
	}
	return s.src[start:s.pos]
}

// skipToSelectionSet skips the rest of a definition's head (names, "on",
// directives, variable definitions and arguments in parentheses) and then
// its selection set.
func (s *scanner) skipToSelectionSet() bool {
	for {
		s.skipIgnored()
		if s.eof() {
			return false
		}
		switch c := s.peek(); c {
		case '{':
			return s.skipGroup()
		case '(':
			if !s.skipGroup() {
				return false
			}
		case '@':
			s.pos++
		default:
			if len(s.name()) == 0 {
				return false
			}
		}
	}
}

// skipGroup skips a bracketed group that starts at the current byte,
// including nested groups, strings and comments, and checks that brackets
// match.
func (s *scanner) skipGroup() bool {
	var stack [64]byte // deeper nesting goes to the heap
	open := stack[:0]
	for !s.eof() {
		switch c := s.peek(); c {
		case '{', '(', '[':
			open = append(open, c)
			s.pos++
		case '}', ')', ']':
			if len(open) == 0 || open[len(open)-1] != opener(c) {
				return false
			}
			open = open[:len(open)-1]
			s.pos++
			if len(open) == 0 {
				return true
			}
		case '"':
			if !s.skipString() {
				return false
			}
		case '#':
			s.skipComment()
		default:
			s.pos++
		}
	}
	return false
}

// opener returns the opening bracket of closing bracket c.
func opener(c byte) byte {
	switch c {
	case '}':
		return '{'
	case ')':
		return '('
	}
	return '['
}

// skipString skips a string value or block string that starts at the
// current '"'.
func (s *scanner) skipString() bool {
	if len(s.src)-s.pos >= 3 && string(s.src[s.pos:s.pos+3]) == `"""` {
		s.pos += 3
		for !s.eof() {
			rest := s.src[s.pos:]
			switch {
			case len(rest) >= 4 && string(rest[:4]) == `\"""`: // the one escape of a block string
				s.pos += 4
			case len(rest) >= 3 && string(rest[:3]) == `"""`:
				s.pos += 3
				return true
			default:
				s.pos++
			}
		}
		return false
	}
	s.pos++
	for !s.eof() {
		switch s.peek() {
		case '"':
			s.pos++
			return true
		case '\\':
			s.pos += 2
		case '\n', '\r': // a string value cannot span lines
			return false
		default:
			s.pos++
		}
	}
	return false
}
