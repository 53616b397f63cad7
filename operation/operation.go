// Package operation classifies GraphQL-over-HTTP requests by the kind of
// operation they run: Of reads a JSON request body, either one request
// object ({"query": "...", "operationName": "..."}) or a batch of them, and
// tells whether it is a query, a mutation or a subscription, selecting the
// operation by operationName as a server does, or Unknown when that cannot
// be told for sure.
//
// Retry and deduplication (package middleware), the comparison recorder
// (package compare) and shadow mode (package shadow) use it to decide what
// is safe to send twice. It is a leaf package: it imports only the
// standard library, so that any package can classify an operation without
// depending on the others.
package operation

import "encoding/json"

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
// request, asks a source schema to run.
//
// body is either one request object ({"query": "...", "operationName":
// "..."}) or a batch, a JSON array of them; a batch is a Query only if every
// entry is. The document is read just far enough to find its operation
// definitions: the one named by operationName, or the only one if
// operationName is absent, null or empty. A shorthand selection set
// ("{ a }") is a query.
//
// Unknown is returned whenever the answer is not certain: invalid JSON or
// GraphQL, a persisted-query request without "query", a "query" or
// "operationName" member given twice (servers disagree on which one wins),
// several operations and no operationName, a name that matches no operation
// or more than one, an empty batch.
func Of(body []byte) Kind {
	// Once the body is known to be valid JSON, the walk over it (json.go)
	// can skip values without checking them, at a fraction of
	// encoding/json's cost for the variables.
	if !json.Valid(body) {
		return Unknown
	}
	i := skipSpace(body, 0)
	if body[i] != '[' {
		return requestKind(body[i:])
	}
	n := 0
	all := elements(body[i:], func(entry []byte) bool {
		n++
		return requestKind(entry) == Query
	})
	if !all || n == 0 {
		return Unknown
	}
	return Query
}

// requestKind returns the kind of one request object, valid JSON.
func requestKind(obj []byte) Kind {
	var query, name string
	var haveQuery, haveName bool
	// The member names match exactly, unlike encoding/json's struct
	// decoding, which would also take "Query" for "query"; and a member
	// given twice makes the answer Unknown, since servers disagree on which
	// one wins.
	ok := members(obj, func(key, value []byte) bool {
		switch {
		case memberIs(key, "query"):
			var q *string
			if haveQuery || json.Unmarshal(value, &q) != nil || q == nil {
				return false
			}
			query, haveQuery = *q, true
		case memberIs(key, "operationName"):
			var n *string
			if haveName || json.Unmarshal(value, &n) != nil {
				return false
			}
			if n != nil {
				name = *n
			}
			haveName = true
		}
		return true // variables, extensions, persisted-query ids
	})
	if !ok || !haveQuery {
		return Unknown
	}
	ops, ok := scanOperations(query)
	if !ok {
		return Unknown
	}
	return selectOperation(ops, name)
}

// definition is an operation definition found in a document.
type definition struct {
	kind Kind
	name string // empty if anonymous
}

// selectOperation returns the kind of the operation that a server runs for
// name, as the GraphQL spec's GetOperation does, or Unknown if it is
// ambiguous or missing.
func selectOperation(ops []definition, name string) Kind {
	if name == "" {
		if len(ops) == 1 {
			return ops[0].kind
		}
		return Unknown
	}
	kind, found := Unknown, 0
	for _, op := range ops {
		if op.name == name {
			kind = op.kind
			found++
		}
	}
	if found != 1 {
		return Unknown
	}
	return kind
}

// scanOperations lists the operation definitions of an executable GraphQL
// document. It follows the lexical grammar (ignored tokens, strings, block
// strings, comments) and the shape of each top-level definition, but does
// not look inside selection sets beyond balancing brackets. Anything that
// is not an operation or fragment definition makes it fail.
func scanOperations(doc string) ([]definition, bool) {
	s := scanner{src: doc}
	var ops []definition
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
		switch s.name() {
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
		op.name = s.name()
		if !s.skipToSelectionSet() {
			return nil, false
		}
		ops = append(ops, op)
	}
}

// scanner reads a GraphQL document byte by byte; every token that matters
// for finding definitions is ASCII.
type scanner struct {
	src string
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
		case len(s.src)-s.pos >= 3 && s.src[s.pos:s.pos+3] == "\uFEFF":
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

// name reads a Name token (/[_A-Za-z][_0-9A-Za-z]*/) and returns it, or ""
// if none starts here.
func (s *scanner) name() string {
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
			if s.name() == "" {
				return false
			}
		}
	}
}

// skipGroup skips a bracketed group that starts at the current byte,
// including nested groups, strings and comments, and checks that brackets
// match.
func (s *scanner) skipGroup() bool {
	var open []byte
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
	if len(s.src)-s.pos >= 3 && s.src[s.pos:s.pos+3] == `"""` {
		s.pos += 3
		for !s.eof() {
			rest := s.src[s.pos:]
			switch {
			case len(rest) >= 4 && rest[:4] == `\"""`: // the one escape of a block string
				s.pos += 4
			case len(rest) >= 3 && rest[:3] == `"""`:
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
